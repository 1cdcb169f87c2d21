// Job page: draws each run's progress from the job's JSON, which the page holds whole as it
// opens (with the job's facts, state and confirmations), and polls it for what is new until every
// run has settled (a cancelled run's worker still stores the batch it was measuring).
// Everything from the server is put in with textContent, never as HTML.
(function () {
  "use strict";
  const POLL_MS = 2000;
  const { PALETTE, el, readJSON, tooltipPlugin, plotWidth } = window.tunerwebCharts;
  // One marker colour per error kind (AutoTVM's MeasureErrorNo 1..8), plotted along the top.
  const FAILURE_COLORS = { 1: "#868e96", 2: "#e8590c", 3: "#f08c00", 4: "#c92a2a", 5: "#a61e4d", 6: "#5f3dc4", 7: "#364fc7", 8: "#212529" };

  const fmt = (x, digits) => (x === null || x === undefined ? "—" : Number(x).toFixed(digits));
  const usec = (s) => (s === null || s === undefined ? "—" : (s * 1e6).toFixed(2));

  // The plot's view: what the controls above it say.
  const view = { metric: "time", log: true };
  let plot = null, plotKey = "", latest = null;

  function runLabel(run) {
    return run.gpu + (run.replay ? " (replay)" : "");
  }

  // Aligned columns for uPlot: x = trial number 1..longest run; per run a series of its
  // trials (µs or GFLOPS; null where failed), its best-so-far line, and one series per error
  // kind it hit, along the top on a scale of its own.
  function plotData(progress) {
    const longest = Math.max(0, ...progress.runs.map((r) => r.points.record.length));
    const xs = Array.from({ length: longest }, (_, i) => i + 1);
    const data = [xs], series = [{ label: "trial" }], index = [];
    const better = view.metric === "time" ? (a, b) => a < b : (a, b) => a > b;
    progress.runs.forEach((run, r) => {
      const p = run.points, color = PALETTE[r % PALETTE.length];
      const value = (i) => (p.error[i] ? null : view.metric === "time" ? (p.cost[i] === null ? null : p.cost[i] * 1e6) : p.gflops[i]);
      const trials = xs.map((_, i) => (i < p.record.length ? value(i) : null));
      let best = null;
      const bestSoFar = xs.map((_, i) => {
        if (i >= p.record.length) return null;
        const v = value(i);
        if (v !== null && (best === null || better(v, best))) best = v;
        return best;
      });
      data.push(trials, bestSoFar);
      series.push(
        { label: `${runLabel(run)} trials`, stroke: color, fill: color, paths: () => null,
          points: { show: true, size: 5, stroke: color, fill: color + "88", width: 1 } },
        { label: `${runLabel(run)} best so far`, stroke: color, width: 2, points: { show: false } },
      );
      index.push({ run, kind: "trials", column: data.length - 2 });
      const kinds = [...new Set(p.error.filter((e) => e))].sort();
      for (const kind of kinds) {
        data.push(xs.map((_, i) => (i < p.error.length && p.error[i] === kind ? 0.97 - 0.04 * r : null)));
        const c = FAILURE_COLORS[kind] || "#000";
        series.push({ label: `${runLabel(run)}: ${progress.error_kinds[kind]}`, scale: "fail", stroke: c, paths: () => null,
          points: { show: true, size: 7, stroke: c, fill: "#fff", width: 2 } });
        index.push({ run, kind: "failure", column: data.length - 1 });
      }
    });
    return { data, series, index };
  }

  function describeTrial(progress, idx) {
    const nodes = [el("div", { class: "tip-head" }, [`trial ${idx + 1}`])];
    for (const run of progress.runs) {
      const p = run.points;
      if (idx >= p.record.length) continue;
      const failed = p.error[idx] !== 0;
      nodes.push(el("div", {}, [
        el("strong", {}, [runLabel(run)]), ` config ${p.config_index[idx]}: `,
        failed ? el("span", { class: "error" }, [progress.error_kinds[p.error[idx]]]) : `${usec(p.cost[idx])} µs, ${fmt(p.gflops[idx], 1)} GFLOPS`,
        " · ", el("a", { href: run.record_url_template.replace("/0/", `/${p.record[idx]}/`) }, [`record #${p.record[idx]}`]),
      ]));
    }
    nodes.push(el("div", { class: "muted" }, ["click to pin, then follow a link"]));
    return nodes;
  }

  // A pinned trial's knobs, read from the records API (the plot's data holds only indexes).
  function showKnobs(progress, idx, tip) {
    for (const run of progress.runs) {
      if (idx >= run.points.record.length) continue;
      const url = progress.record_api_template.replace("/0/", `/${run.points.record[idx]}/`);
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
        .then((record) => {
          const knobs = Object.entries(record.knobs).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
          tip.append(el("div", { class: "mono tip-knobs" }, [`${runLabel(run)}: ${knobs}`]));
        })
        .catch(() => {});
    }
  }

  function drawPlot(progress) {
    const holder = document.getElementById("job-plot");
    const { data, series, index } = plotData(progress);
    const key = `${view.metric}|${view.log}|` + series.map((s) => s.label).join("|");
    if (plot && key === plotKey) {
      plot.setData(data);
    } else {
      if (plot) plot.destroy();
      const opts = {
        width: plotWidth(holder), height: 340,
        scales: {
          x: { time: false },
          y: { distr: view.log ? 3 : 1 },
          fail: { range: [0, 1] },
        },
        axes: [
          { label: "trial" },
          { label: view.metric === "time" ? "time (µs)" : "GFLOPS", size: 64 },
        ],
        series,
        legend: { live: false },
        cursor: { drag: { x: true, y: false }, points: { show: false } },
        plugins: [tooltipPlugin((u, idx) => describeTrial(latest, idx), (u, idx, tip) => showKnobs(latest, idx, tip))],
      };
      holder.replaceChildren();
      plot = new uPlot(opts, data, holder);
      plotKey = key;
    }
    // What the plot holds, for people and browser tests: points drawn per run (trials and failures).
    const counts = {};
    for (const { run, column } of index) {
      counts[run.id] = (counts[run.id] || 0) + data[column].filter((v) => v !== null).length;
    }
    holder.dataset.points = JSON.stringify(counts);
  }

  function table(head, rows, className) {
    return el("table", className ? { class: className } : {}, [
      el("thead", {}, [el("tr", {}, head.map((h) => el("th", {}, [h])))]),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, [c]))))),
    ]);
  }

  function failureCell(trial) {
    if (!trial.error) return "";
    if (!trial.error_msg) return el("span", { class: "error" }, [trial.error]);
    return el("details", { class: "error-msg" }, [el("summary", { class: "error" }, [trial.error]), el("pre", { class: "mono" }, [trial.error_msg])]);
  }

  function runSection(run) {
    const section = el("section", { class: "run", id: `run-${run.id}`, "data-state": run.state }, [
      el("h2", {}, [`${runLabel(run)}: `, el("span", { class: `state state-${run.state}` }, [run.state])]),
    ]);
    section.append(el("p", { class: "facts" }, [
      el("span", { class: "trials" }, [`${run.trials_done} / ${run.trials_planned} trials`]),
      " · best ", el("strong", { class: "best-gflops" }, [fmt(run.best_gflops, 1)]), " GFLOPS",
      ` (${usec(run.best_cost)} µs)`,
      run.worker ? ` · worker ${run.worker}` : "",
      run.attempts > 1 ? ` · resumed ${run.attempts - 1}×` : "",
      run.started_at ? ` · started ${run.started_at.slice(0, 19).replace("T", " ")} UTC` : "",
      run.finished_at ? ` · finished ${run.finished_at.slice(0, 19).replace("T", " ")} UTC` : "",
      run.state === "cancelled" && !run.settled ? " · storing the batch in hand…" : "",
    ]));
    if (run.message) section.append(el("p", { class: "muted message" }, [run.message]));
    if (run.waiting_for_worker) section.append(el("p", { class: "error waiting" }, [run.waiting_for_worker]));
    section.append(el("progress", { max: run.trials_planned, value: run.trials_done }, []));
    if (run.best_entity) {
      const links = el("p", { class: "actions" }, []);
      if (run.diff_url) links.append(el("a", { href: run.diff_url, class: "diff-link" }, ["Diff against the leaderboard best"]));
      if (run.download_url) links.append(el("a", { href: run.download_url, class: "download-link" }, ["Download best config (AutoTVM log)"]));
      links.append(el("a", { href: run.best_record_url }, [`Record #${run.best_record}`]));
      if (run.knobs_url) links.append(el("a", { href: run.knobs_url, class: "knobs-link" }, ["Knobs against time"]));
      section.append(el("h3", {}, ["Best config"]), table(["knob", "value"], run.best_entity.map((k) => [k[0], JSON.stringify(k[2])])), links);
    }
    section.append(el("h3", {}, ["Failures by kind"]));
    section.append(run.failures.length ? table(["kind", "count"], run.failures.map((f) => [f.kind, f.count])) : el("p", { class: "muted" }, ["none"]));
    section.append(el("h3", {}, ["Latest trials"]));
    section.append(table(["trial", "config", "µs", "GFLOPS", "error"],
      run.trials.map((t) => [t.number, el("a", { href: t.record_url }, [t.config_index]), usec(t.mean_cost), fmt(t.gflops, 1), failureCell(t)]),
      "trials"));
    return section;
  }

  function draw(progress) {
    latest = progress;
    for (const run of progress.runs) run.record_url_template = progress.record_url_template;
    drawPlot(progress);
    document.getElementById("runs").replaceChildren(...progress.runs.map(runSection));
    const state = document.getElementById("job-state");
    state.textContent = progress.state;
    state.className = `state state-${progress.state}`;
    document.body.dataset.jobState = progress.state;
    document.body.dataset.settled = String(progress.settled);
    const cancel = document.getElementById("cancel-form");
    if (cancel && !["queued", "running"].includes(progress.state)) cancel.remove();
  }

  // Each poll after the first asks only for what was stored since the last record it has of each
  // run (`?since=<run>:<record>,...`); a run's answer then says `points_after` and holds the points
  // and latest trials after it.
  function sinceQuery(progress) {
    const parts = progress.runs.filter((run) => run.points.record.length)
      .map((run) => `${run.id}:${run.points.record[run.points.record.length - 1]}`);
    return parts.length ? `?since=${parts.join(",")}` : "";
  }

  function withEarlierPoints(progress, earlier) {
    const before = new Map(earlier.runs.map((run) => [run.id, run]));
    for (const run of progress.runs) {
      const old = before.get(run.id);
      if (run.points_after === undefined || !old) continue;
      for (const column of Object.keys(run.points)) run.points[column] = old.points[column].concat(run.points[column]);
      run.convergence = old.convergence.concat(run.convergence);
      run.trials = run.trials.concat(old.trials).slice(0, progress.trial_rows);  // newest first
      delete run.points_after;
    }
    return progress;
  }

  function poll(url) {
    fetch(url + sinceQuery(latest), { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
      .then((progress) => {
        draw(withEarlierPoints(progress, latest));
        if (!progress.settled) setTimeout(() => poll(url), POLL_MS);
      })
      .catch(() => setTimeout(() => poll(url), POLL_MS * 3));
  }

  function controls() {
    const metric = document.getElementById("plot-metric");
    const log = document.getElementById("plot-log");
    metric.addEventListener("change", () => { view.metric = metric.value; drawPlot(latest); });
    log.addEventListener("change", () => { view.log = log.checked; drawPlot(latest); });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const progress = readJSON("job-progress");
    draw(progress);  // before the controls, which redraw `latest`
    controls();
    if (!progress.settled) setTimeout(() => poll(document.getElementById("runs").dataset.progressUrl), POLL_MS);
  });
})();
