// Shared chart helpers over uPlot (static/vendor/uplot-*): colours, a tooltip that a click pins
// (so its links can be followed), and the bar chart of the speedup and compare pages.
// Chart data comes from json_script blocks; text from the server goes in with textContent only.
(function () {
  "use strict";
  const PALETTE = ["#0b63c5", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#5c940d", "#1098ad", "#e67700"];

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const child of children || []) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }

  function readJSON(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  // A uPlot plugin: `describe(u, idx)` returns the tooltip's nodes for the x index under the
  // cursor (or null for none). Hovering shows it; a click pins it in place until the next click,
  // and `onPin(u, idx, tip)` may then add to it (what is worth a request only when asked).
  function tooltipPlugin(describe, onPin) {
    let tip, pinned = false;
    function place(u) {
      const { left, top, idx } = u.cursor;
      if (pinned) return;
      const content = idx === null || idx === undefined || left < 0 ? null : describe(u, idx);
      if (!content) { tip.style.display = "none"; return; }
      tip.replaceChildren(...content);
      tip.style.display = "block";
      const flip = left > u.over.clientWidth * 0.6;
      tip.style.left = `${flip ? left - tip.offsetWidth - 12 : left + 12}px`;
      tip.style.top = `${Math.max(0, top - 10)}px`;
    }
    return {
      hooks: {
        init(u) {
          tip = el("div", { class: "chart-tip", role: "tooltip" });
          tip.style.display = "none";
          u.over.append(tip);
          u.over.addEventListener("click", () => {
            pinned = !pinned && tip.style.display === "block";
            u.root.classList.toggle("pinned", pinned);
            if (pinned && onPin) onPin(u, u.cursor.idx, tip);
            if (!pinned) place(u);
          });
          tip.addEventListener("click", (event) => event.stopPropagation());
        },
        setCursor: [place],
      },
    };
  }

  function plotWidth(container) {
    return Math.max(320, Math.min(1100, container.clientWidth || 900));
  }

  // A uPlot plugin: a whisker (a vertical line with caps) over bar i from lows[i] to highs[i],
  // where the bar has an interval; the container's data-whiskers counts those drawn.
  function whiskerPlugin(container, lows, highs) {
    return {
      hooks: {
        draw(u) {
          const ctx = u.ctx, cap = 6 * devicePixelRatio;
          let drawn = 0;
          ctx.save();
          ctx.setLineDash([]);  // the geometric mean's line leaves its dashes on the context
          ctx.strokeStyle = "#14202e";
          ctx.lineWidth = 1.5 * devicePixelRatio;
          lows.forEach((low, i) => {
            const high = highs[i];
            if (low == null || high == null || !(high > low)) return;
            const x = u.valToPos(i, "x", true), y0 = u.valToPos(low, "y", true), y1 = u.valToPos(high, "y", true);
            ctx.beginPath();
            ctx.moveTo(x, y0); ctx.lineTo(x, y1);
            ctx.moveTo(x - cap, y0); ctx.lineTo(x + cap, y0);
            ctx.moveTo(x - cap, y1); ctx.lineTo(x + cap, y1);
            ctx.stroke();
            drawn += 1;
          });
          ctx.restore();
          container.dataset.whiskers = String(drawn);
        },
      },
    };
  }

  // One bar per x label (with its interval as a whisker where `spec.lows`/`spec.highs` give
  // one), and dashed horizontal lines (a geometric mean) across the whole chart.
  function barChart(container, spec) {
    const n = spec.labels.length;
    const xs = spec.labels.map((_, i) => i);
    const color = PALETTE[0];
    const data = [xs, spec.values];
    const series = [{}, {
      label: spec.label, stroke: color, fill: color + "bb", width: 1,
      paths: uPlot.paths.bars({ size: [0.7, 70] }), points: { show: false },
    }];
    for (const line of spec.lines || []) {
      data.push(xs.map(() => line.value));
      series.push({ label: line.label, stroke: line.color || "#14202e", width: 2, dash: [6, 4], points: { show: false } });
    }
    const opts = {
      width: plotWidth(container), height: 300,
      scales: {
        x: { time: false, range: () => [-0.6, n - 0.4] },
        y: { range: spec.range },
      },
      axes: [
        { values: (u, splits) => splits.map((v) => spec.labels[v] ?? ""), splits: () => xs,
          rotate: n > 12 ? -50 : 0, size: n > 12 ? 80 : 40, gap: 4 },
        { label: spec.yLabel, size: 60 },
      ],
      series,
      legend: { live: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      plugins: [tooltipPlugin((u, idx) => spec.describe(idx)), whiskerPlugin(container, spec.lows || [], spec.highs || [])],
    };
    container.replaceChildren();
    const plot = new uPlot(opts, data, container);
    container.dataset.bars = String(n);
    return plot;
  }

  // The speedup and compare-GPUs pages: bars per workload, the geometric mean as a line.
  function speedupBars(container, chart) {
    const bars = chart.bars;
    const values = bars.map((b) => b.value);
    const unit = chart.unit ?? "×";
    const lines = chart.geomean ? [{ label: `geometric mean ${chart.geomean.toFixed(2)}×`, value: chart.geomean }] : [];
    if (unit === "×") lines.push({ label: "1× (even)", value: 1, color: "#adb5bd" });
    const digits = unit === "×" ? 2 : 1;
    const highest = Math.max(0, ...bars.map((b) => b.high ?? 0));
    return barChart(container, {
      labels: bars.map((b) => b.label), values, label: chart.y_label, yLabel: chart.y_label, lines,
      lows: bars.map((b) => b.low), highs: bars.map((b) => b.high),
      range: (u, lo, hi) => [0, Math.max(hi, highest, chart.geomean || 0, unit === "×" ? 1 : 0) * 1.1],
      describe: (i) => [
        el("div", { class: "tip-head" }, [`${bars[i].label}: ${bars[i].value.toFixed(digits)}${unit}`]),
        bars[i].high > bars[i].low ? el("div", {}, [`interval ${bars[i].low.toFixed(digits)}–${bars[i].high.toFixed(digits)}${unit}`]) : "",
        el("div", {}, [bars[i].task, " ", el("code", {}, [bars[i].shape])]),
        el("div", {}, [bars[i].detail]),
        el("a", { href: bars[i].url }, ["leaderboard"]),
      ],
    });
  }

  // Roofline: each best at its arithmetic intensity, under min(peak FP32, intensity × bandwidth).
  function roofline(container, chart) {
    const pts = chart.points;
    if (!pts.length) return null;
    const lo = Math.min(...pts.map((p) => p.intensity), chart.bandwidth ? chart.peak_gflops / chart.bandwidth / 8 : Infinity) / 2;
    const hi = Math.max(...pts.map((p) => p.intensity), chart.bandwidth ? chart.peak_gflops / chart.bandwidth * 8 : 0) * 2;
    // x values must ascend: the roof is sampled along x, the points sit between samples.
    const roofXs = [];
    for (let x = lo; x <= hi * 1.0001; x *= 1.08) roofXs.push(x);
    const xs = [...new Set([...roofXs, ...pts.map((p) => p.intensity)])].sort((a, b) => a - b);
    const roof = xs.map((x) => (chart.peak_gflops ? Math.min(chart.peak_gflops, x * chart.bandwidth) : null));
    const at = new Map(pts.map((p, i) => [p.intensity, i]));
    const points = xs.map((x) => (at.has(x) ? pts[at.get(x)].gflops : null));
    const opts = {
      width: plotWidth(container), height: 380,
      scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
      axes: [{ label: "arithmetic intensity (FLOP / byte, least bytes moved)" }, { label: "GFLOP/s", size: 64 }],
      series: [
        {},
        { label: chart.peak_gflops ? `roof: ${chart.peak_gflops} GFLOP/s FP32, ${chart.bandwidth} GB/s DRAM` : "peak unknown",
          stroke: "#868e96", width: 2, points: { show: false } },
        { label: "best config per workload", stroke: PALETTE[0], paths: () => null,
          points: { show: true, size: 8, stroke: PALETTE[0], fill: PALETTE[0] + "99" } },
      ],
      legend: { live: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      plugins: [tooltipPlugin((u) => {
        // The point nearest the cursor, within 24 px: the roof's samples share the x axis.
        let p = null, nearest = 24 * 24;
        for (const q of pts) {
          const dx = u.valToPos(q.intensity, "x") - u.cursor.left, dy = u.valToPos(q.gflops, "y") - u.cursor.top;
          if (dx * dx + dy * dy < nearest) { nearest = dx * dx + dy * dy; p = q; }
        }
        if (!p) return null;
        const bound = chart.peak_gflops ? Math.min(chart.peak_gflops, p.intensity * chart.bandwidth) : null;
        return [
          el("div", { class: "tip-head" }, [`${p.label}: ${p.gflops.toFixed(1)} GFLOP/s`]),
          el("div", {}, [p.task, " ", el("code", {}, [p.shape])]),
          el("div", {}, [`${p.intensity.toFixed(2)} FLOP/byte`, bound ? ` · ${(100 * p.gflops / bound).toFixed(1)} % of the roof` : ""]),
          el("a", { href: p.record_url }, ["record"]), " · ", el("a", { href: p.url }, ["leaderboard"]),
        ];
      })],
    };
    container.replaceChildren();
    container.dataset.points = String(pts.length);
    return new uPlot(opts, [xs, roof, points], container);
  }

  // Knob slices: a small panel per knob, its values along x (each config jittered a little
  // around its value, so dots do not hide each other), time on a log y, medians joined.
  function knobSlices(container, chart) {
    container.replaceChildren();
    const times = chart.times_us;
    for (const knob of chart.knobs) {
      const panel = el("div", { class: "knob-panel" }, [
        el("h3", {}, [knob.name, " ", el("span", { class: "muted" }, [`spread ${knob.spread.toFixed(2)}×`])]),
      ]);
      const holder = el("div", { class: "plot" });
      panel.append(holder);
      container.append(panel);
      // Deterministic jitter in [-0.3, 0.3] from the config's rank, then everything sorted by x.
      const dots = times.map((t, i) => ({ x: knob.positions[i] + ((i * 0.618034) % 1 - 0.5) * 0.6, y: t, i }));
      const medians = knob.medians_us.map((m, v) => ({ x: v, m }));
      const xs = [...dots.map((d) => d.x), ...medians.map((m) => m.x)].sort((a, b) => a - b);
      const dotAt = new Map(dots.map((d) => [d.x, d])), medianAt = new Map(medians.map((m) => [m.x, m.m]));
      const data = [xs, xs.map((x) => (dotAt.has(x) ? dotAt.get(x).y : null)), xs.map((x) => (medianAt.has(x) ? medianAt.get(x) : null))];
      const n = knob.values.length;
      const longest = Math.max(...knob.values.map((v) => v.length));
      const crowded = Math.min(n, 12) * longest * 6 > 280;
      new uPlot({
        width: 360, height: 230,
        scales: { x: { time: false, range: () => [-0.6, n - 0.4] }, y: { distr: 3 } },
        axes: [
          // Every value labelled while they fit; past a dozen, every k-th (the tooltip names each).
          { values: (u, splits) => splits.map((v) => knob.values[v] ?? ""),
            splits: () => knob.values.map((_, i) => i).filter((i) => i % Math.ceil(n / 12) === 0),
            rotate: crowded ? 40 : 0, size: crowded ? 74 : 36, font: "10px system-ui" },
          { label: "µs", size: 50, font: "10px system-ui" },
        ],
        series: [
          {},
          { label: "configs", stroke: PALETTE[0], paths: () => null, points: { show: true, size: 4, stroke: PALETTE[0], fill: PALETTE[0] + "55", width: 1 } },
          { label: "median", stroke: PALETTE[1], width: 2, spanGaps: true, points: { show: true, size: 7, fill: PALETTE[1] } },
        ],
        legend: { show: false },
        cursor: { drag: { x: false, y: false }, points: { show: false } },
        plugins: [tooltipPlugin((u, idx) => {
          const v = Math.round(xs[idx]);
          if (knob.values[v] === undefined) return null;
          return [el("div", { class: "tip-head" }, [`${knob.name} = ${knob.values[v]}`]),
            el("div", {}, [`${knob.counts[v]} configs, median ${knob.medians_us[v].toFixed(2)} µs`])];
        })],
      }, data, holder);
    }
    container.dataset.knobs = String(chart.knobs.length);
  }

  const KINDS = { "speedup-bars": speedupBars, roofline, "knob-slices": knobSlices };

  document.addEventListener("DOMContentLoaded", () => {
    for (const container of document.querySelectorAll("[data-chart]")) {
      const draw = KINDS[container.dataset.chart];
      const chart = readJSON(container.dataset.source);
      if (draw && chart) draw(container, chart);
    }
  });

  window.tunerwebCharts = { PALETTE, el, readJSON, tooltipPlugin, plotWidth };
})();
