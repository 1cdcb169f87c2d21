// Network job page: per GPU model, the network's estimated time against the vendor's over
// the trials, and each task's progress; polls the job's JSON while the job is active
// (jobs/live.js). Everything from the server is put in with textContent, never as HTML.
(function () {
  "use strict";
  const { el, svgEl, table, fmt, usec, follow } = window.tunerwebLive;

  // Estimated network time (µs) against trials spent; the vendor's time as a dashed line.
  function timeline(points, vendor) {
    const w = 560, h = 200, pad = 44;
    const svg = svgEl("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, class: "timeline", role: "img" });
    const ys = points.map((p) => p.estimate).concat(vendor ? [vendor] : []);
    const maxX = Math.max(1, ...points.map((p) => p.trials));
    const maxY = Math.max(1e-12, ...ys);
    const x = (v) => pad + (v / maxX) * (w - pad - 8);
    const y = (v) => h - pad + 6 - (v / maxY) * (h - pad - 8);
    const text = (tx, ty, s, anchor) => {
      const t = svgEl("text", { x: tx, y: ty, "font-size": 10, "text-anchor": anchor || "start" });
      t.textContent = s;
      svg.append(t);
    };
    svg.append(svgEl("line", { x1: pad, y1: h - pad + 6, x2: w - 8, y2: h - pad + 6, stroke: "#889" }));
    svg.append(svgEl("line", { x1: pad, y1: 8, x2: pad, y2: h - pad + 6, stroke: "#889" }));
    text(pad - 4, 14, usec(maxY), "end");
    text(pad - 4, h - pad + 6, "0", "end");
    text(w - 8, h - 6, `trials ${maxX}`, "end");
    text(pad + 4, 14, "estimated network time, µs (Σ best × occurrences)");
    if (vendor) {
      svg.append(svgEl("line", { x1: pad, y1: y(vendor), x2: w - 8, y2: y(vendor), stroke: "#c0392b", "stroke-dasharray": "4 3" }));
      text(w - 10, y(vendor) - 3, `vendor ${usec(vendor)}`, "end");
    }
    if (points.length) {
      const steps = points.map((p) => `${x(p.trials).toFixed(1)},${y(p.estimate).toFixed(1)}`).join(" ");
      svg.append(svgEl("polyline", { points: steps, fill: "none", stroke: "#0b63c5", "stroke-width": 2 }));
    }
    return svg;
  }

  function taskRow(t) {
    const bar = el("progress", { max: Math.max(1, t.trials_planned), value: t.trials_done }, []);
    return [
      el("a", { href: t.leaderboard_url }, [t.label]), `×${t.weight}`, el("span", { class: "mono muted" }, [t.shape]),
      el("span", { class: `state state-${t.state}` }, [t.state.replace("_", " ")]),
      el("span", {}, [bar, ` ${t.trials_done} / ${t.trials_planned}`]),
      usec(t.best_cost), fmt(t.best_gflops, 1), usec(t.vendor_cost), t.speedup ? `${fmt(t.speedup, 2)}×` : "—",
      t.network_share ? `${fmt(t.network_share * 100, 1)} %` : "—", t.worker || "",
    ];
  }

  function gpuSection(gpu) {
    const name = gpu.gpu + (gpu.replay ? " (replay)" : "");
    const missing = gpu.vendor_missing.length ? ` (no vendor time for ${gpu.vendor_missing.join(", ")})` : "";
    return el("section", { class: "gpu", id: `gpu-${gpu.gpu}` }, [
      el("h2", {}, [name]),
      el("p", { class: "facts" }, [
        el("span", { class: "trials" }, [`${gpu.trials_done} / ${gpu.trials_allotted} trials given out`]),
        " · network estimate ", el("strong", { class: "estimate" }, [usec(gpu.estimate)]), " µs",
        " · vendor ", el("strong", { class: "vendor-estimate" }, [usec(gpu.vendor_estimate)]), " µs", missing,
        gpu.speedup ? ` · ${fmt(gpu.speedup, 2)}× the vendor's speed` : "",
      ]),
      el("div", {}, [timeline(gpu.timeline, gpu.vendor_estimate)]),
      table(["task", "occurs", "shape", "state", "trials", "best µs", "GFLOPS", "vendor µs", "speedup", "share", "worker"],
        gpu.tasks.map(taskRow), { class: "tasks" }),
    ]);
  }

  follow((progress) => document.getElementById("gpus").replaceChildren(...progress.gpus.map(gpuSection)),
         document.getElementById("gpus").dataset.progressUrl);
})();
