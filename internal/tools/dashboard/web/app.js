// The throttler dashboard: one page over the JSON API (/api/v1, see
// docs/dashboard.md). It updates the current view at every sample the
// server announces on /api/v1/events, and never reloads. Updates are made
// in place: a row is keyed by what it shows (a budget, a variant, a
// worker, a partition) and stays the same element from sample to sample,
// and an element's content is replaced only when it changed, so that a
// click, a hover or a text selection is never lost to a redraw.
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

// setHTML replaces el's content with html unless that is what it already
// holds (as set by setHTML).
function setHTML(el, html) {
  if (el._html !== html) { el.innerHTML = html; el._html = html; }
}

// patchRows brings tbody's rows in line with rows, each {key, cls, cells:
// [{html, cls, span}]}: a row whose key stays is the same element, its
// cells replaced only where their content changed, and rows are moved
// only where the order changed. attr, when given, is an attribute that
// carries the key too (for links and tests: data-budget).
function patchRows(tbody, rows, attr) {
  const old = new Map();
  for (const tr of Array.from(tbody.rows)) {
    if (tr.dataset.key != null) old.set(tr.dataset.key, tr); else tr.remove();
  }
  rows.forEach((r, i) => {
    let tr = old.get(r.key);
    if (tr) old.delete(r.key);
    else {
      tr = document.createElement("tr");
      tr.dataset.key = r.key;
      if (attr) tr.setAttribute(attr, r.key);
    }
    if (tr.className !== (r.cls || "")) tr.className = r.cls || "";
    while (tr.cells.length > r.cells.length) tr.deleteCell(-1);
    r.cells.forEach((c, j) => {
      const td = tr.cells[j] || tr.insertCell(-1);
      if (td.className !== (c.cls || "")) td.className = c.cls || "";
      if (td.colSpan !== (c.span || 1)) td.colSpan = c.span || 1;
      setHTML(td, c.html);
    });
    if (tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
  });
  for (const tr of old.values()) tr.remove();
}

// keyedChild returns container's child element keyed key, made by make()
// (an element) when missing and put at position i.
function keyedChild(container, key, i, make) {
  let el = Array.from(container.children).find((c) => c.dataset.key === key);
  if (!el) { el = make(); el.dataset.key = key; }
  if (container.children[i] !== el) container.insertBefore(el, container.children[i] || null);
  return el;
}

// dropOthers removes container's children whose key is not in keys.
function dropOthers(container, keys) {
  for (const c of Array.from(container.children)) if (!keys.has(c.dataset.key)) c.remove();
}

// emptyRow is the one row of a table with nothing to list.
function emptyRow(span, text) { return { key: "\u0000empty", cells: [{ html: text, cls: "empty", span }] }; }

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

// budgetRow is a budget's row for patchRows, keyed by its name.
function budgetRow(b, flat) {
  const off = b.state === "behind" || b.state === "ahead";
  const nest = !flat && b.depth ? `<span class="nest">${"&nbsp;&nbsp;&nbsp;".repeat(b.depth - 1)}└</span>` : "";
  const parent = flat && b.parent ? `<span class="parent">${esc(b.parent)} › </span>` : "";
  const kind = b.kind === "rewards" ? " · rewards" : b.scored ? " · scored" : "";
  return { key: b.name, cls: off ? "off" : b.state === "stale" ? "stale" : "", cells: [
    { html: `${nest}<a class="name" href="/budgets/${encodeURIComponent(b.name)}">${parent}${esc(b.name)}</a><small class="kind">${kind}</small>` },
    { html: `<span class="badge ${cls(b.state)}">${esc(b.state)}</span>` },
    { html: progress(b) },
    { html: `<span class="achieved" data-achieved="${b.achieved}">${n0(b.achieved)}</span> / ${n0(b.target)}`, cls: "num" },
    { html: signed(b.deviation), cls: `num dev ${off ? "bad" : "ok"}` },
    { html: spark(b.trend) },
    { html: pct(b.pass_rate), cls: "num" },
    { html: b.time_left_seconds > 0 ? dur(b.time_left_seconds) : "ended", cls: "num" },
    { html: `${b.sources} · ${dur(b.oldest_report_age_seconds)}`, cls: "num" },
  ] };
}

async function budgets() {
  const u = new URLSearchParams({ sort: state.sort, offset: state.offset, limit: state.limit });
  if (state.q) u.set("q", state.q);
  if (state.st) u.set("state", state.st);
  const l = await get("/budgets?" + u);
  const flat = state.sort !== "tree" || state.q || state.st;
  patchRows($("budget-rows"), l.budgets.length ? l.budgets.map((b) => budgetRow(b, flat))
    : [emptyRow(9, l.all ? "No budget matches." : "No budget definitions on the stats topic yet: workers publish theirs when they start.")], "data-budget");
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
  const v = $("budget-view");
  if (v.dataset.name !== state.name) {
    v.innerHTML = `<a class="back">‹ All budgets</a><h1></h1><div class="sub"></div><div class="tiles"></div><div class="chartbox"></div><div class="children"></div>`;
    v.dataset.name = state.name;
  }
  const part = (c) => v.querySelector(c);
  const back = listURL({});
  if (part(".back").getAttribute("href") !== back) part(".back").setAttribute("href", back);
  setHTML(part("h1"), `${esc(b.name)} <span class="badge ${cls(b.state)}">${esc(b.state)}</span>`);
  setHTML(part(".sub"), `${esc(b.kind)}${b.scored ? ", scored" : ""}${b.delay ? ", delays events" : ""} · ${window}${parent}${b.variant ? " · limit of variant " + esc(b.variant) : ""}`);
  setHTML(part(".tiles"),
    tile(`${n0(b.achieved)} <small>/ ${n0(b.target)}</small>`, `${esc(b.kind)} achieved / target`) +
    tile(signed(b.deviation), `vs ideal (${n0(b.ideal)} now)`, off) +
    tile(pct(b.pass_rate), `pass rate (${n0(b.passed)} of ${n0(b.offered)})`) +
    tile(b.time_left_seconds > 0 ? dur(b.time_left_seconds) : "ended", "time left") +
    tile(`${b.sources}`, `sources reporting, the oldest ${ago(b.oldest_report_age_seconds)}`, b.state === "stale") +
    (b.kind === "rewards" ? tile(b.passed ? (b.achieved / b.passed).toFixed(3) : "–", "rewards per pass") : "") +
    tile(last ? n0(d.curve.length) : "0", "samples on the curve"));
  setHTML(part(".chartbox"), svg);
  setHTML(part(".children"), d.children.length ? `<h2>Children</h2><table class="grid budgets"><tbody></tbody></table>` : "");
  if (d.children.length) patchRows(part(".children tbody"), d.children.map((c) => budgetRow(c, false)), "data-budget");
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
  const v = $("experiments-view");
  if (!l.experiments.length) {
    v.innerHTML = `<div class="empty" data-key="">No experiment definitions on the stats topic.</div>`;
    return;
  }
  const keys = new Set();
  l.experiments.forEach((x, i) => {
    const key = x.layer + "/" + x.experiment;
    keys.add(key);
    const el = keyedChild(v, key, i, () => {
      const d = document.createElement("div");
      d.innerHTML = `<h3></h3><div class="warning"></div><table class="grid"><thead><tr><th>Variant</th><th class="num">Weight</th>` +
        `<th>Key share <small>vs <i class="tick"></i> weight</small></th><th class="num">Key share</th><th class="num">Keys</th>` +
        `<th class="num">Event share</th><th class="num">Events</th><th>Topic</th><th>Limit</th></tr></thead><tbody></tbody></table>`;
      return d;
    });
    const c = "exp" + (x.srm.mismatch ? " mismatch" : "");
    if (el.className !== c) el.className = c;
    setHTML(el.querySelector("h3"), `${esc(x.layer)} / ${esc(x.experiment)} ${srmBadge(x)}` +
      `<span class="meta">${n0(x.keys)} keys · ${n0(x.events)} events · ${x.sources} source${x.sources === 1 ? "" : "s"} · counts ${ago(x.newest_counts_age_seconds)}</span>`);
    setHTML(el.querySelector(".warning"), srmWarning(x));
    patchRows(el.querySelector("tbody"), x.variants.map((w) => ({ key: w.name, cells: [
      { html: esc(w.name), cls: "name" }, { html: pct(w.weight), cls: "num" }, { html: shareBar(w.share, w.weight) },
      { html: pct(w.share, 2), cls: "num" }, { html: n0(w.keys), cls: "num" }, { html: pct(w.event_share, 2), cls: "num" },
      { html: n0(w.count), cls: "num" }, { html: esc(w.topic) },
      { html: w.limit ? `<a href="/budgets/${encodeURIComponent(w.limit)}">limit</a> → ${esc(w.fallback)}` : "" },
    ] })));
  });
  dropOthers(v, keys);
}

async function workers() {
  const l = await get("/workers");
  const v = $("workers-view");
  if (!l.workers.length) {
    setHTML(v, `<div class="empty">No worker status on the stats topic yet (workers publish one every sync interval).</div>`);
    return;
  }
  setHTML(v, `<h2>Workers</h2><table class="grid"><thead><tr><th>Worker</th><th>Status</th><th class="num">Last report</th>` +
    `<th class="num">Up</th><th class="num">Partitions</th><th class="num">Lag</th><th class="num">Commits</th><th class="num">Aborted</th>` +
    `<th class="num">Dead letters</th></tr></thead><tbody></tbody></table>` +
    `<h2>Partitions</h2><table class="grid"><thead><tr><th>Source</th><th>Owner</th><th class="num">Lag</th><th class="num">Committed offset</th>` +
    `<th class="num">Last commit</th></tr></thead><tbody></tbody></table>`);
  const [wt, pt] = v.querySelectorAll("tbody");
  patchRows(wt, l.workers.map((w) => ({ key: w.id, cls: w.silent ? "off" : "", cells: [
    { html: esc(w.id), cls: "name" },
    { html: `<span class="badge ${w.silent ? "silent" : "live"}">${w.silent ? "silent" : "live"}</span>` },
    { html: dur(w.age_seconds), cls: "num" }, { html: dur((Date.parse(l.at) - Date.parse(w.started)) / 1000), cls: "num" },
    { html: `${w.partitions}${w.omitted ? ` (${w.omitted} not listed)` : ""}`, cls: "num" }, { html: n0(w.lag), cls: "num" },
    { html: n0(w.commits), cls: "num" }, { html: n0(w.aborted), cls: "num" + (w.aborted ? " dev bad" : "") },
    { html: n0(w.dead_letters), cls: "num" + (w.dead_letters ? " dev bad" : "") },
  ] })));
  patchRows(pt, l.partitions.map((p) => ({ key: p.source, cls: p.owner_silent ? "off" : "", cells: [
    { html: esc(p.source), cls: "name" },
    { html: `${esc(p.owner)}${p.claims > 1 ? ` <span class="badge stale">${p.claims} claims</span>` : ""}` },
    { html: p.lag < 0 ? "–" : n0(p.lag), cls: "num" }, { html: p.offset < 0 ? "–" : n0(p.offset), cls: "num" },
    { html: dur(p.last_commit_age_seconds), cls: "num" },
  ] })));
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
