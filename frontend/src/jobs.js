// The Jobs page: rows from GET /api/jobs/events (Server-Sent Events), filtered
// and sorted here. Every string from the cluster is written with textContent,
// never parsed as HTML. With thousands of jobs changing, the table is not
// rebuilt at each event: a changed row that keeps its place is replaced where
// it is, at most once a frame; a change that moves rows (a sorted or filtered
// cell, a row added or gone) re-sorts the table at most every FULL_MS, reusing
// the rows' elements. The table shows the first PAGE rows that match, and
// PAGE more at each "Show more".

import { $, csrf, jobLink } from "./lib/dom.js";

const PHASES = ["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"];
const FULL_MS = 250;
const PAGE = 200;
const state = { headers: [], rows: new Map(), sortBy: "NAMESPACE", ascending: true, limit: PAGE };
// key -> { row, tr }: each row's element, built from that row object.
const built = new Map();
const pending = { dirty: new Set(), full: false, frame: 0, timeout: 0, last: 0 };
const collator = new Intl.Collator(undefined, { numeric: true });

function column(name) {
  return state.headers.indexOf(name);
}

// The values each select offers already (thousands of rows ask).
const offered = new WeakMap();

function option(select, value) {
  if (!offered.has(select)) offered.set(select, new Set([...select.options].map((o) => o.value)));
  if (offered.get(select).has(value)) return;
  offered.get(select).add(value);
  const o = document.createElement("option");
  o.value = value;
  o.textContent = value;
  select.append(o);
}

function renderHead() {
  const tr = document.querySelector("#jobs thead tr");
  tr.replaceChildren();
  for (const name of state.headers) {
    const th = document.createElement("th");
    th.scope = "col";
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = name;
    button.addEventListener("click", () => {
      state.ascending = state.sortBy === name ? !state.ascending : true;
      state.sortBy = name;
      render();
    });
    th.append(button);
    tr.append(th);
  }
}

function matches(cells) {
  const want = (id) => $(id).value.trim().toLowerCase();
  const cell = (name) => String(cells[column(name)] ?? "").toLowerCase();
  const kind = want("filter-kind");
  const phase = want("filter-phase");
  return (!kind || cell("KIND") === kind)
    && (!phase || cell("PHASE") === phase)
    && cell("NAMESPACE").includes(want("filter-namespace"))
    && cell("NAME").includes(want("filter-name"));
}

function compare(a, b) {
  const i = column(state.sortBy);
  const x = String(a.cells[i] ?? "");
  const y = String(b.cells[i] ?? "");
  const order = collator.compare(x, y) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  return state.ascending ? order : -order;
}

// The Job page of a row's job: /jobs/<namespace>/<kind>/<name>.
function rowLink(cells, text) {
  return jobLink([cells[column("NAMESPACE")], cells[column("KIND")], text], text);
}

function rowElement(r) {
  const phase = column("PHASE");
  const name = column("NAME");
  const tr = document.createElement("tr");
  r.cells.forEach((text, i) => {
    const td = document.createElement(i === name ? "th" : "td");
    if (i === name) {
      td.scope = "row";
      td.append(rowLink(r.cells, text));
    } else td.textContent = text;
    if (i === phase && PHASES.includes(text)) td.classList.add("phase-" + text);
    tr.append(td);
  });
  return tr;
}

// The row's element, built again only when the row changed.
function elementOf(r) {
  const had = built.get(r.key);
  if (had && had.row === r) return had.tr;
  const tr = rowElement(r);
  built.set(r.key, { row: r, tr });
  return tr;
}

