// The Jobs page: rows from GET /api/jobs/events (Server-Sent Events), filtered
// and sorted here. Every string from the cluster is written with textContent,
// never parsed as HTML.
"use strict";

(function () {
  const PHASES = ["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"];
  const state = { headers: [], rows: new Map(), sortBy: "NAMESPACE", ascending: true };
  const $ = (id) => document.getElementById(id);

  function column(name) {
    return state.headers.indexOf(name);
  }

  function option(select, value) {
    if ([...select.options].some((o) => o.value === value)) return;
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
    const order = x.localeCompare(y, undefined, { numeric: true }) || a.key.localeCompare(b.key);
    return state.ascending ? order : -order;
  }

  // The Job page of a row's job: /jobs/<namespace>/<kind>/<name>.
  function jobLink(cells, text) {
    const a = document.createElement("a");
    const parts = [cells[column("NAMESPACE")], cells[column("KIND")], text];
    a.href = "/jobs/" + parts.map((p) => encodeURIComponent(p)).join("/");
    a.textContent = text;
    return a;
  }

  function render() {
    document.querySelectorAll("#jobs thead th").forEach((th) => {
      const sorted = th.textContent === state.sortBy;
      th.setAttribute("aria-sort", sorted ? (state.ascending ? "ascending" : "descending") : "none");
    });
    const phase = column("PHASE");
    const rows = [...state.rows.values()].filter((r) => matches(r.cells)).sort(compare);
    const body = document.querySelector("#jobs tbody");
    body.replaceChildren(...rows.map((r) => {
      const tr = document.createElement("tr");
      r.cells.forEach((text, i) => {
        const td = document.createElement(i === column("NAME") ? "th" : "td");
        if (i === column("NAME")) td.scope = "row";
        if (i === column("NAME")) td.append(jobLink(r.cells, text));
        else td.textContent = text;
        if (i === phase && PHASES.includes(text)) td.classList.add("phase-" + text);
        tr.append(td);
      });
      return tr;
    }));
    $("count").textContent = rows.length + " of " + state.rows.size + " jobs shown";
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
      data.kinds.forEach((k) => option($("filter-kind"), k));
      data.rows.forEach(upsert);
      renderHead();
      render();
      $("status").textContent = "Live";
      $("status").classList.remove("offline");
    });
    source.addEventListener("upsert", (e) => {
      upsert(JSON.parse(e.data).row);
      render();
    });
    source.addEventListener("delete", (e) => {
      state.rows.delete(JSON.parse(e.data).key);
      render();
    });
    source.addEventListener("error", () => {
      $("status").textContent = "Disconnected: reconnecting\u2026";
      $("status").classList.add("offline");
    });
  }

  async function logout() {
    const csrf = document.querySelector('meta[name="csrf-token"]').content;
    const done = await fetch("/api/logout", { method: "POST", headers: { "X-CSRF-Token": csrf } });
    $("status").textContent = done.ok ? "Logged out: run t9k console again to come back." : "Log out failed.";
  }

  document.addEventListener("DOMContentLoaded", () => {
    PHASES.forEach((p) => option($("filter-phase"), p));
    $("filters").addEventListener("input", render);
    $("filters").addEventListener("submit", (e) => e.preventDefault());
    $("filters").addEventListener("reset", () => setTimeout(render));
    $("logout").addEventListener("click", logout);
    connect();
  });
})();
