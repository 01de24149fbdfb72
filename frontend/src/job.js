// The Job page: the job from GET /api/jobs/<ns>/<kind>/<name>/events (Server-Sent
// Events, sent again at each change of the job or its pods) and one container's
// log, read (and followed) from .../logs as a stream of text. Every string from
// the cluster or a pod is written with textContent, never parsed as HTML.

import { $, csrf, el, pageJob } from "./lib/dom.js";

const parts = pageJob();
const [namespace, kind, name] = parts;
const api = "/api/jobs/" + parts.map(encodeURIComponent).join("/");
const MAX_LINES = 20000;
const log = { lines: [], controller: null, sources: [], wanted: "", version: "" };
let events = null;

function fill(tbody, rows) {
  $(tbody).querySelector("tbody").replaceChildren(...rows.map((cells) => {
    const tr = el("tr");
    cells.forEach((c) => tr.append(c instanceof Node ? wrap(c) : el("td", c)));
    return tr;
  }));
}

function wrap(node) {
  const td = el("td");
  td.append(node);
  return td;
}

function renderHead(head) {
  $("head").replaceChildren(...head.flatMap(([label, value]) => [el("dt", label), el("dd", value)]));
}

function renderConditions(conditions) {
  $("conditions").replaceChildren(...conditions.map((c) => {
    const li = el("li");
    const time = el("time", c.lastTransitionTime + " (" + c.age + " ago)");
    time.dateTime = c.lastTransitionTime;
    li.append(time, el("strong", " " + c.type + "=" + c.status), el("span", " " + c.reason),
      el("p", c.message));
    return li;
  }));
  if (!conditions.length) $("conditions").append(el("li", "No conditions yet."));
}

function renderReplicas(replicas) {
  fill("replicas", replicas.map((r) => {
    const button = el("button", "Log");
    button.type = "button";
    button.setAttribute("aria-label", "Log of " + r.replica);
    button.disabled = !r.containers.length;
    button.addEventListener("click", () => {
      const i = log.sources.findIndex((s) => s.pod === r.pod);
      if (i >= 0) {
        $("log-source").selectedIndex = i;
        openLog();
        $("log").focus();
      }
    });
    return [r.replica, r.type || "-", r.index || "-", r.pod, r.node, r.phase, r.exitCode,
      String(r.restarts), button];
  }));
}

function renderScheduling(sections) {
  $("scheduling").replaceChildren(...sections.flatMap((s) => {
    const ul = el("ul");
    s.lines.forEach((line) => ul.append(el("li", line)));
    return [el("h3", s.section), ul];
  }));
}

// The logs to choose from: each replica's containers. A source's version is
// its pod's UID and the container's restarts: a followed log whose pod was
// replaced, or whose container restarted, is opened again.
function renderSources(replicas) {
  const sources = replicas.flatMap((r) => r.containers.map((c) => ({
    pod: r.pod, container: c.name, label: r.replica + " / " + c.name + (c.init ? " (init)" : ""),
    version: r.uid + ":" + c.restarts,
  })));
  const key = (s) => s.pod + "/" + s.container;
  const same = sources.map(key).join() === log.sources.map(key).join();
  if (!same) {
    const current = $("log-source").value;
    $("log-source").replaceChildren(...sources.map((s) => {
      const o = el("option", s.label);
      o.value = key(s);
      return o;
    }));
    if (sources.some((s) => key(s) === current)) $("log-source").value = current;
  }
  log.sources = sources;
  const chosen = sources[$("log-source").selectedIndex] || {};
  const moved = chosen.version !== log.version && $("log-follow").checked;
  if (key(chosen) !== log.wanted || moved) openLog();
}

function render(job) {
  $("title").textContent = job.kind + " " + job.namespace + "/" + job.name;
  document.title = job.name + " - t9k console";
  renderHead(job.head);
  renderConditions(job.conditions);
  renderReplicas(job.replicas);
  fill("restarts", job.restarts);
  renderScheduling(job.scheduling);
  $("events-error").textContent = job.eventsError ? "Events not read: " + job.eventsError : "";
  fill("events", job.events.map((e) => [e.time + " (" + e.age + " ago)", e.type, e.reason,
    e.object, e.count, e.message]));
  $("yaml").textContent = job.yaml;
  renderSources(job.replicas);
  renderActions(job);
}

// -- the log ----------------------------------------------------------------------

function lineNode(text, query) {
  const span = el("span", undefined, "line");
  if (!query) {
    span.textContent = text;
    return span;
  }
  const lower = text.toLowerCase();
  let at = 0;
  for (let i = lower.indexOf(query); i >= 0; i = lower.indexOf(query, at)) {
    span.append(text.slice(at, i), el("mark", text.slice(i, i + query.length)));
    at = i + query.length;
  }
  span.append(text.slice(at));
  return span;
}

function shown(text, query) {
  return !query || text.toLowerCase().includes(query);
}

function renderLog() {
  const query = $("log-search").value.toLowerCase();
  const lines = log.lines.filter((t) => shown(t, query));
  $("log").replaceChildren(...lines.map((t) => lineNode(t, query)));
  return lines.length;
}

