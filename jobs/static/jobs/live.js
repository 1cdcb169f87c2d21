// What the job pages share: building DOM from server data (always as text, never as HTML),
// number formats, and following a job's JSON: draw it now, poll it while the job is active.
(function () {
  "use strict";
  const ACTIVE = ["queued", "running"];
  const POLL_MS = 2000;
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const child of children || []) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }
  function svgEl(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }
  function table(head, rows, attrs) {
    return el("table", attrs || {}, [
      el("thead", {}, [el("tr", {}, head.map((h) => el("th", {}, [h])))]),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, [c]))))),
    ]);
  }
  const fmt = (x, digits) => (x === null || x === undefined ? "—" : Number(x).toFixed(digits));
  const usec = (s) => (s === null || s === undefined ? "—" : (s * 1e6).toFixed(2));

  // The job's state in the heading and on <body>; the cancel button goes once the job has ended.
  function showState(progress) {
    const state = document.getElementById("job-state");
    state.textContent = progress.state;
    state.className = `state state-${progress.state}`;
    document.body.dataset.jobState = progress.state;
    const cancel = document.getElementById("cancel-form");
    if (cancel && !ACTIVE.includes(progress.state)) cancel.remove();
  }

  // Draw the progress embedded in the page, then poll `url` while the job is active.
  function follow(draw, url) {
    const render = (progress) => {
      draw(progress);
      showState(progress);
      return ACTIVE.includes(progress.state);
    };
    const poll = () =>
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
        .then((progress) => { if (render(progress)) setTimeout(poll, POLL_MS); })
        .catch(() => setTimeout(poll, POLL_MS * 3));
    document.addEventListener("DOMContentLoaded", () => {
      if (render(JSON.parse(document.getElementById("job-progress").textContent))) setTimeout(poll, POLL_MS);
    });
  }

  window.tunerwebLive = { el, svgEl, table, fmt, usec, follow };
})();