function render() {
  clearTimeout(pending.timeout);
  cancelAnimationFrame(pending.frame);
  Object.assign(pending, { full: false, frame: 0, timeout: 0, last: performance.now() });
  pending.dirty.clear();
  document.querySelectorAll("#jobs thead th").forEach((th) => {
    const sorted = th.textContent === state.sortBy;
    th.setAttribute("aria-sort", sorted ? (state.ascending ? "ascending" : "descending") : "none");
  });
  const rows = [...state.rows.values()].filter((r) => matches(r.cells)).sort(compare);
  const body = document.querySelector("#jobs tbody");
  const shown = rows.slice(0, state.limit);
  body.replaceChildren(...shown.map(elementOf));
  const of = rows.length === state.rows.size ? "" : " (of " + state.rows.size + ")";
  const first = shown.length < rows.length ? "the first " + shown.length + " of " : "";
  $("count").textContent = first + rows.length + " jobs shown" + of;
  $("more").hidden = shown.length >= rows.length;
}

// The changes since the last frame: rows replaced in place, or the table
// re-sorted (not sooner than FULL_MS after the last time).
function flush() {
  pending.frame = 0;
  for (const key of pending.dirty) {
    const had = built.get(key);
    const row = state.rows.get(key);
    if (had && row && had.tr.isConnected) had.tr.replaceWith(elementOf(row));
  }
  pending.dirty.clear();
  if (!pending.full) return;
  const wait = pending.last + FULL_MS - performance.now();
  if (wait > 0) {
    pending.timeout = setTimeout(() => {
      pending.timeout = 0;
      schedule();
    }, wait);
  }
  else render();
}

function schedule() {
  if (!pending.frame && !pending.timeout) pending.frame = requestAnimationFrame(flush);
}

// A row changed: in place when it stays where it is (same sorted cell, same
// answer to the filters), else the table is re-sorted.
function changed(row) {
  const old = state.rows.get(row.key);
  upsert(row);
  const sortBy = column(state.sortBy);
  const stays = old && old.cells[sortBy] === row.cells[sortBy]
    && matches(old.cells) === matches(row.cells);
  if (stays) pending.dirty.add(row.key);
  else pending.full = true;
  schedule();
}

function upsert(row) {
  state.rows.set(row.key, row);
  option($("filter-phase"), row.cells[column("PHASE")]);
}

function connect() {
  const source = new EventSource("/api/jobs/events");
  source.addEventListener("snapshot", (e) => {
    const data = JSON.parse(e.data);
    state.headers = data.headers;
    state.rows = new Map();
    built.clear();
    data.kinds.forEach((k) => option($("filter-kind"), k));
    data.rows.forEach(upsert);
    renderHead();
    render();
    if (!performance.getEntriesByName("t9k:rows-rendered").length) {
      // The first rows in the table, then painted (hack/bench/console reads these).
      performance.mark("t9k:rows-rendered");
      requestAnimationFrame(() => setTimeout(() => performance.mark("t9k:rows-painted")));
    }
    $("status").textContent = "Live";
    $("status").classList.remove("offline");
  });
  source.addEventListener("upsert", (e) => changed(JSON.parse(e.data).row));
  source.addEventListener("delete", (e) => {
    const key = JSON.parse(e.data).key;
    state.rows.delete(key);
    built.delete(key);
    pending.full = true;
    schedule();
  });
  source.addEventListener("error", () => {
    $("status").textContent = "Disconnected: reconnecting\u2026";
    $("status").classList.add("offline");
  });
}

async function logout() {
  const done = await fetch("/api/logout", { method: "POST", headers: { "X-CSRF-Token": csrf() } });
  $("status").textContent = done.ok ? "Logged out: run t9k console again to come back." : "Log out failed.";
}

document.addEventListener("DOMContentLoaded", () => {
  PHASES.forEach((p) => option($("filter-phase"), p));
  $("filters").addEventListener("input", () => {
    state.limit = PAGE;
    render();
  });
  $("more").addEventListener("click", () => {
    state.limit += PAGE;
    render();
  });
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  $("filters").addEventListener("reset", () => setTimeout(render));
  $("logout").addEventListener("click", logout);
  connect();
});
