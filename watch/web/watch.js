// murmur watch's page: draws the JSON document murmur watch pushes on
// /events (docs/metrics.md, "murmur watch"). Chart.js is Debian's, served
// by murmur. The DOM carries what the tests read: #round[data-round],
// canvas[data-points], #topology[data-peers][data-links] with .peer and
// .link elements whose data-state is their state and, for links,
// data-bps the bytes per second over it (both directions).
"use strict";

const PALETTE = ["#58a6ff", "#3fb950", "#d29922", "#db61a2", "#a371f7", "#39c5cf",
  "#f0883e", "#8b949e", "#ff7b72", "#7ee787", "#e3b341", "#79c0ff"];
const colour = (i) => PALETTE[i % PALETTE.length];
// a peer whose process is gone (killed, dead) or cannot be told from one (silent)
const GONE = ["killed", "dead", "silent"];
const $ = (id) => document.getElementById(id);
const num = (v) => (v === null || v === undefined || !isFinite(v)) ? 0 : v;
const fmt = (v, d = 3) => (v === null || v === undefined || !isFinite(v)) ? "–" : Number(v).toPrecision(d);
const pct = (v) => (v === null || v === undefined || !isFinite(v)) ? "–" : (100 * v).toFixed(1) + "%";
const bytes = (v) => {
  if (!isFinite(v)) return "–";
  const u = ["B", "kB", "MB", "GB", "TB"]; let i = 0;
  while (v >= 1000 && i < u.length - 1) { v /= 1000; i++; }
  return v.toFixed(v < 10 ? 1 : 0) + " " + u[i];
};

Chart.defaults.color = "#8b949e";
Chart.defaults.borderColor = "#30363d";
Chart.defaults.font.size = 11;
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.plugins.legend.labels.boxWidth = 10;

// Error bars (a sweep's ± sd), drawn after the points: a point may carry
// xMin, xMax, yMin, yMax.
const errorBars = {
  id: "errorBars",
  afterDatasetsDraw(chart) {
    const { ctx, scales: { x, y } } = chart;
    ctx.save();
    chart.data.datasets.forEach((ds, i) => {
      if (!chart.isDatasetVisible(i)) return;
      ctx.strokeStyle = ds.borderColor; ctx.lineWidth = 1.5;
      for (const p of ds.data) {
        const px = x.getPixelForValue(p.x), py = y.getPixelForValue(p.y);
        const seg = (x0, y0, x1, y1) => { ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke(); };
        if (isFinite(p.yMin) && isFinite(p.yMax)) {
          const a = y.getPixelForValue(p.yMin), b = y.getPixelForValue(p.yMax);
          seg(px, a, px, b); seg(px - 4, a, px + 4, a); seg(px - 4, b, px + 4, b);
        }
        if (isFinite(p.xMin) && isFinite(p.xMax) && p.xMin > 0) {
          const a = x.getPixelForValue(p.xMin), b = x.getPixelForValue(p.xMax);
          seg(a, py, b, py); seg(a, py - 4, a, py + 4); seg(b, py - 4, b, py + 4);
        }
      }
    });
    ctx.restore();
  },
};

const charts = {};
const linkSeries = new Map();
function chart(id, cfg) {
  if (!charts[id]) charts[id] = new Chart($(id), cfg);
  return charts[id];
}
function setData(id, cfg, datasets) {
  const c = chart(id, cfg);
  c.data.datasets = datasets;
  c.update("none");
  $(id).dataset.points = datasets.reduce((n, d) => n + d.data.length, 0);
}
const axes = (xTitle, yTitle, yType = "linear", xType = "linear") => ({
  x: { type: xType, title: { display: true, text: xTitle } },
  y: { type: yType, title: { display: true, text: yTitle } },
});
const lineCfg = (xTitle, yTitle, yType) => ({
  type: "line", data: { datasets: [] },
  options: { parsing: false, normalized: true, scales: axes(xTitle, yTitle, yType),
    elements: { point: { radius: 0 }, line: { borderWidth: 1.5, tension: 0.2 } },
    plugins: { legend: { display: false } } },
});
const peerLine = (p, data) => ({ label: "peer " + p.id, data, borderColor: colour(p.id), backgroundColor: colour(p.id) });
const meanLine = (data) => ({ label: "mean", data, borderColor: "#ffffff", borderWidth: 2.5, backgroundColor: "#fff" });

