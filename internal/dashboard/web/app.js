// The throttler dashboard: one page over the JSON API (/api/v1, see
// docs/dashboard.md). It redraws the current view at every sample the
// server announces on /api/v1/events, and never reloads.
"use strict";

const api = "/api/v1";
const state = { view: "budgets", q: "", st: "", sort: "tree", offset: 0, limit: 100, name: "", seq: 0, at: null, busy: false, again: false };
const $ = (id) => document.getElementById(id);
const nf = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function n0(v) { return nf.format(Math.round(v)); }
function pct(v, digits = 1) { return v == null ? "–" : (100 * v).toFixed(digits) + "%"; }
function signed(v) {
  const s = Math.abs(100 * v).toFixed(2);
  return (s === "0.00" ? "" : v > 0 ? "+" : "−") + s + "%";
}
function dur(s) {
  if (s == null) return "–";
  if (s < 1) return "now";
  if (s < 90) return Math.round(s) + " s";
  if (s < 5400) return Math.round(s / 60) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return Math.round(s / 86400) + " d";
}
function ago(s) { return s == null ? "–" : s < 1 ? "just now" : dur(s) + " ago"; }
function cls(state) { return state.replace(/ /g, "-"); }
async function get(path) {
  const r = await fetch(api + path, { cache: "no-store" });
  if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
  return r.json();
}

// Routing: the path names the view; the query the budget list's filters.
function route() {
  const p = location.pathname, u = new URLSearchParams(location.search);
  state.view = p.startsWith("/budgets/") ? "budget" : p === "/experiments" ? "experiments" : p === "/workers" ? "workers" : "budgets";
  state.name = state.view === "budget" ? decodeURIComponent(p.slice("/budgets/".length)) : "";
  state.q = u.get("q") || "";
  state.st = u.get("state") || "";
  state.sort = u.get("sort") || "tree";
  state.offset = +u.get("offset") || 0;
  for (const v of ["budgets", "budget", "experiments", "workers"]) $(v + "-view").hidden = v !== state.view;
  document.querySelectorAll(".top nav a").forEach((a) => a.classList.toggle("on", a.dataset.view === state.view || (state.view === "budget" && a.dataset.view === "budgets")));
  $("q").value = state.q;
  $("sort").value = state.sort;
  document.querySelectorAll("#states button").forEach((b) => b.classList.toggle("on", b.dataset.state === state.st));
  refresh();
}
function go(url) { history.pushState(null, "", url); route(); }
function listURL(changes) {
  const s = Object.assign({ q: state.q, state: state.st, sort: state.sort, offset: state.offset }, changes);
  const u = new URLSearchParams();
  if (s.q) u.set("q", s.q);
  if (s.state) u.set("state", s.state);
  if (s.sort !== "tree") u.set("sort", s.sort);
  if (s.offset) u.set("offset", s.offset);
  const qs = u.toString();
  return "/" + (qs ? "?" + qs : "");
}

// refresh redraws the summary and the current view; calls while one runs
// fold into one more run.
async function refresh() {
  if (state.busy) { state.again = true; return; }
  state.busy = true;
  try {
    const views = { budgets: budgets, budget: budget, experiments: experiments, workers: workers };
    await Promise.all([summary(), views[state.view]()]);
  } catch (e) {
    $("live-text").textContent = "error: " + e.message;
  } finally {
    state.busy = false;
    if (state.again) { state.again = false; refresh(); }
  }
}

function card(id, value, kind, label) {
  const c = $(id);
  c.className = "card " + kind;
  c.querySelector("b").textContent = value;
  if (label) c.querySelector("span").textContent = label;
}

async function summary() {
  const s = await get("/summary");
  state.seq = s.seq; state.at = new Date(s.at);
  document.body.dataset.seq = s.seq;
  $("topic").textContent = s.stats_topic ? "stats topic " + s.stats_topic : "";
  const b = s.budgets, w = s.workers;
  card("card-budgets", n0(b.off_course), b.off_course ? "alert" : "good", `of ${n0(b.total)} budgets off course (±${s.band * 100}%)`);
  card("card-stale", n0(b.stale + b.no_reports), b.stale + b.no_reports ? "warn" : "good", "budgets stale or unreported");
  card("card-srm", n0(s.experiments.srm_mismatches), s.experiments.srm_mismatches ? "alert" : "good", `of ${n0(s.experiments.total)} experiments out of balance`);
  card("card-workers", w.silent ? `${w.silent} silent` : n0(w.total), w.silent ? "alert" : "", w.silent ? `of ${w.total} workers` : `workers · ${n0(w.partitions)} partitions`);
  card("card-lag", n0(w.lag), w.lag > 10000 ? "warn" : "", "records of consumer lag");
  card("card-faults", `${n0(w.aborted)} · ${n0(w.dead_letters)}`, w.aborted || w.dead_letters ? "warn" : "", "aborted transactions · dead letters");
}

