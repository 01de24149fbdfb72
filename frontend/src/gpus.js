// The GPUs page: nodes and the jobs holding their GPUs, from
// GET /api/gpus/events (Server-Sent Events). Every string from the cluster is
// written with textContent, never parsed as HTML.

import { $, jobLink } from "./lib/dom.js";

function head(table, headers) {
  const tr = table.querySelector("thead tr");
  tr.replaceChildren(...headers.map((name) => {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = name;
    return th;
  }));
}

// One row, its cell `header` the row's header; cellOf(i, text) may return a
// node to put in place of the text.
function row(cells, header, cellOf) {
  const tr = document.createElement("tr");
  cells.forEach((text, i) => {
    const td = document.createElement(i === header ? "th" : "td");
    if (i === header) td.scope = "row";
    const node = cellOf(i, text);
    if (node) td.append(node);
    else td.textContent = text;
    tr.append(td);
  });
  return tr;
}

function renderNodes(nodes, withoutGpus) {
  const table = $("nodes");
  head(table, nodes.headers);
  const jobs = nodes.headers.indexOf("JOBS");
  table.querySelector("tbody").replaceChildren(...nodes.rows.map((r) => row(r.cells, 0, (i) => {
    if (i !== jobs || r.jobs.length === 0) return null;
    const links = document.createDocumentFragment();
    r.jobs.forEach((j, n) => {
      if (n) links.append(", ");
      links.append(j.key ? jobLink(j.key.split("/"), j.text) : j.text);
    });
    return links;
  })));
  const others = withoutGpus ? ", " + withoutGpus + " without GPUs not shown" : "";
  $("nodes-count").textContent = count(nodes.rows.length, "node") + " with GPUs" + others;
}

function count(n, noun) {
  return n + " " + noun + (n === 1 ? "" : "s");
}

function renderJobs(jobs) {
  const table = $("jobs");
  head(table, jobs.headers);
  const name = jobs.headers.indexOf("NAME");
  table.querySelector("tbody").replaceChildren(...jobs.rows.map((r) => row(r.cells, name, (i, text) => (
    i === name ? jobLink(r.key.split("/"), text) : null
  ))));
  $("jobs-count").textContent = count(jobs.rows.length, "job");
}

function render(data) {
  $("reason").hidden = !data.reason;
  $("reason").textContent = data.reason ? "Nodes unknown: " + data.reason : "";
  renderNodes(data.nodes, data.without_gpus);
  renderJobs(data.jobs);
}

function connect() {
  const source = new EventSource("/api/gpus/events");
  source.addEventListener("snapshot", (e) => {
    render(JSON.parse(e.data));
    $("status").textContent = "Live";
    $("status").classList.remove("offline");
  });
  source.addEventListener("error", () => {
    $("status").textContent = "Disconnected: reconnecting\u2026";
    $("status").classList.add("offline");
  });
}

document.addEventListener("DOMContentLoaded", connect);
