// Runs compared (webapp/jobs/compare.py): one loss and one throughput chart, a line per run.
// Drawn once; a click on a legend entry hides or shows that run (Plotly's own).
(function () {
  "use strict";
  const data = document.getElementById("compare-curves");
  if (!data) return;
  const curves = JSON.parse(data.textContent);
  const config = { responsive: true, displayModeBar: false };
  const layout = (x, y) => ({
    margin: { l: 60, r: 10, t: 10, b: 40 }, height: 320, showlegend: true,
    legend: window.HeterPSCharts.legendAbove, xaxis: { title: { text: x } }, yaxis: { title: { text: y } },
  });
  const mode = (n) => (n > 150 ? "lines" : "lines+markers");
  // One colour per run on both charts, whichever runs a chart leaves out.
  const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  curves.forEach((c, i) => { c.color = palette[i % palette.length]; });
  // A run that trained nothing has no loss: no empty legend entry for it.
  Plotly.react("chart-compare-loss", curves.filter((c) => c.loss.length).map((c) => (
    { x: c.step, y: c.loss, name: c.name, mode: mode(c.step.length), legendgroup: c.name, line: { color: c.color }, marker: { color: c.color } }
  )), layout("step (mini-batches)", "loss (window mean)"), config);
  Plotly.react("chart-compare-throughput", curves.map((c) => (
    { x: c.elapsed_s, y: c.samples_per_s, name: c.name, mode: mode(c.elapsed_s.length), legendgroup: c.name, line: { color: c.color }, marker: { color: c.color } }
  )), layout("elapsed since the run started (s)", "throughput (samples/s, window)"), config);
})();
