// The job page: throughput, loss and accrued cost streaming live (measured next to the
// plan's estimate). The socket sends typed events (webapp/background/events.py):
// "job.sample" (one per stored sample: `work.metrics` is the sample), appended to the
// charts, and "work.status" (the run's state), which reloads the page when the run ends.
(function () {
  "use strict";
  const card = document.getElementById("job");
  if (!card) return;
  const field = (name) => card.querySelector(`[data-field="${name}"]`);
  const job = JSON.parse(document.getElementById("job-state").textContent);
  const series = JSON.parse(document.getElementById("job-series").textContent);
  const stagePlanEl = document.getElementById("job-stage-plan");
  if (stagePlanEl) Object.assign(job, JSON.parse(stagePlanEl.textContent)); // stages, flushes, batch_size
  const layout = (x, y) => ({
    margin: { l: 60, r: 10, t: 10, b: 40 }, height: 290, showlegend: true,
    legend: { orientation: "h", x: 0, y: 1.0, yanchor: "bottom" }, xaxis: { title: { text: x } }, yaxis: { title: { text: y } },
  });
  const config = { responsive: true, displayModeBar: false };
  const seen = new Set();
  let finished = !["queued", "running", "cancelling"].includes(job.status);
  let delay = 500;

  // Data-parallel runs report the trainer's clock: emulated seconds unless real processes ran.
  const dp = job.runner === "dataparallel";
  const timeAxis = dp && (job.dataparallel || {}).backend !== "process" ? "emulated time (s)" : "elapsed (s)";
  const stepAxis = dp ? "step (local steps, all workers)" : "step (mini-batches)";
  const key = (s) => `${s.step}@${s.elapsed_s}`;

  // Redraws are batched (issue 25.10): samples arrive every 0.5 s or faster, and each full
  // redraw of three charts costs a loaded client more than that. New samples wait in
  // `pending`; at most once per REDRAW_MS each chart gets them with Plotly.extendTraces
  // (points appended, nothing re-laid out). A full Plotly.react only draws the page's first
  // state, and the loss chart again when ASHL's switch first shows.
  const REDRAW_MS = 1000;
  const pending = [];
  let timer = null;
  let lastFlush = 0;
  let drawnSwitch = null;

  // x of the guide lines (estimates): from 0 to the latest sample; live, extendTraces
  // carries them along with the measured points.
  const guideX = (t) => (t.length ? [0, t[t.length - 1]] : [0]);

  // The plan's estimate and the measured figures can be orders apart (a plan for a GPU
  // cluster, a run on this CPU): on one linear axis the measured line looks like zero, so
  // such a chart gets a log axis, labelled in full.
  function throughputAxis() {
    const measured = series.map((s) => s.samples_per_s).filter((v) => v > 0);
    const guides = dp ? [] : [job.predicted_throughput, job.as_run].filter((v) => v > 0);
    const linear = { title: { text: "throughput (samples/s)" } };
    if (!measured.length || !guides.length) return linear;
    const top = Math.max(...measured);
    const apart = Math.max(...guides.map((g) => Math.max(g / top, top / g)));
    if (apart < 20) return linear;
    const ticks = window.HeterPSCharts.logTicks([...measured, ...guides]);
    delete ticks.range; // live points may go past it: let the axis follow them
    if (ticks.tickvals && ticks.tickvals.length > 8) { // many decades: label each power of ten
      const whole = ticks.tickvals.map((v, i) => [v, ticks.ticktext[i]])
        .filter(([v]) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
      ticks.tickvals = whole.map(([v]) => v);
      ticks.ticktext = whole.map(([, text]) => text);
    }
    // 1k, 10k, 1M: seven digits crowd the axis title on a 300 px chart.
    const short = (v) => (v >= 1e6 ? `${v / 1e6}M` : v >= 1e4 ? `${v / 1e3}k` : null);
    if (ticks.tickvals) ticks.ticktext = ticks.tickvals.map((v, i) => short(v) || ticks.ticktext[i]);
    return { type: "log", title: { text: "throughput (samples/s, log scale)" }, ...ticks };
  }

  let drawnLog = false;
  // Markers help a short run; on hundreds of points they merge into a thick band.
  const marked = () => (series.length > 150 ? "lines" : "lines+markers");

  function drawThroughput() {
    const t = series.map((s) => s.elapsed_s);
    const lineX = guideX(t);
    // The plan's estimate is for its pipeline on the cluster: no yardstick for a
    // data-parallel run on the trainer's clock, so that line is left out there.
    const lines = [{ x: t, y: series.map((s) => s.samples_per_s), name: dp ? "all workers" : "measured, per report window", mode: marked() }];
    if (!dp) {
      lines.push({ x: lineX, y: lineX.map(() => job.predicted_throughput), name: "plan estimate", mode: "lines", line: { dash: "dash" } });
      // A run that ran on substitutes has its own yardstick: the plan with the stage times
      // that ran (server-computed: the finished page, or the latest stored sample).
      if (job.as_run) {
        lines.push({ x: lineX, y: lineX.map(() => job.as_run), name: "predicted for what ran", mode: "lines", line: { dash: "dot" } });
      }
    }
    const throughputLayout = layout(timeAxis, "throughput (samples/s)");
    throughputLayout.yaxis = throughputAxis();
    drawnLog = throughputLayout.yaxis.type === "log";
    Plotly.react("chart-throughput", lines, throughputLayout, config);
  }

  function drawCost() {
    const t = series.map((s) => s.elapsed_s);
    const lineX = guideX(t);
    Plotly.react("chart-cost", [
      { x: t, y: series.map((s) => s.cost), name: "accrued ($ total, this run)", mode: marked() },
      { x: lineX, y: lineX.map((x) => job.predicted_cost_per_hour * x / 3600), name: "estimate ($/hour × time)", mode: "lines", line: { dash: "dash" } },
    ], layout(timeAxis, "cost ($ total)"), config);
  }

  function draw() {
    drawThroughput();
    drawLoss();
    drawCost();
  }

  function drawLoss() {
    const withLoss = series.filter((s) => s.loss !== null);
    const lossLayout = layout(stepAxis, "loss (training objective)");
    const sw = dp ? switchStep() : null;
    drawnSwitch = sw;
    if (sw !== null) {
      lossLayout.shapes = [{ type: "line", x0: sw, x1: sw, yref: "paper", y0: 0, y1: 1, line: { dash: "dot", color: "#33445c" } }];
      lossLayout.annotations = [{ x: sw, yref: "paper", y: 0.02, text: "AHL→SHL", showarrow: false, xanchor: "left" }];
    }
    Plotly.react("chart-loss", [
      { x: withLoss.map((s) => s.step), y: withLoss.map((s) => s.loss), name: "loss (window mean)", mode: marked() },
    ], lossLayout, config);
  }

  // Append the pending samples to every chart: one extendTraces call per chart.
  function extend(batch) {
    const t = batch.map((s) => s.elapsed_s);
    const tLast = t[t.length - 1];
    const guides = (value) => [[tLast], [value]];
    if ((throughputAxis().type === "log") !== drawnLog) {
      drawThroughput(); // the measured and the estimate grew orders apart: a log axis
    } else if (dp) {
      Plotly.extendTraces("chart-throughput", { x: [t], y: [batch.map((s) => s.samples_per_s)] }, [0]);
    } else {
      const extra = job.as_run ? [guides(job.as_run)] : [];
      const g = [guides(job.predicted_throughput), ...extra];
      Plotly.extendTraces("chart-throughput", {
        x: [t, ...g.map((p) => p[0])], y: [batch.map((s) => s.samples_per_s), ...g.map((p) => p[1])],
      }, [0, 1, ...(job.as_run ? [2] : [])]);
    }
    if (dp && switchStep() !== drawnSwitch) drawLoss(); // the switch line moves the layout
    else {
      const withLoss = batch.filter((s) => s.loss !== null);
      if (withLoss.length) {
        Plotly.extendTraces("chart-loss", { x: [withLoss.map((s) => s.step)], y: [withLoss.map((s) => s.loss)] }, [0]);
      }
    }
    Plotly.extendTraces("chart-cost", {
      x: [t, [tLast]], y: [batch.map((s) => s.cost), [job.predicted_cost_per_hour * tLast / 3600]],
    }, [0, 1]);
  }

  function flush() {
    timer = null;
    lastFlush = Date.now();
    const batch = pending.splice(0, pending.length);
    if (batch.length) extend(batch);
  }

  function queue(sample) {
    pending.push(sample);
    if (timer !== null) return;
    timer = setTimeout(flush, Math.max(0, lastFlush + REDRAW_MS - Date.now()));
  }

  function switchStep() {
    // ASHL's switch: every data-parallel sample after it carries its global step.
    for (let i = series.length - 1; i >= 0; i--) {
      const w = (series[i].stages || [])[0];
      if (w && w.switch_step !== null && w.switch_step !== undefined) return w.switch_step;
    }
    return null;
  }

  const fmt = (v, digits, scale) => (v === null || v === undefined ? "–" : (v * (scale || 1)).toFixed(digits));

  function stages(rows) {
    // Whole-run figures per stage (busy share, one unit's time per mini-batch) next to the
    // plan's prediction; a stage that ran on a substitute says so.
    const body = document.querySelector("#stages tbody");
    if (!body || !rows || !rows.length || rows[0].busy_total_s === undefined) return; // data-parallel: workers
    const share = (s) => (s.busy_share === null || s.busy_share === undefined ? 0 : s.busy_share);
    const busiest = Math.max(...rows.map(share));
    const others = rows.map(share).sort((a, b) => b - a);
    const binding = busiest > 0 ? rows.findIndex((s) => share(s) === busiest) : -1;
    const planned = job.stages || [];
    body.innerHTML = "";
    rows.forEach((s, i) => {
      let flag = "";
      if (rows.length > 1 && i === binding) flag = busiest - others[1] > 0.3 ? "straggler (binding)" : "binding";
      const p = planned[i] || {};
      const idle = s.busy_share === null || s.busy_share === undefined ? null : 1 - s.busy_share;
      const tr = document.createElement("tr");
      if (p.substitute) tr.className = "substitute";
      [s.stage, s.resource, s.units, `${p.bound_to || "cpu"}${p.substitute ? " (substitute)" : ""}`,
        fmt(s.time_per_batch_s, 3, 1000), fmt(s.predicted_time_per_batch_s, 3, 1000),
        s.busy_share === null ? "–" : `${fmt(s.busy_share, 1, 100)}%`, idle === null ? "–" : `${fmt(idle, 1, 100)}%`, flag].forEach((v) => {
        const td = document.createElement("td"); td.textContent = String(v); tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    // The plan re-evaluated with these stage times (as the server computes it).
    const times = rows.map((s) => s.time_per_batch_s);
    const asRun = field("as-run");
    if (asRun && times.every((t) => t)) {
      const rates = rows.map((s, i) => s.units * job.batch_size / times[i]);
      const v = job.flushes && rates.length > 1 ? 1 / rates.reduce((a, r) => a + 1 / r, 0) : Math.min(...rates);
      asRun.textContent = v.toFixed(1);
    }
  }

  function onWork(work) {
    field("status").textContent = work.status;
    field("status").className = `status status-${work.status}`;
    field("message").textContent = work.message;
    field("error").textContent = work.error;
    field("error").hidden = !work.error;
  }

  function onSample(m) {
    if (seen.has(key(m))) return; // a reconnect may send one again
    seen.add(key(m));
    series.push(m);
    field("step").textContent = `${m.step}/${m.total_steps}`;
    // The run's measured figure (first to last finished mini-batch) where the runner
    // reports it; the window's figure is the labelled live one.
    field("throughput").textContent = fmt(m.run_samples_per_s === undefined ? m.samples_per_s : m.run_samples_per_s, 1);
    if (field("window")) field("window").textContent = `${m.samples_per_s.toFixed(1)} (last ${fmt(m.window_s, 1)} s)`;
    if (field("startup") && m.startup_s !== null && m.startup_s !== undefined) field("startup").textContent = m.startup_s.toFixed(1);
    if (m.loss !== null) field("loss").textContent = m.loss.toFixed(4);
    field("cost").textContent = (baseCost + m.cost).toFixed(4);
    field("bar").style.width = `${Math.round(100 * m.step / m.total_steps)}%`;
    stages(m.stages);
    queue(m);
    card.dispatchEvent(new CustomEvent("metric", { detail: m }));
  }

  const handlers = {
    "job.sample": (event) => { onWork(event.work); onSample(event.work.metrics); },
    "work.status": (event) => {
      onWork(event.work);
      if (event.work.finished && !finished) window.location.reload(); // summary and log are server-rendered
      finished = event.work.finished;
    },
  };

  const lastCost = series.length ? series[series.length - 1].cost : 0;
  const baseCost = job.accrued_cost - lastCost; // earlier runs
  series.forEach((s) => seen.add(key(s)));
  if (series.length) {
    const last = series[series.length - 1];
    stages(last.stages);
    // Stored samples keep no window length: only say "the run's end" for them.
    if (field("window")) field("window").textContent = `${last.samples_per_s.toFixed(1)}${finished ? " (the run's last window)" : ""}`;
  }
  draw();

  function connect() {
    if (!card.dataset.ws) return;
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}${card.dataset.ws}`);
    socket.onopen = () => { delay = 500; field("live").textContent = "live"; field("live").classList.add("on"); };
    socket.onmessage = (message) => {
      const event = JSON.parse(message.data);
      const handle = handlers[event.type];
      if (handle) handle(event);
    };
    socket.onclose = () => {
      field("live").textContent = "offline";
      field("live").classList.remove("on");
      if (!finished) { setTimeout(connect, delay); delay = Math.min(delay * 2, 10000); }
    };
  }
  connect();
})();
