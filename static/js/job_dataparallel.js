// A data-parallel job's live panel: per-worker step time (one line per worker, stragglers
// marked), the phase (AHL/SHL) with the switch time, and the worker table. Samples come from
// the stored series and from job.js's "metric" events (one per websocket sample).
(function () {
  "use strict";
  const card = document.getElementById("job");
  const panel = document.getElementById("dataparallel");
  if (!card || !panel) return;
  const field = (name) => panel.querySelector(`[data-field="${name}"]`);
  const series = JSON.parse(document.getElementById("job-series").textContent)
    .filter((s) => s.stages && s.stages.length && s.stages[0].worker !== undefined);
  const unit = panel.dataset.backend === "process" ? "s" : "emulated s";
  const config = { responsive: true, displayModeBar: false };
  const STRAGGLER = "#b3261e";

  function switchTime() {
    for (let i = series.length - 1; i >= 0; i--) {
      const s = series[i].stages[0].switch_s;
      if (s !== null && s !== undefined) return s;
    }
    return null;
  }

  function drawChart() {
    const workers = series.length ? series[series.length - 1].stages.length : 0;
    const traces = [];
    const flagged = { x: [], y: [], text: [] };
    for (let w = 0; w < workers; w++) {
      const points = series.filter((s) => s.stages[w] && s.stages[w].step_time_s !== null);
      const rows = points.map((s) => s.stages[w]);
      const slow = rows.length ? rows[rows.length - 1].slowdown : 1;
      traces.push({
        x: points.map((s) => s.elapsed_s), y: rows.map((r) => r.step_time_s * 1000),
        mode: "lines+markers", marker: { size: 5 }, name: `worker ${w} (${slow}×)`,
      });
      points.forEach((s, i) => {
        if (!rows[i].straggler) return;
        flagged.x.push(s.elapsed_s); flagged.y.push(rows[i].step_time_s * 1000);
        flagged.text.push(`worker ${w}`);
      });
    }
    // One overlay for every flagged point: stragglers stand out whatever their line's colour.
    traces.push({
      ...flagged, mode: "markers", name: "straggler flagged", hoverinfo: "text+y",
      marker: { symbol: "x", size: 10, color: STRAGGLER }, visible: flagged.x.length ? true : "legendonly",
    });
    const sw = switchTime();
    const shapes = sw === null ? [] : [{ type: "line", x0: sw, x1: sw, yref: "paper", y0: 0, y1: 1, line: { dash: "dot", color: "#33445c" } }];
    const annotations = sw === null ? [] : [{ x: sw, yref: "paper", y: 1, text: "AHL→SHL", showarrow: false, yanchor: "bottom" }];
    Plotly.react("chart-step-times", traces, {
      margin: { l: 60, r: 10, t: 24, b: 110 }, height: 360, showlegend: true,
      legend: { orientation: "h", x: 0, y: -0.32, yanchor: "top" },
      xaxis: { title: { text: `time (${unit})` } },
      yaxis: { title: { text: "step time, rolling median (ms)" }, rangemode: "tozero" },
      shapes, annotations,
    }, config);
  }

  function cell(tr, text) {
    const td = document.createElement("td");
    td.textContent = text;
    tr.appendChild(td);
  }

  function table(rows) {
    const body = panel.querySelector("#workers tbody");
    body.innerHTML = "";
    rows.forEach((r) => {
      const tr = document.createElement("tr");
      if (r.straggler) tr.className = "straggler";
      cell(tr, r.worker);
      cell(tr, `${r.slowdown}×`);
      cell(tr, r.step_time_s === null ? "–" : (r.step_time_s * 1000).toFixed(3));
      cell(tr, r.steps);
      cell(tr, `${r.staleness} / ${r.max_staleness}`);
      cell(tr, (r.bytes_sent / 1e6).toFixed(2));
      cell(tr, r.batch_size);
      cell(tr, r.straggler ? "straggler" : "");
      body.appendChild(tr);
    });
  }

  function phase(sample) {
    const rows = sample.stages;
    field("phase").textContent = sample.phase || rows[rows.length - 1].phase || "–";
    const sw = switchTime();
    if (sw !== null) field("switch").textContent = `switched to SHL at ${sw.toFixed(4)} ${unit}`;
  }

  // At most one redraw a second however fast samples come (issue 25.10).
  const redraw = window.HeterPSCharts.throttle(drawChart, 1000);

  function show(sample) {
    redraw();
    table(sample.stages);
    phase(sample);
  }

  card.addEventListener("metric", (event) => {
    const m = event.detail;
    if (!m.stages || !m.stages.length || m.stages[0].worker === undefined) return;
    series.push(m);
    show(m);
  });
  if (series.length) show(series[series.length - 1]);
  else drawChart();
})();
