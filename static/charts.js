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
  // cursor (or null for none). Hovering shows it; a click pins it in place until the next click.
  function tooltipPlugin(describe) {
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

  // One bar per x label (whiskers from lo to hi where given), and dashed horizontal lines
  // (a geometric mean) across the whole chart.
  function barChart(container, spec) {
    const n = spec.labels.length;
    const xs = spec.labels.map((_, i) => i);
    const color = spec.color || PALETTE[0];
    const data = [xs, spec.values];
    const series = [{}, {
      label: spec.label, stroke: color, fill: color + "bb", width: 1,
      paths: uPlot.paths.bars({ size: [0.7, 70] }), points: { show: false },
    }];
    if (spec.lo && spec.hi) {
      data.push(spec.lo, spec.hi);
      const whisker = { stroke: "#14202e", width: 0, points: { show: true, size: 8, stroke: "#14202e", fill: "#14202e", width: 1 }, paths: () => null };
      series.push({ ...whisker, label: "interval low" }, { ...whisker, label: "interval high" });
    }
    for (const line of spec.lines || []) {
      data.push(xs.map(() => line.value));
      series.push({ label: line.label, stroke: line.color || "#14202e", width: 2, dash: [6, 4], points: { show: false } });
    }
    const opts = {
      width: plotWidth(container), height: spec.height || 300,
      scales: {
        x: { time: false, range: () => [-0.6, n - 0.4] },
        y: { distr: spec.logY ? 3 : 1, range: spec.range || ((u, lo, hi) => [0, hi * 1.08]) },
      },
      axes: [
        { values: (u, splits) => splits.map((v) => spec.labels[v] ?? ""), splits: () => xs,
          rotate: n > 12 ? -50 : 0, size: n > 12 ? 80 : 40, gap: 4 },
        { label: spec.yLabel, size: 60 },
      ],
      series,
      legend: { live: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      plugins: [tooltipPlugin((u, idx) => (spec.describe ? spec.describe(idx) : null))],
    };
    container.replaceChildren();
    const plot = new uPlot(opts, data, container);
    container.dataset.bars = String(n);
    return plot;
  }

  window.tunerwebCharts = { PALETTE, el, readJSON, tooltipPlugin, plotWidth, barChart };
})();
