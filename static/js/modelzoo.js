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
  const layout = {
    barmode: "group",
    margin: { l: 80, r: 10, t: 30, b: 90 },
    title: { text: "fwd+bwd time per batch, per layer and resource", font: { size: 13 } },
    xaxis: { title: { text: "layer (execution order)" }, automargin: true },
    yaxis: { title: { text: "time per batch (ms, log)" }, type: "log", automargin: true },
    legend: { orientation: "h", y: -0.35 },
  };
  Plotly.newPlot(node, traces, layout, { responsive: true, displaylogo: false });
})();
