// Shared chart helpers: legends above the plot (below, they cover the x-axis title once they
// wrap on a phone), log-axis ticks that keep their decimals, padded ranges.
(function () {
  "use strict";
  const fmt = (v) => String(Number(v.toPrecision(3)));

  // Ticks at 1, 2 and 5 times each power of ten spanning [lo, hi], labelled in full
  // ("0.4", never Plotly's bare minor digit "4").
  function logTicks(values) {
    const positive = values.filter((v) => v != null && v > 0);
    if (!positive.length) return {};
    const lo = Math.min(...positive), hi = Math.max(...positive);
    const ticks = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const m of [1, 2, 5]) ticks.push(m * Math.pow(10, e));
    }
    // The axis runs from the tick at or below the smallest value to the one at or above the
    // largest, so every bar starts and ends between labelled ticks.
    const bottom = Math.max(...ticks.filter((t) => t <= lo * 1.000001));
    const top = Math.min(...ticks.filter((t) => t >= hi / 1.000001));
    const shown = ticks.filter((t) => t >= bottom && t <= top);
    return { tickmode: "array", tickvals: shown, ticktext: shown.map(fmt),
             range: [Math.log10(bottom), Math.log10(top)] };
  }

  // [lo, hi] widened so a flat or nearly flat line sits between two labelled ticks.
  function padded(values) {
    const finite = values.filter((v) => v != null && isFinite(v));
    if (!finite.length) return undefined;
    let lo = Math.min(...finite), hi = Math.max(...finite);
    const pad = Math.max((hi - lo) * 0.15, Math.abs(hi) * 0.05, 1e-9);
    return [lo - pad, hi + pad];
  }

  // A linear axis whose first tick is at or below the smallest value and last at or above
  // the largest, in steps of 1, 2, 2.5 or 5 times a power of ten: a flat line at the minimum
  // (the RL best cost once it settles) sits on a labelled tick, not under the lowest one.
  function linearTicks(values, count) {
    const finite = values.filter((v) => v != null && isFinite(v));
    if (!finite.length) return {};
    let lo = Math.min(...finite), hi = Math.max(...finite);
    if (hi - lo < Math.abs(hi) * 1e-9 + 1e-12) { lo -= Math.abs(lo) * 0.1 + 1e-9; hi += Math.abs(hi) * 0.1 + 1e-9; }
    const raw = (hi - lo) / Math.max(1, (count || 5) - 1);
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw);
    const start = Math.floor(lo / step) * step, end = Math.ceil(hi / step) * step;
    return { tickmode: "linear", tick0: start, dtick: step,
             range: [start - step * 0.08, end + step * 0.08] };
  }

  // `fn` called at most once per `ms` (the first call at once, later ones coalesced into one
  // call at the end of the interval): live charts redraw at most once a second however
  // fast samples arrive (issue 25.10).
  function throttle(fn, ms) {
    let last = -Infinity, timer = null;
    const run = () => { timer = null; last = Date.now(); fn(); };
    return () => {
      if (timer !== null) return;
      const wait = last + ms - Date.now();
      if (wait <= 0) run(); else timer = setTimeout(run, wait);
    };
  }

  const legendAbove = { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" };
  window.HeterPSCharts = { logTicks, linearTicks, padded, legendAbove, fmt, throttle };
})();