function addLines(texts) {
  const query = $("log-search").value.toLowerCase();
  const pre = $("log");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  log.lines.push(...texts);
  if (log.lines.length > MAX_LINES) {
    log.lines.splice(0, log.lines.length - MAX_LINES);
    renderLog();
  } else {
    pre.append(...texts.filter((t) => shown(t, query)).map((t) => lineNode(t, query)));
  }
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

function logUrl(source, download) {
  const q = new URLSearchParams({ pod: source.pod, container: source.container });
  if ($("log-previous").checked) q.set("previous", "1");
  if (download) q.set("download", "1");
  else if ($("log-follow").checked && !$("log-previous").checked) q.set("follow", "1");
  return api + "/logs?" + q.toString();
}

function stopLog() {
  if (log.controller) log.controller.abort();
  log.controller = null;
}

async function openLog() {
  stopLog();
  log.lines = [];
  renderLog();
  const source = log.sources[$("log-source").selectedIndex];
  log.wanted = source ? source.pod + "/" + source.container : "";
  log.version = source ? source.version : "";
  if (!source) {
    $("log-status").textContent = "No pod yet.";
    $("log-download").removeAttribute("href");
    return;
  }
  $("log-download").href = logUrl(source, true);
  const controller = new AbortController();
  log.controller = controller;
  $("log-status").textContent = "Reading the log of " + source.label + "\u2026";
  try {
    const response = await fetch(logUrl(source, false), { signal: controller.signal });
    if (!response.ok) {
      $("log-status").textContent = "No log: " + (await response.text());
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let rest = "";
    $("log-status").textContent = logUrl(source, false).includes("follow=1")
      ? "Following the log of " + source.label : "The log of " + source.label;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const texts = (rest + value).split("\n");
      rest = texts.pop();
      if (texts.length) addLines(texts);
    }
    if (rest) addLines([rest]);
    if (log.controller === controller) {
      $("log-status").textContent = "The log of " + source.label + " (ended)";
    }
  } catch (e) {
    if (e.name !== "AbortError") $("log-status").textContent = "The log broke off: " + e.message;
  }
}

// -- actions ----------------------------------------------------------------------
// Pause, resume and delete, each after a confirmation in a modal dialog (the
// keyboard's: Tab between its buttons, Escape cancels), as POST requests that
// carry the session's CSRF token. A refusal shows the API server's message.

const PROMPTS = {
  pause: "Pause this job? Its pods are deleted until it is resumed.",
  resume: "Resume this job? Its pods are created again.",
  delete: "Delete this job? Its pods, Services and TensorBoard go with it; this cannot be undone.",
};

function renderActions(job) {
  const ended = job.phase === "Succeeded" || job.phase === "Failed";
  const paused = job.phase === "Paused" || job.phase === "Pausing";
  $("action-pause").disabled = ended || paused;
  $("action-resume").disabled = ended || !paused;
}

async function act(verb) {
  $("action-error").hidden = true;
  $("action-status").textContent = verb[0].toUpperCase() + verb.slice(1) + "\u2026";
  let response, data;
  try {
    response = await fetch(api + "/" + verb, {
      method: "POST",
      headers: { "X-CSRF-Token": csrf() },
      credentials: "same-origin",
    });
    data = await response.json().catch(() => ({}));
  } catch (e) {
    $("action-status").textContent = "The console did not answer: " + e.message;
    return;
  }
  if (response.ok) {
    $("action-status").textContent = data.message || verb + ": done";
    return;
  }
  $("action-status").textContent = "Refused (HTTP " + response.status + ")";
  $("action-error").textContent = data.error || ("HTTP " + response.status);
  $("action-error").hidden = false;
  $("action-error").focus();
}

function confirmAction(verb, opener) {
  const dialog = $("confirm");
  $("confirm-title").textContent = verb[0].toUpperCase() + verb.slice(1) + " " + kind + " " +
    namespace + "/" + name + "?";
  $("confirm-text").textContent = PROMPTS[verb];
  $("confirm-ok").textContent = verb[0].toUpperCase() + verb.slice(1);
  dialog.returnValue = "";
  dialog.showModal();
  dialog.addEventListener("close", () => {
    opener.focus();
    if (dialog.returnValue === "ok") act(verb);
  }, { once: true });
}

// -- live -------------------------------------------------------------------------

function connect() {
  events = new EventSource(api + "/events");
  events.addEventListener("job", (e) => {
    render(JSON.parse(e.data));
    document.dispatchEvent(new CustomEvent("t9k:job"));  // chart.js reads its charts again
    $("status").textContent = "Live";
    $("status").classList.remove("offline");
  });
  events.addEventListener("gone", () => {
    document.querySelectorAll("#actions button").forEach((b) => { b.disabled = true; });
    $("status").textContent = "This job has been deleted.";
    $("status").classList.add("offline");
  });
  events.addEventListener("error", () => {
    $("status").textContent = "Disconnected: reconnecting\u2026";
    $("status").classList.add("offline");
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("title").textContent = kind + " " + namespace + "/" + name;
  $("log-form").addEventListener("submit", (e) => e.preventDefault());
  document.querySelectorAll("#actions button[data-verb]").forEach((b) => {
    b.addEventListener("click", () => confirmAction(b.dataset.verb, b));
  });
  $("log-source").addEventListener("change", openLog);
  $("log-previous").addEventListener("change", openLog);
  $("log-follow").addEventListener("change", openLog);
  $("log-search").addEventListener("input", () => {
    const n = renderLog();
    $("log-status").textContent = $("log-search").value
      ? n + " of " + log.lines.length + " lines match" : "";
  });
  window.addEventListener("pagehide", () => {
    stopLog();
    if (events) events.close();
  });
  window.addEventListener("pageshow", (e) => {
    if (!e.persisted) return;  // back from the browser's cache: read again
    connect();
    openLog();
  });
  connect();
});
