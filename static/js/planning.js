// Cost-vs-throughput scatter: one marker per scheduler's plan, the cheapest cost meeting each
// target (a step line from the exact frontier), and the throughput target as a vertical line
// (plans left of it miss the target).
(function () {
  "use strict";
  const node = document.getElementById("scatter");
  const source = document.getElementById("plan-chart-data");
  if (!node || !source || !window.Plotly) return;
  const data = JSON.parse(source.textContent);
  const feasible = data.plans.filter((p) => p.feasible);
  const traces = [];
  const step = cheapestMeeting(data.frontier);
  if (step.x.length) {
    traces.push({
      type: "scatter", mode: "lines", name: "cheapest plan meeting x (exact)",
      x: step.x, y: step.y, line: { color: "#8a94a3" },
      hovertemplate: "any target up to %{x:,.0f} samples/s: $%{y:.3f}/h<extra></extra>",
    });
    traces.push({
      type: "scatter", mode: "markers", name: "exact plans", showlegend: false,
      x: step.points.map((p) => p.throughput), y: step.points.map((p) => p.cost_per_hour),
      marker: { size: 5, color: "#8a94a3" },
      hovertemplate: "exact plan: %{x:,.0f} samples/s for $%{y:.3f}/h<extra></extra>",
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
  const near = step.points.filter((p) => p.throughput <= right).map((p) => p.cost_per_hour);
  const ys = feasible.map((p) => p.cost_per_hour).concat(near);
  const top = ys.length ? Math.max.apply(null, ys) * 1.2 : 1;
  const layout = {
    margin: { l: 70, r: 10, t: 10, b: 60 },
    xaxis: { title: { text: "throughput (samples/s)" }, range: [0, right], automargin: true },
    yaxis: { title: { text: "cost ($ per hour, estimate)" }, range: [0, top], automargin: true,
             tickprefix: "$" },
    shapes: [{ type: "line", x0: data.target, x1: data.target, y0: 0, y1: top,
               line: { dash: "dash", color: "#b3261e" } }],
    annotations: [{ x: data.target, y: top, text: "target", showarrow: false, xanchor: "left",
                    font: { color: "#b3261e" } }],
    legend: window.HeterPSCharts.legendAbove,
  };
  Plotly.newPlot(node, traces, layout, { responsive: true, displaylogo: false });

  // The cheapest cost that meets each target, as a step function of the target: a plan of
  // throughput T at cost C serves every target up to T, so the line at x is the cheapest C
  // among frontier plans with T >= x (reading it between two plans never gives a plan that
  // misses x).
  function cheapestMeeting(frontier) {
    const plans = frontier.filter((p) => p.feasible !== false && p.throughput > 0 &&
                                         p.cost_per_hour != null)
      .sort((a, b) => a.throughput - b.throughput);
    const points = [];
    for (let i = plans.length - 1; i >= 0; i--) {  // keep plans no faster one undercuts
      if (!points.length || plans[i].cost_per_hour < points[0].cost_per_hour) {
        points.unshift(plans[i]);
      }
    }
    const x = [], y = [];
    points.forEach((p, i) => {
      x.push(i ? points[i - 1].throughput : 0, p.throughput);
      y.push(p.cost_per_hour, p.cost_per_hour);
    });
    return { x, y, points };
  }
})();
