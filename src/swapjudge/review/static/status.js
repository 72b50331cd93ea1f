// The owner's status page: figures from /api/status, refreshed every few seconds; every text via textContent.
"use strict";
(() => {
  const token = new URLSearchParams(window.location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";

  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
  const num = (x, d) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
  const span = (v, lo, hi, f) => (v === null || v === undefined ? "–" : f(v) + " (" + f(lo) + "–" + f(hi) + ")");

  function row(cells) {
    const tr = document.createElement("tr");
    for (const text of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    return tr;
  }

  function fill(id, rows) {
    const body = $(id).querySelector("tbody");
    body.replaceChildren(...rows.map(row));
  }

  function svg(name, attrs) {
    const el = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    return el;
  }

  function chart(history) {
    const box = $("history");
    box.replaceChildren();
    if (!history.length) return;
    const w = 640, h = 220, pad = 36;
    const maxVotes = history[history.length - 1].votes;
    const x = (n) => pad + (w - 2 * pad) * (n / Math.max(1, maxVotes));
    const y = (p) => h - pad - (h - 2 * pad) * p;
    box.appendChild(svg("line", { x1: pad, y1: y(0.5), x2: w - pad, y2: y(0.5), stroke: "#d9dee7" }));
    for (const p of [0, 0.5, 1]) {
      const label = svg("text", { x: 4, y: y(p) + 4, "font-size": 11, fill: "#5b6475" });
      label.textContent = (100 * p).toFixed(0) + "%";
      box.appendChild(label);
    }
    for (const point of history) {
      if (point.low === null) continue;
      box.appendChild(svg("line", { x1: x(point.votes), y1: y(point.low), x2: x(point.votes), y2: y(point.high),
                                    stroke: "#2f5fd0", "stroke-width": 3 }));
      box.appendChild(svg("circle", { cx: x(point.votes), cy: y(point.value), r: 3, fill: "#1d2330" }));
    }
    const axis = svg("text", { x: w - pad, y: h - 8, "font-size": 11, fill: "#5b6475", "text-anchor": "end" });
    axis.textContent = "sample votes: " + maxVotes;
    box.appendChild(axis);
  }

  function render(s) {
    $("bar").max = Math.max(1, s.total);
    $("bar").value = s.votes;
    $("count").textContent = s.votes + " / " + s.total + " votes";
    fill("reviewers", s.reviewers.map((r) => {
      const c = r.consistency, f = r.flip_direction, k = r.agreement_with_judge;
      return [r.reviewer, r.votes + " / " + r.total, String(r.sample_votes), String(r.queue_votes),
              String(r.reshown_pairs), c ? span(c.rate, c.low, c.high, pct) : "–",
              f && f.first + f.second > 0 ? span(f.first_share, f.low, f.high, pct) : "–",
              k ? span(k.value, k.low, k.high, (v) => num(v, 2)) : "–", num(r.median_seconds, 1)];
    }));
    fill("between", s.between_reviewers.map((b) => [b.reviewers.join(" · "), String(b.kappa.items),
                                                    pct(b.agreement), span(b.kappa.value, b.kappa.low,
                                                                           b.kappa.high, (v) => num(v, 2))]));
    const c = s.calibration;
    if (c) {
      const level = Math.round(100 * c.confidence) + "%";
      $("calibration").textContent = "corrected: " + span(c.corrected.value, c.corrected.low, c.corrected.high, pct)
        + " (" + level + " interval over items), from " + c.n_human + " reviewed items and " + c.n_judge
        + " judged; people alone: " + span(c.human_only.value, c.human_only.low, c.human_only.high, pct);
    }
    chart(s.calibration_history);
    $("notes").replaceChildren(...[...s.notes, ...(c ? c.notes : [])].map((n) => {
      const li = document.createElement("li");
      li.textContent = n;
      return li;
    }));
    document.body.dataset.state = "ready";
    document.body.dataset.votes = String(s.votes);
  }

  async function refresh() {
    try {
      const reply = await fetch("/api/status", { headers: { Authorization: "Bearer " + token }, cache: "no-store",
                                                 credentials: "omit" });
      const data = await reply.json();
      if (!reply.ok) throw new Error(data.error || String(reply.status));
      render(data);
      $("message").textContent = "updated " + new Date().toLocaleTimeString();
    } catch (err) {
      $("message").textContent = "cannot load the status: " + err.message;
    }
  }

  refresh();
  setInterval(refresh, 3000);
})();
