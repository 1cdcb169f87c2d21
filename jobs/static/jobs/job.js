// Job page: draws each run's progress from the job's JSON and polls it while the job is active
// (jobs/live.js). Everything from the server is put in with textContent, never as HTML.
(function () {
  "use strict";
  const { el, svgEl, table, fmt, usec, follow } = window.tunerwebLive;

  function plot(points) {
    const w = 480, h = 180, pad = 34;
    const svg = svgEl("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, class: "convergence", role: "img" });
    const known = points.filter((p) => p[1] !== null);
    const maxX = Math.max(1, points.length ? points[points.length - 1][0] : 1);
    const maxY = Math.max(1e-9, ...known.map((p) => p[1]));
    const x = (v) => pad + (v / maxX) * (w - pad - 8);
    const y = (v) => h - pad + 6 - (v / maxY) * (h - pad - 8);
    const line = (x1, y1, x2, y2) => {
      svg.append(svgEl("line", { x1, y1, x2, y2, stroke: "#889", "stroke-width": 1 }));
    };
    const text = (tx, ty, s, anchor) => {
      const t = svgEl("text", { x: tx, y: ty, "font-size": 10, "text-anchor": anchor || "start" });
      t.textContent = s;
      svg.append(t);
    };
    line(pad, h - pad + 6, w - 8, h - pad + 6);
    line(pad, 8, pad, h - pad + 6);
    text(pad - 4, 14, fmt(maxY, 0), "end");
    text(pad - 4, h - pad + 6, "0", "end");
    text(w - 8, h - 6, `trial ${maxX}`, "end");
    text(pad + 4, 14, "best GFLOPS so far");
    if (known.length) {
      const points = known.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
      svg.append(svgEl("polyline", { points, fill: "none", stroke: "#0b63c5", "stroke-width": 2 }));
    }
    return svg;
  }

  function runSection(run) {
    const gpu = run.gpu + (run.replay ? " (replay)" : "");
    const section = el("section", { class: "run", id: `run-${run.id}`, "data-state": run.state }, [
      el("h2", {}, [`${gpu}: `, el("span", { class: `state state-${run.state}` }, [run.state])]),
    ]);
    const facts = el("p", { class: "facts" }, [
      el("span", { class: "trials" }, [`${run.trials_done} / ${run.trials_planned} trials`]),
      " · best ", el("strong", { class: "best-gflops" }, [fmt(run.best_gflops, 1)]), " GFLOPS",
      ` (${usec(run.best_cost)} µs)`,
      run.worker ? ` · worker ${run.worker}` : "",
      run.attempts > 1 ? ` · resumed ${run.attempts - 1}×` : "",
      run.started_at ? ` · started ${run.started_at.slice(0, 19).replace("T", " ")}` : "",
      run.finished_at ? ` · finished ${run.finished_at.slice(0, 19).replace("T", " ")}` : "",
    ]);
    section.append(facts);
    if (run.message) section.append(el("p", { class: "muted message" }, [run.message]));
    const bar = el("progress", { max: run.trials_planned, value: run.trials_done }, []);
    section.append(bar);
    section.append(el("div", {}, [plot(run.convergence)]));
    if (run.best_entity) {
      const links = el("p", { class: "actions" }, []);
      if (run.diff_url) links.append(el("a", { href: run.diff_url, class: "diff-link" }, ["Diff against the leaderboard best"]));
      if (run.download_url) links.append(el("a", { href: run.download_url, class: "download-link" }, ["Download best config (AutoTVM log)"]));
      links.append(el("a", { href: run.best_record_url }, [`Record #${run.best_record}`]));
      section.append(el("h3", {}, ["Best config"]), table(["knob", "value"], run.best_entity.map((k) => [k[0], JSON.stringify(k[2])])), links);
    }
    section.append(el("h3", {}, ["Failures by kind"]));
    section.append(run.failures.length ? table(["kind", "count"], run.failures.map((f) => [f.kind, f.count])) : el("p", { class: "muted" }, ["none"]));
    section.append(el("h3", {}, ["Latest trials"]));
    section.append(table(["trial", "config", "µs", "GFLOPS", "error"],
      run.trials.map((t) => [t.number, t.config_index, usec(t.mean_cost), fmt(t.gflops, 1), t.error])));
    return section;
  }

  follow((progress) => document.getElementById("runs").replaceChildren(...progress.runs.map(runSection)),
         document.getElementById("runs").dataset.progressUrl);
})();
