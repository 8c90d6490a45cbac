// Live reward curve: the stored curve first, then the rows each progress event carries
// (events batch the updates since the previous one) from the work record's websocket.
(function () {
  "use strict";
  const node = document.getElementById("reward-chart");
  const card = document.getElementById("work");
  if (!node || !window.Plotly) return;
  const rows = JSON.parse(document.getElementById("rl-curve").textContent);
  let last = rows.length ? rows[rows.length - 1].update : 0;
  const pick = (key) => rows.map((r) => r[key]);
  const charts = window.HeterPSCharts;
  Plotly.newPlot(node, [
    { type: "scatter", mode: "lines", name: "mean reward", x: pick("update"), y: pick("mean_reward") },
    { type: "scatter", mode: "lines", name: "best cost", x: pick("update"), y: pick("best_cost"),
      yaxis: "y2", line: { dash: "dot" } },
  ], {
    margin: { l: 70, r: 70, t: 10, b: 60 },
    xaxis: { title: { text: "policy update (count)" }, automargin: true },
    yaxis: { title: { text: "mean reward (unitless)" }, automargin: true },
    yaxis2: Object.assign({ title: { text: "best cost ($ per hour, estimate)" }, overlaying: "y",
                            side: "right", automargin: true, tickprefix: "$", showgrid: false },
                          charts.linearTicks(pick("best_cost"))),
    legend: charts.legendAbove,
  }, { responsive: true, displaylogo: false });

  function append(fresh) {
    const rowsNew = fresh.filter((r) => r.update > last);
    if (!rowsNew.length) return;
    last = rowsNew[rowsNew.length - 1].update;
    Plotly.extendTraces(node, {
      x: [rowsNew.map((r) => r.update), rowsNew.map((r) => r.update)],
      y: [rowsNew.map((r) => r.mean_reward), rowsNew.map((r) => r.best_cost)],
    }, [0, 1]);
    // Keep the best-cost line between labelled ticks as it falls.
    const ticks = charts.linearTicks(node.data[1].y);
    Plotly.relayout(node, { "yaxis2.range": ticks.range, "yaxis2.tick0": ticks.tick0,
                            "yaxis2.dtick": ticks.dtick });
  }

  if (!card) return;
  const state = JSON.parse(document.getElementById("work-state").textContent);
  if (state.finished) return;
  const scheme = window.location.protocol === "https:" ? "wss" : "ws";
  let delay = 500;
  function connect() {
    const socket = new WebSocket(`${scheme}://${window.location.host}${card.dataset.ws}`);
    socket.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (data.type !== "work.status") return; // the only event of a work socket
      const work = data.work;
      if (work.metrics && Array.isArray(work.metrics.rows)) append(work.metrics.rows);
      if (work.finished) socket.close();
    };
    socket.onclose = () => {
      if (!document.querySelector('[data-field="status"]').textContent.match(/succeeded|failed|cancelled/)) {
        setTimeout(connect, delay);
        delay = Math.min(delay * 2, 10000);
      }
    };
  }
  connect();
})();