// progress draws achieved against the target with the ideal's tick and band.
function progress(b) {
  if (!(b.target > 0)) return "";
  const f = (v) => Math.max(0, Math.min(100, (100 * v) / b.target));
  const lo = f(b.ideal - 0.01 * b.target), hi = f(b.ideal + 0.01 * b.target);
  return `<div class="bar" title="${n0(b.achieved)} achieved, ${n0(b.ideal)} ideal, ${n0(b.target)} target">` +
    `<div class="bandmark" style="left:${lo}%;width:${hi - lo}%"></div><div class="fill" style="width:${f(b.achieved)}%"></div>` +
    `<div class="tick" style="left:calc(${f(b.ideal)}% - 1px)"></div></div>`;
}

// spark draws the deviation trend with the ±1% band.
function spark(trend) {
  if (!trend || trend.length < 2) return `<small class="muted">collecting…</small>`;
  const W = 110, H = 24, m = Math.max(0.02, ...trend.map(Math.abs)) * 1.1;
  const y = (v) => (H / 2 - (v / m) * (H / 2)).toFixed(1);
  const pts = trend.map((v, i) => `${((i * (W - 2)) / (trend.length - 1) + 1).toFixed(1)},${y(v)}`).join(" ");
  return `<svg class="spark" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"><rect class="b" x="0" width="${W}" y="${y(0.01)}" height="${y(-0.01) - y(0.01)}"/>` +
    `<line class="z" x1="0" x2="${W}" y1="${y(0)}" y2="${y(0)}"/><polyline class="l" points="${pts}"/></svg>`;
}

function budgetRow(b, flat) {
  const off = b.state === "behind" || b.state === "ahead";
  const nest = !flat && b.depth ? `<span class="nest">${"&nbsp;&nbsp;&nbsp;".repeat(b.depth - 1)}└</span>` : "";
  const parent = flat && b.parent ? `<span class="parent">${esc(b.parent)} › </span>` : "";
  const kind = b.kind === "rewards" ? " · rewards" : b.scored ? " · scored" : "";
  return `<tr data-budget="${esc(b.name)}" class="${off ? "off" : b.state === "stale" ? "stale" : ""}">` +
    `<td>${nest}<a class="name" href="/budgets/${encodeURIComponent(b.name)}">${parent}${esc(b.name)}</a><small class="kind">${kind}</small></td>` +
    `<td><span class="badge ${cls(b.state)}">${esc(b.state)}</span></td>` +
    `<td>${progress(b)}</td>` +
    `<td class="num"><span class="achieved" data-achieved="${b.achieved}">${n0(b.achieved)}</span> / ${n0(b.target)}</td>` +
    `<td class="num dev ${off ? "bad" : "ok"}">${signed(b.deviation)}</td>` +
    `<td>${spark(b.trend)}</td>` +
    `<td class="num">${pct(b.pass_rate)}</td>` +
    `<td class="num">${b.time_left_seconds > 0 ? dur(b.time_left_seconds) : "ended"}</td>` +
    `<td class="num">${b.sources} · ${dur(b.oldest_report_age_seconds)}</td></tr>`;
}

async function budgets() {
  const u = new URLSearchParams({ sort: state.sort, offset: state.offset, limit: state.limit });
  if (state.q) u.set("q", state.q);
  if (state.st) u.set("state", state.st);
  const l = await get("/budgets?" + u);
  const flat = state.sort !== "tree" || state.q || state.st;
  $("budget-rows").innerHTML = l.budgets.length ? l.budgets.map((b) => budgetRow(b, flat)).join("")
    : `<tr><td colspan="9" class="empty">${l.all ? "No budget matches." : "No budget definitions on the stats topic yet: workers publish theirs when they start."}</td></tr>`;
  $("range").textContent = l.total ? `${n0(l.offset + 1)}–${n0(l.offset + l.budgets.length)} of ${n0(l.total)}` : "";
  $("prev").disabled = l.offset === 0;
  $("next").disabled = l.offset + l.budgets.length >= l.total;
  if (!window.firstRows) { window.firstRows = performance.now(); document.body.dataset.firstRows = Math.round(window.firstRows); }
}

function tile(value, label, bad) { return `<div class="tile${bad ? " bad" : ""}"><b>${value}</b><span>${label}</span></div>`; }

