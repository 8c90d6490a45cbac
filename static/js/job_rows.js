// Job tables (job list, dashboard): rows of running jobs update live from their job
// websocket (throughput, step, accrued cost this run). Events are typed
// (webapp/background/events.py): "work.status" (status changes), "job.sample" (samples).
(function () {
  "use strict";
  document.querySelectorAll("tr[data-ws]").forEach((row) => {
    const cell = (name) => row.querySelector(`[data-field="${name}"]`);
    const base = parseFloat(cell("cost").textContent) || 0;
    let first = null;
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}${row.dataset.ws}`);
    const onSample = (m) => {
      if (first === null) first = m.cost; // the page already counted the cost up to here
      cell("step").textContent = `${m.step}/${m.total_steps}`;
      cell("throughput").textContent = m.samples_per_s.toFixed(1);
      cell("cost").textContent = (base + m.cost - first).toFixed(4);
    };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      const work = event.work;
      cell("status").textContent = work.status;
      cell("status").className = `status status-${work.status}`;
      if (event.type === "job.sample") onSample(work.metrics);
      else if (event.type === "work.status" && work.finished) socket.close();
    };
  });
})();
