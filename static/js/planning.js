// Cost-vs-throughput scatter: one marker per scheduler's plan, the exact frontier as a line,
// and the throughput target as a vertical line (plans left of it miss the target).
(function () {
  "use strict";
  const node = document.getElementById("scatter");
  const source = document.getElementById("plan-chart-data");
  if (!node || !source || !window.Plotly) return;
  const data = JSON.parse(source.textContent);
  const feasible = data.plans.filter((p) => p.feasible);
  const traces = [];
  if (data.frontier.length) {
    traces.push({
      type: "scatter", mode: "lines+markers", name: "exact frontier",
      x: data.frontier.map((p) => p.throughput), y: data.frontier.map((p) => p.cost_per_hour),
      line: { shape: "hv", color: "#8a94a3" }, marker: { size: 5, color: "#8a94a3" },
      hovertemplate: "optimum: %{x:,.0f} samples/s for $%{y:.3f}/h<extra></extra>",
    });
  }
  feasible.forEach((p) => {
    traces.push({
      type: "scatter", mode: "markers", name: p.scheduler + (p.chosen ? " (chosen)" : ""),
      x: [p.throughput], y: [p.cost_per_hour],
      // Open rings: plans that coincide (often the optimum) stay visible around the star.
      marker: { size: p.chosen ? 13 : 18, symbol: p.chosen ? "star" : "circle-open", line: { width: 2 } },
      hovertemplate: p.scheduler + ": %{x:,.0f} samples/s, $%{y:.3f}/h<extra></extra>",
    });
  });
  // Open on the plans and the target; the frontier runs on beyond (zoom out to see it all).
  const right = Math.max(data.target, ...feasible.map((p) => p.throughput)) * 1.6;
  const near = data.frontier.filter((p) => p.throughput <= right).map((p) => p.cost_per_hour);
  const ys = feasible.map((p) => p.cost_per_hour).concat(near);
  const top = ys.length ? Math.max.apply(null, ys) * 1.2 : 1;
  const layout = {
    margin: { l: 70, r: 10, t: 10, b: 60 },
    xaxis: { title: { text: "throughput (samples/s)" }, range: [0, right], automargin: true },
    yaxis: { title: { text: "cost ($ per hour, estimate)" }, range: [0, top], automargin: true },
    shapes: [{ type: "line", x0: data.target, x1: data.target, y0: 0, y1: top,
               line: { dash: "dash", color: "#b3261e" } }],
    annotations: [{ x: data.target, y: top, text: "target", showarrow: false, xanchor: "left",
                    font: { color: "#b3261e" } }],
    legend: { orientation: "h", y: -0.25 },
  };
  Plotly.newPlot(node, traces, layout, { responsive: true, displaylogo: false });
})();