async function budget() {
  const name = encodeURIComponent(state.name);
  const [d, svg] = await Promise.all([get("/budgets/" + name), fetch(`${api}/budgets/${name}/chart.svg`, { cache: "no-store" }).then((r) => r.text())]);
  const b = d.budget, off = b.state === "behind" || b.state === "ahead";
  const window = b.period_seconds ? `period of ${dur(b.period_seconds)}` : `window ${new Date(b.start).toLocaleString()} – ${new Date(b.finish).toLocaleString()}`;
  const parent = b.parent ? ` · child of <a href="/budgets/${encodeURIComponent(b.parent)}">${esc(b.parent)}</a>` : "";
  const last = d.curve.length ? d.curve[d.curve.length - 1] : null;
  let h = `<a class="back" href="${listURL({})}">‹ All budgets</a>` +
    `<h1>${esc(b.name)} <span class="badge ${cls(b.state)}">${esc(b.state)}</span></h1>` +
    `<div class="sub">${esc(b.kind)}${b.scored ? ", scored" : ""}${b.delay ? ", delays events" : ""} · ${window}${parent}${b.variant ? " · limit of variant " + esc(b.variant) : ""}</div>` +
    `<div class="tiles">` +
    tile(`${n0(b.achieved)} <small>/ ${n0(b.target)}</small>`, `${esc(b.kind)} achieved / target`) +
    tile(signed(b.deviation), `vs ideal (${n0(b.ideal)} now)`, off) +
    tile(pct(b.pass_rate), `pass rate (${n0(b.passed)} of ${n0(b.offered)})`) +
    tile(b.time_left_seconds > 0 ? dur(b.time_left_seconds) : "ended", "time left") +
    tile(`${b.sources}`, `sources reporting, the oldest ${ago(b.oldest_report_age_seconds)}`, b.state === "stale") +
    (b.kind === "rewards" ? tile(b.passed ? (b.achieved / b.passed).toFixed(3) : "–", "rewards per pass") : "") +
    tile(last ? n0(d.curve.length) : "0", "samples on the curve") + `</div>` +
    `<div class="chartbox">${svg}</div>`;
  if (d.children.length) {
    h += `<h2>Children</h2><table class="grid budgets"><tbody>${d.children.map((c) => budgetRow(c, false)).join("")}</tbody></table>`;
  }
  $("budget-view").innerHTML = h;
  document.title = b.name + " · throttler";
}

function srmBadge(x) {
  if (!x.srm.checked) return `<span class="badge">not enough keys for the SRM test</span>`;
  if (x.srm.mismatch) return `<span class="badge mismatch">sample ratio mismatch</span>`;
  return `<span class="badge balanced">balanced · SRM p = ${x.srm.p.toFixed(3)}</span>`;
}

function srmWarning(x) {
  if (!x.srm.mismatch) return "";
  return `<div class="srm-warning" data-experiment="${esc(x.layer + "/" + x.experiment)}">` +
    `<b>Out of balance:</b> the variants' key counts do not follow their weights (SRM p = ${x.srm.p.toExponential(2)} &lt; 0.001). ` +
    `The split or the counting is broken: do not trust this experiment's results until the cause is found.</div>`;
}

function shareBar(share, weight) {
  const s = share == null ? 0 : 100 * share;
  return `<div class="share" title="${pct(share)} of keys, weight ${pct(weight)}"><div class="fill" style="width:${s}%"></div><div class="weight" style="left:calc(${100 * weight}% - 1px)"></div></div>`;
}

async function experiments() {
  const l = await get("/experiments");
  if (!l.experiments.length) { $("experiments-view").innerHTML = `<div class="empty">No experiment definitions on the stats topic.</div>`; return; }
  $("experiments-view").innerHTML = l.experiments.map((x) => {
    const rows = x.variants.map((v) => `<tr><td class="name">${esc(v.name)}</td><td class="num">${pct(v.weight)}</td>` +
      `<td>${shareBar(v.share, v.weight)}</td><td class="num">${pct(v.share, 2)}</td><td class="num">${n0(v.keys)}</td>` +
      `<td class="num">${pct(v.event_share, 2)}</td><td class="num">${n0(v.count)}</td><td>${esc(v.topic)}</td>` +
      `<td>${v.limit ? `<a href="/budgets/${encodeURIComponent(v.limit)}">limit</a> → ${esc(v.fallback)}` : ""}</td></tr>`).join("");
    return `<div class="exp${x.srm.mismatch ? " mismatch" : ""}"><h3>${esc(x.layer)} / ${esc(x.experiment)} ${srmBadge(x)}` +
      `<span class="meta">${n0(x.keys)} keys · ${n0(x.events)} events · ${x.sources} source${x.sources === 1 ? "" : "s"} · counts ${ago(x.newest_counts_age_seconds)}</span></h3>` +
      srmWarning(x) +
      `<table class="grid"><thead><tr><th>Variant</th><th class="num">Weight</th><th>Key share <small>vs <i class="tick"></i> weight</small></th>` +
      `<th class="num">Key share</th><th class="num">Keys</th><th class="num">Event share</th><th class="num">Events</th><th>Topic</th><th>Limit</th></tr></thead>` +
      `<tbody>${rows}</tbody></table></div>`;
  }).join("");
}