// The mean over peers of a per-round value, rounds where every peer has one.
function meanByRound(series) {
  const acc = new Map();
  for (const s of series) for (const pt of s) {
    const a = acc.get(pt.x) || [0, 0]; a[0] += pt.y; a[1]++; acc.set(pt.x, a);
  }
  return [...acc.entries()].filter(([, a]) => a[1] === series.length)
    .map(([x, a]) => ({ x, y: a[0] / a[1] })).sort((a, b) => a.x - b.x);
}

// ---- a run --------------------------------------------------------------------

function drawTopology(doc) {
  const svg = $("topology"), n = Math.max(doc.n, doc.peers.length);
  const pos = (i) => { const a = -Math.PI / 2 + 2 * Math.PI * i / n; return [0.82 * Math.cos(a), 0.82 * Math.sin(a)]; };
  const ns = "http://www.w3.org/2000/svg";
  const el = (tag, attrs, parent) => {
    const e = document.createElementNS(ns, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    parent.appendChild(e); return e;
  };
  svg.textContent = "";
  const seen = new Set();
  let links = 0;
  for (const l of doc.links) {
    // one line per pair: the worse of the two directions wins
    const key = Math.min(l.from, l.to) + "-" + Math.max(l.from, l.to);
    const rank = { missing: 4, refused: 3, slow: 2, up: 1, idle: 0 };
    const other = doc.links.find((m) => m.from === l.to && m.to === l.from);
    const state = other && rank[other.state] > rank[l.state] ? other.state : l.state;
    if (seen.has(key)) continue;
    seen.add(key);
    const [x1, y1] = pos(l.from), [x2, y2] = pos(l.to);
    const bps = num(l.bps) + (other ? num(other.bps) : 0);
    const line = el("line", { x1, y1, x2, y2, class: "link " + state, "data-from": l.from, "data-to": l.to,
      "data-state": state, "data-bps": bps }, svg);
    const d = isFinite(l.dist) && l.dist !== null ? " ‖x−x‖ " + fmt(l.dist) : "";
    el("title", {}, line).textContent = `${l.from} – ${l.to}: ${state}${d} · ${bytes(bps)}/s`;
    if (n <= 16 && bps > 0) {
      // inside the circle of peers, clear of their labels below them
      const mx = 0.7 * (x1 + x2) / 2, my = 0.7 * (y1 + y2) / 2;
      el("text", { x: mx, y: my, class: "rate" }, svg).textContent = bytes(bps) + "/s";
    }
    links++;
  }
  const r = n > 24 ? 0.05 : n > 12 ? 0.075 : 0.11;
  // --deadline learn, --fit-work: whose vector ended each peer's last wait
  const paced = new Map();
  for (const p of doc.peers)
    if (p.pace && p.pace.paced_by !== p.id) paced.set(p.pace.paced_by, (paced.get(p.pace.paced_by) || 0) + 1);
  for (const p of doc.peers) {
    const [x, y] = pos(p.id);
    const g = el("g", { class: "peer " + p.state, "data-id": p.id, "data-state": p.state }, svg);
    if (GONE.includes(p.state)) el("circle", { cx: x, cy: y, r: r * 1.45, class: "ring" }, g);
    if (paced.has(p.id)) el("circle", { cx: x, cy: y, r: r * 1.3, class: "pacer" }, g);
    el("circle", { cx: x, cy: y, r }, g);
    if (n <= 32) {
      el("text", { x, y }, g).textContent = p.id;
      el("text", { x: x * 1.0, y: y + r + 0.08, class: "tag" }, g).textContent = p.state + " · r" + p.round;
    }
    el("title", {}, g).textContent = `peer ${p.id}: ${p.state}, round ${p.round}` + (p.end && p.end !== "done" ? ` (${p.end})` : "") + (p.pace
      ? `; last round: paced by ${p.pace.paced_by === p.id ? "itself" : "peer " + p.pace.paced_by}, waited ${fmt(p.pace.waited)} s ` +
        `(deadline ${fmt(p.pace.deadline)} s), batch ${p.pace.batch}, ${p.pace.steps} steps` +
        (paced.has(p.id) ? `; set the pace of ${paced.get(p.id)} peer(s)` : "") : "");
    g.dataset.pacedBy = p.pace ? p.pace.paced_by : "";
  }
  svg.dataset.peers = doc.peers.length;
  svg.dataset.links = links;
  $("topo-legend").innerHTML =
    ["up", "slow", "refused", "missing"].map((s) => `<span><i style="background:var(--${s})"></i>${s}</span>`).join("") +
    ["running", "waiting", "isolated", "done", "killed", "dead", "silent"].map((s) => `<span><i class="dot" style="background:var(--${s})"></i>${s}</span>`).join("");
}

function drawRun(doc) {
  const round = doc.peers.reduce((m, p) => Math.max(m, p.round), 0);
  $("round").textContent = round; $("round").dataset.round = round;
  const xiRows = doc.rows.filter((w) => w.xi !== null && w.xi > 0);
  const lastEval = [...doc.rows].reverse().find((w) => w.acc !== null);
  $("acc").textContent = lastEval ? pct(lastEval.acc) : "–";
  $("xi").textContent = xiRows.length ? fmt(xiRows[xiRows.length - 1].xi) : "–";
  $("facts").textContent = [doc.algo, doc.topology, doc.n + " peers", doc.codec].filter(Boolean).join(" · ");
  drawTopology(doc);

  const exact = xiRows.filter((w) => w.method === "exact"), est = xiRows.filter((w) => w.method !== "exact");
  setData("chart-consensus", lineCfg("round", "Ξ (log)", "logarithmic"), [
    { label: "exact", data: exact.map((w) => ({ x: w.round, y: w.xi })), borderColor: "#58a6ff", backgroundColor: "#58a6ff", pointRadius: 3, showLine: true },
    { label: "estimated", data: est.map((w) => ({ x: w.round, y: w.xi })), borderColor: "#a371f7", backgroundColor: "transparent", pointRadius: 3, pointBorderWidth: 1.5, showLine: false },
  ]);
  const ax = xiRows.filter((w) => w.acc !== null);
  const last = ax.length ? ax[ax.length - 1].round || 1 : 1;
  setData("chart-acc-xi", { type: "scatter", data: { datasets: [] },
    // parsed (not parsing: false, which Chart.js takes as sorted by x and
    // then sizes the x axis from the first and last points only)
    options: { scales: axes("consensus distance Ξ (log)", "mean accuracy", "linear", "logarithmic"), plugins: { legend: { display: false } } } },
  [{ label: "rounds", data: ax.map((w) => ({ x: w.xi, y: w.acc, r: w.round })), showLine: true,
     borderWidth: 1, segment: { borderColor: "rgba(88,166,255,0.25)" }, pointRadius: 4, backgroundColor: ax.map((w) => `rgba(88,166,255,${0.25 + 0.75 * w.round / last})`), borderColor: "#58a6ff" }]);

  const loss = doc.peers.map((p) => p.rounds.filter((r) => r[2] !== null).map((r) => ({ x: r[0], y: r[2] })));
  const hasLoss = loss.some((s) => s.length);
  setData("chart-loss", lineCfg("round", hasLoss ? "loss (nats/byte)" : "no training (--no-train)"),
    hasLoss ? [...doc.peers.map((p, i) => peerLine(p, loss[i])), meanLine(meanByRound(loss))] : []);
  const acc = doc.peers.map((p) => p.evals.filter((e) => e[1] !== null).map((e) => ({ x: e[0], y: e[1] })));
  setData("chart-acc", lineCfg("round", "next-byte accuracy"),
    [...doc.peers.map((p, i) => ({ ...peerLine(p, acc[i]), pointRadius: 2 })), { ...meanLine(meanByRound(acc)), pointRadius: 2 }]);

  // over windows of at least a second (a round's bytes arrive in bursts)
  const rate = doc.peers.map((p) => {
    const out = [];
    let a = p.rounds[0];
    for (let k = 1; k < p.rounds.length; k++) {
      const b = p.rounds[k];
      if (b[1] - a[1] >= 1 || k === p.rounds.length - 1 && b[1] > a[1]) {
        out.push({ x: b[1], y: (b[3] - a[3]) / (b[1] - a[1]) });
        a = b;
      }
    }
    return out;
  });
  const bytesCfg = lineCfg("wall time (s)", "sent per second");
  bytesCfg.options.scales.y.ticks = { callback: (v) => bytes(v) + "/s" };
  bytesCfg.options.scales.y.beginAtZero = true;
  setData("chart-bytes", bytesCfg, doc.peers.map((p, i) => peerLine(p, rate[i])));

  // each link's bytes per second as its receiver's round lines count them,
  // one point per update since the page opened (x: the receiver's time)
  for (const l of doc.links) {
    if (l.bps === null || l.time === null) continue;
    const key = l.from + "→" + l.to, s = linkSeries.get(key) || [];
    if (!s.length || l.time > s[s.length - 1].x) s.push({ x: l.time, y: l.bps });
    if (s.length > 400) s.shift();
    linkSeries.set(key, s);
  }
  const linkCfg = lineCfg("wall time (s)", "received per second");
  linkCfg.options.scales.y.ticks = { callback: (v) => bytes(v) + "/s" };
  linkCfg.options.scales.y.beginAtZero = true;
  setData("chart-links", linkCfg, [...linkSeries.entries()].map(([key, data]) => {
    const [from, to] = key.split("→").map(Number);
    return { label: key, data, borderColor: colour(from), backgroundColor: colour(from), borderDash: from > to ? [4, 3] : [] };
  }));

  const split = doc.peers.map((p) => p.rounds.length ? p.rounds[p.rounds.length - 1] : null);
  const part = (k) => split.map((r) => r ? r[k] : 0);
  const c = chart("chart-split", { type: "bar", data: { labels: [], datasets: [] },
    options: { indexAxis: "y", scales: { x: { stacked: true, title: { display: true, text: "seconds" } }, y: { stacked: true } } } });
  c.data.labels = doc.peers.map((p) => "peer " + p.id);
  c.data.datasets = [
    { label: "compute", data: part(4), backgroundColor: "#3fb950" },
    { label: "mix", data: part(5), backgroundColor: "#58a6ff" },
    { label: "wait", data: part(6), backgroundColor: "#d29922" },
  ];
  c.update("none");
  $("chart-split").dataset.points = doc.peers.length;

  $("peers").tBodies[0].innerHTML = doc.peers.map((p) => {
    const r = p.rounds.length ? p.rounds[p.rounds.length - 1] : null;
    return `<tr data-id="${p.id}" data-state="${p.state}"><td><span class="swatch" style="background:${colour(p.id)}"></span>${p.id}</td>` +
      `<td><span class="badge ${p.state}">${p.state}</span>${p.end && p.end !== "done" ? " " + p.end : ""}</td>` +
      `<td>${p.round}</td><td>${fmt(p.loss, 4)}</td><td>${pct(p.acc)}</td>` +
      `<td>${isFinite(p.age) && p.age !== null ? Math.max(0, p.age).toFixed(1) + " s ago" : "–"}</td><td>${r ? bytes(r[3]) : "–"}</td>` +
      (p.pace ? `<td>${p.pace.paced_by === p.id ? "itself" : "peer " + p.pace.paced_by}</td><td>${fmt(p.pace.waited)} s</td>` +
        `<td>${fmt(p.pace.deadline)} s</td><td>${p.pace.batch}</td><td>${p.pace.steps}</td>` : "<td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>") + "</tr>";
  }).join("");
}

// ---- a sweep --------------------------------------------------------------------

function drawSweep(doc) {
  const done = doc.runs.filter((r) => r.status === "done").length;
  $("round").textContent = done + "/" + doc.runs.length; $("round").dataset.round = done;
  $("round-label").textContent = "runs done";
  $("acc-label").textContent = "best accuracy";
  $("xi-label").textContent = "its mean Ξ";
  $("facts").textContent = "sweep · " + doc.settings.length + " settings · axes: " + (doc.axes.join(", ") || "topology");
  const best = doc.settings.filter((s) => s.acc[2] > 0).sort((a, b) => b.acc[0] - a.acc[0])[0];
  $("acc").textContent = best ? pct(best.acc[0]) : "–";
  $("xi").textContent = best ? fmt(best.xi_avg[0]) : "–";
  const sd = (v) => (v === null || !isFinite(v)) ? 0 : v;
  const ds = doc.settings.map((s, i) => ({
    label: s.name, borderColor: colour(i), backgroundColor: colour(i), pointRadius: 6, pointHoverRadius: 8,
    data: s.acc[2] > 0 && s.xi_avg[0] > 0 ? [{ x: s.xi_avg[0], y: s.acc[0],
      xMin: s.xi_avg[0] - sd(s.xi_avg[1]), xMax: s.xi_avg[0] + sd(s.xi_avg[1]),
      yMin: s.acc[0] - sd(s.acc[1]), yMax: s.acc[0] + sd(s.acc[1]) }] : [],
  }));
  const sweepChart = chart("chart-sweep", { type: "scatter", data: { datasets: [] }, plugins: [errorBars],
    options: { scales: axes("mean consensus distance Ξ over the run (log)", "final accuracy", "linear", "logarithmic"),
      plugins: { legend: { position: "bottom" } } } });
  // the axes hold the error bars too, with a margin
  const pts = ds.flatMap((d) => d.data);
  if (pts.length) {
    const lo = Math.min(...pts.map((p) => p.yMin)), hi = Math.max(...pts.map((p) => p.yMax));
    const pad = Math.max(0.02, 0.1 * (hi - lo));
    // on whole hundredths: Chart.js adds a tick at a bound that is not one
    sweepChart.options.scales.y.min = Math.max(0, Math.floor(100 * (lo - pad)) / 100);
    sweepChart.options.scales.y.max = Math.min(1, Math.ceil(100 * (hi + pad)) / 100);
    const xl = Math.min(...pts.map((p) => p.xMin > 0 ? p.xMin : p.x)), xh = Math.max(...pts.map((p) => p.xMax));
    sweepChart.options.scales.x.min = xl / 1.5;
    sweepChart.options.scales.x.max = xh * 1.5;
  }
  setData("chart-sweep", null, ds);

  const seeds = [...new Set(doc.runs.map((r) => r.seed))].sort((a, b) => a - b);
  const grid = $("grid");
  grid.tHead.innerHTML = "<tr><th>setting</th><th>done</th>" + seeds.map((s) => `<th>seed ${s}</th>`).join("") + "<th>accuracy</th></tr>";
  grid.tBodies[0].innerHTML = doc.settings.map((s, i) => {
    const cells = seeds.map((seed) => {
      const r = doc.runs.find((x) => x.setting === i && x.seed === seed);
      return r ? `<td class="cell"><span class="${r.status}" title="${r.run}: ${r.status}">${r.status === "done" ? pct(r.acc) : r.status}</span></td>` : "<td></td>";
    }).join("");
    return `<tr><td><span class="swatch" style="background:${colour(i)}"></span>${s.name}</td><td>${s.done}/${s.planned}</td>${cells}` +
      `<td>${s.acc[2] ? pct(s.acc[0]) + (s.acc[2] > 1 ? " ± " + (100 * sd(s.acc[1])).toFixed(1) : "") : "–"}</td></tr>`;
  }).join("");
  grid.dataset.done = done; grid.dataset.planned = doc.runs.length;
  $("grid-progress").textContent = `${done} of ${doc.runs.length} runs done`;
  $("grid-bar").style.width = (doc.runs.length ? 100 * done / doc.runs.length : 0) + "%";
}

// ---- updates ----------------------------------------------------------------------

function draw(doc) {
  document.body.dataset.kind = doc.kind;
  $("run-view").hidden = doc.kind !== "run";
  $("sweep-view").hidden = doc.kind !== "sweep";
  $("wait-view").hidden = doc.kind === "run" || doc.kind === "sweep";
  if (doc.name) { $("name").textContent = doc.name; document.title = doc.name + " · murmur watch"; }
  if (doc.kind === "run") drawRun(doc);
  else if (doc.kind === "sweep") drawSweep(doc);
  else $("wait-msg").textContent = doc.error || "";
  document.body.dataset.updates = Number(document.body.dataset.updates) + 1;
  $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  status = doc.status || "running";
  endedAgo = doc.ended_ago;
  live(connected);
}

// The badge says whether the page is connected and what the run or sweep
// is: live while it runs, "finished" (every peer ended) or "stopped" (some
// without an end line; a sweep interrupted) with how long ago, from what
// the directory shows; "reconnecting" while murmur watch is away.
let connected = false, status = "running", endedAgo = null;
const ago = (s) => s === null || s === undefined || !isFinite(s) ? "" :
  s < 90 ? ` ${Math.round(s)} s ago` : s < 5400 ? ` ${Math.round(s / 60)} min ago` : ` ${(s / 3600).toFixed(1)} h ago`;
function live(on) {
  connected = on;
  const l = $("live");
  const running = status === "running";
  l.className = "live " + (!on ? "off" : running ? "on" : "ended");
  l.dataset.status = status;
  l.textContent = !on ? "reconnecting" : running ? "live" : status + ago(endedAgo);
}

// The document at once, then pushes.
fetch("/state.json").then((r) => r.json()).then(draw).catch(() => {});
const es = new EventSource("/events");
es.addEventListener("state", (e) => { live(true); draw(JSON.parse(e.data)); });
es.onopen = () => live(true);
es.onerror = () => live(false);
