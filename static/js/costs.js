// The cost report's chart: estimate next to accrued, $ total per project for the period.
(function () {
  "use strict";
  const rows = JSON.parse(document.getElementById("cost-projects").textContent);
  const names = rows.map((r) => r.project);
  Plotly.newPlot("chart-costs", [
    { type: "bar", x: names, y: rows.map((r) => r.estimate), name: "estimate ($ total)" },
    { type: "bar", x: names, y: rows.map((r) => r.accrued), name: "accrued ($ total)" },
  ], {
    barmode: "group", height: 280, margin: { l: 60, r: 10, t: 10, b: 50 },
    xaxis: { title: { text: "project" } }, yaxis: { title: { text: "cost ($ total in period)" } },
    legend: { orientation: "h", x: 0, y: 1.0, yanchor: "bottom" },
  }, { responsive: true, displayModeBar: false });
})();