async function workers() {
  const l = await get("/workers");
  if (!l.workers.length) { $("workers-view").innerHTML = `<div class="empty">No worker status on the stats topic yet (workers publish one every sync interval).</div>`; return; }
  const ws = l.workers.map((w) => `<tr class="${w.silent ? "off" : ""}"><td class="name">${esc(w.id)}</td>` +
    `<td><span class="badge ${w.silent ? "silent" : "live"}">${w.silent ? "silent" : "live"}</span></td>` +
    `<td class="num">${dur(w.age_seconds)}</td><td class="num">${dur((Date.parse(l.at) - Date.parse(w.started)) / 1000)}</td>` +
    `<td class="num">${w.partitions}${w.omitted ? ` (${w.omitted} not listed)` : ""}</td><td class="num">${n0(w.lag)}</td>` +
    `<td class="num">${n0(w.commits)}</td><td class="num${w.aborted ? " dev bad" : ""}">${n0(w.aborted)}</td>` +
    `<td class="num${w.dead_letters ? " dev bad" : ""}">${n0(w.dead_letters)}</td></tr>`).join("");
  const ps = l.partitions.map((p) => `<tr class="${p.owner_silent ? "off" : ""}"><td class="name">${esc(p.source)}</td>` +
    `<td>${esc(p.owner)}${p.claims > 1 ? ` <span class="badge stale">${p.claims} claims</span>` : ""}</td>` +
    `<td class="num">${p.lag < 0 ? "–" : n0(p.lag)}</td><td class="num">${p.offset < 0 ? "–" : n0(p.offset)}</td>` +
    `<td class="num">${dur(p.last_commit_age_seconds)}</td></tr>`).join("");
  $("workers-view").innerHTML = `<h2>Workers</h2><table class="grid"><thead><tr><th>Worker</th><th>Status</th><th class="num">Last report</th>` +
    `<th class="num">Up</th><th class="num">Partitions</th><th class="num">Lag</th><th class="num">Commits</th><th class="num">Aborted</th>` +
    `<th class="num">Dead letters</th></tr></thead><tbody>${ws}</tbody></table>` +
    `<h2>Partitions</h2><table class="grid"><thead><tr><th>Source</th><th>Owner</th><th class="num">Lag</th><th class="num">Committed offset</th>` +
    `<th class="num">Last commit</th></tr></thead><tbody>${ps}</tbody></table>`;
}

// live follows the server's samples; the indicator says how old the
// newest is.
function live() {
  const es = new EventSource(api + "/events");
  es.addEventListener("sample", (e) => {
    if (!$("live").classList.contains("ok")) { $("live").className = "live ok"; $("live-text").textContent = "live"; }
    if (JSON.parse(e.data).seq !== state.seq) refresh();
  });
  es.onerror = () => { $("live").className = "live bad"; $("live-text").textContent = "reconnecting…"; };
  setInterval(() => {
    if (state.at && $("live").classList.contains("ok")) $("live-text").textContent = "live · sampled " + ago((Date.now() - state.at) / 1000);
  }, 1000);
}

document.addEventListener("click", (e) => {
  const a = e.target.closest("a");
  if (a && a.origin === location.origin && !a.pathname.startsWith("/api/") && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    go(a.pathname + a.search);
  }
});
window.addEventListener("popstate", route);
let typing;
$("q").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => go(listURL({ q: $("q").value.trim(), offset: 0 })), 200); });
$("sort").addEventListener("change", () => go(listURL({ sort: $("sort").value, offset: 0 })));
$("states").addEventListener("click", (e) => { if (e.target.dataset.state != null) go(listURL({ state: e.target.dataset.state, offset: 0 })); });
$("prev").addEventListener("click", () => go(listURL({ offset: Math.max(0, state.offset - state.limit) })));
$("next").addEventListener("click", () => go(listURL({ offset: state.offset + state.limit })));
route();
live();
