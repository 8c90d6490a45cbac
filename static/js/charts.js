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
    const shown = ticks.filter((t) => t >= lo / 2.2 && t <= hi * 2.2);
    return { tickmode: "array", tickvals: shown, ticktext: shown.map(fmt) };
  }

  // [lo, hi] widened so a flat or nearly flat line sits between two labelled ticks.
  function padded(values) {
    const finite = values.filter((v) => v != null && isFinite(v));
    if (!finite.length) return undefined;
    let lo = Math.min(...finite), hi = Math.max(...finite);
    const pad = Math.max((hi - lo) * 0.15, Math.abs(hi) * 0.05, 1e-9);
    return [lo - pad, hi + pad];
  }

  const legendAbove = { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom" };
  window.HeterPSCharts = { logTicks, padded, legendAbove, fmt };
})();
