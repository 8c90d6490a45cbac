// Grouped bar chart: fwd+bwd time per layer (x) for each resource (one bar colour each).
(function () {
  "use strict";
  const node = document.getElementById("layer-chart");
  const source = document.getElementById("layer-chart-data");
  if (!node || !source || !window.Plotly) return;
  const data = JSON.parse(source.textContent);
  const traces = data.resources.map((resource, j) => ({
    type: "bar",
    name: resource,
    x: data.layers,
    y: data.seconds.map((row) => (row[j] == null ? null : row[j] * 1000)),
    hovertemplate: "%{x} on " + resource + ": %{y:.4f} ms<extra></extra>",
  }));
  const charts = window.HeterPSCharts;
  const all = traces.flatMap((t) => t.y);
  const layout = {
    barmode: "group",
    margin: { l: 80, r: 10, t: 10, b: 60 },
    xaxis: { title: { text: "layer (execution order)" }, automargin: true },
    yaxis: Object.assign({ title: { text: "fwd+bwd time per batch (ms, log scale)" },
                           type: "log", automargin: true }, charts.logTicks(all)),
    legend: charts.legendAbove,
  };
  Plotly.newPlot(node, traces, layout, { responsive: true, displaylogo: false });
})();
