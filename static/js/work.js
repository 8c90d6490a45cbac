// Live state of one background-work record: the websocket sends the current state on
// connect, then one event per change (each a typed event, webapp/background/events.py:
// only "work.status" here); we reconnect (with back-off) until it is finished.
(function () {
  "use strict";
  const card = document.getElementById("work");
  if (!card) return;
  const field = (name) => card.querySelector(`[data-field="${name}"]`);
  let state = JSON.parse(document.getElementById("work-state").textContent);
  let delay = 500;

  function render(work) {
    const percent = Math.round(work.progress * 100);
    field("status").textContent = work.status;
    field("status").className = `status status-${work.status}`;
    field("bar").style.width = `${percent}%`;
    card.querySelector(".progress").setAttribute("aria-valuenow", String(percent));
    field("message").textContent = work.message;
    field("error").textContent = work.error;
    field("error").hidden = !work.error;
    if (work.finished && !state.finished) {
      window.location.reload(); // the result section is rendered by the server
    }
    state = work;
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}${card.dataset.ws}`);
    socket.onopen = () => { delay = 500; field("live").textContent = "live"; field("live").classList.add("on"); };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (event.type === "work.status") render(event.work);
    };
    socket.onclose = () => {
      field("live").textContent = "offline";
      field("live").classList.remove("on");
      if (!state.finished) { setTimeout(connect, delay); delay = Math.min(delay * 2, 10000); }
    };
  }
  connect();
})();
