// The Job page's charts: the job's steps over time with the ETA, its GPUs'
// utilization with the idle-GPU flag, and the link to its TensorBoard, from
// GET /api/jobs/<ns>/<kind>/<name>/charts. Read again when the page's job
// changes (job.js dispatches "t9k:job"), at most every few seconds, and every
// half minute while a Prometheus answers. Drawn as SVG with DOM calls; every
// string from the cluster is written with textContent.

import { $, pageJob } from "./lib/dom.js";

const SVG = "http://www.w3.org/2000/svg";
const parts = pageJob();
const api = "/api/jobs/" + parts.map(encodeURIComponent).join("/") + "/charts";
const W = 640, H = 220, L = 56, R = 16, T = 12, B = 34;
const MIN_GAP = 5000, POLL = 30000;
let last = 0, timer = null, busy = false, pending = false;

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, String(v)));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function clock(t, long) {
  const d = new Date(t * 1000);
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return long ? d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + time : time;
}

function ticks(lo, hi, n) {
  const out = [];
  for (let i = 0; i <= n; i++) out.push(lo + (hi - lo) * i / n);
  return out;
}

// series: [{points: [[t, v]], cls, dashed}]; box: {x0, x1, y0, y1}
function lineChart(box, series, label, yText) {
  const root = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": label });
  const sx = (t) => L + (W - L - R) * (t - box.x0) / Math.max(1e-9, box.x1 - box.x0);
  const sy = (v) => H - B - (H - T - B) * (v - box.y0) / Math.max(1e-9, box.y1 - box.y0);
  ticks(box.y0, box.y1, 4).forEach((v) => {
    root.append(svg("line", { x1: L, x2: W - R, y1: sy(v), y2: sy(v), class: "grid" }));
    root.append(svg("text", { x: L - 6, y: sy(v) + 4, class: "tick y" }, yText(v)));
  });
  const long = box.x1 - box.x0 > 20 * 3600;
  ticks(box.x0, box.x1, 4).forEach((t, i) => {
    const where = i === 0 ? " first" : i === 4 ? " last" : "";
    root.append(svg("text", { x: sx(t), y: H - B + 18, class: "tick x" + where }, clock(t, long)));
  });
  root.append(svg("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }));
  root.append(svg("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }));
  series.forEach((s) => {
    if (!s.points.length) return;
    const d = s.points.map(([t, v], i) => (i ? "L" : "M") + sx(t).toFixed(1) + " " + sy(v).toFixed(1));
    root.append(svg("path", { d: d.join(" "), class: "line " + s.cls }));
    if (s.points.length === 1) {
      const [t, v] = s.points[0];
      root.append(svg("circle", { cx: sx(t), cy: sy(v), r: 3, class: "dot " + s.cls }));
    }
  });
  return root;
}

function bounds(series, extra) {
  const ts = [], vs = [];
  series.forEach((s) => s.points.forEach(([t, v]) => { ts.push(t); vs.push(v); }));
  (extra || []).forEach(([t, v]) => { ts.push(t); vs.push(v); });
  if (!ts.length) return null;
  let x0 = Math.min(...ts), x1 = Math.max(...ts);
  if (x1 - x0 < 60) { x0 -= 30; x1 += 30; }
  return { x0, x1, y0: 0, y1: Math.max(1, ...vs) };
}

function renderProgress(p, now) {
  const points = p.points;
  const series = [{ points, cls: "steps" }];
  const extra = [];
  const lastPoint = points[points.length - 1];
  if (lastPoint && p.totalSteps && p.stepsPerSecond > 0) {
    const end = lastPoint[0] + Math.max(0, p.totalSteps - lastPoint[1]) / p.stepsPerSecond;
    series.push({ points: [lastPoint, [end, p.totalSteps]], cls: "eta" });
  }
  if (p.totalSteps) extra.push([lastPoint ? lastPoint[0] : now, p.totalSteps]);
  const box = bounds(series, extra);
  $("progress-eta").textContent = (p.summary ? "Progress " + p.summary : "No progress reported")
    + (p.eta ? " \u2014 ETA " + p.eta : "");
  $("progress-chart").replaceChildren(box
    ? lineChart(box, series, "Steps over time" + (p.eta ? ", ETA " + p.eta : ""), (v) => Math.round(v))
    : document.createTextNode(""));
  $("progress-note").textContent = points.length + " point(s), from the " + p.source
    + (p.totalSteps ? "; dashed: the projection to step " + p.totalSteps + " at the current rate" : "");
}

function renderGpus(g) {
  const note = $("gpu-note");
  if (!g.available) {
    $("gpu-chart").replaceChildren();
    note.textContent = g.note;
    return;
  }
  const series = g.series.map((s, i) => ({ points: s.points, cls: "gpu gpu-" + (i % 8) }));
  const box = bounds(series);
  if (box) box.y1 = 100;
  $("gpu-chart").replaceChildren(box
    ? lineChart(box, series, "GPU utilization, percent, per GPU", (v) => Math.round(v) + "%")
    : document.createTextNode(""));
  const legend = g.series.map((s, i) => {
    const item = document.createElement("li");
    item.className = "gpu gpu-" + (i % 8);
    item.textContent = s.pod + " " + s.gpu;
    return item;
  });
  $("gpu-legend").replaceChildren(...legend);
  note.textContent = g.error ? "Prometheus: " + g.error
    : g.series.length ? "" : "No DCGM series for the job's pods (" + g.allocated + " GPU(s) allocated)";
}

function renderIdle(idle) {
  const flag = $("gpu-idle");
  flag.hidden = !idle.idle;
  flag.textContent = idle.idle
    ? "GPUs idle" + (idle.since ? " since " + idle.since : "") + ": " + idle.message : "";
  $("gpu-idle-state").textContent = idle.status
    ? "GPUsIdle=" + idle.status + (idle.reason ? " (" + idle.reason + ")" : "") : "";
}

function renderTensorBoard(tb) {
  const box = $("tensorboard");
  box.hidden = !tb.url;
  if (!tb.url) return;
  const link = $("tensorboard-link");
  link.href = tb.url;
  $("tensorboard-state").textContent = tb.ready ? "ready" : "not ready: " + tb.reason;
}

async function refresh() {
  if (busy) return;
  busy = true;
  last = Date.now();
  try {
    const answer = await fetch(api, { credentials: "same-origin", cache: "no-store" });
    if (!answer.ok) return;
    const data = await answer.json();
    renderProgress(data.progress, data.now);
    renderGpus(data.gpu);
    renderIdle(data.idle);
    renderTensorBoard(data.tensorboard);
    if (data.gpu.available && !timer) timer = setInterval(refresh, POLL);
  } catch (e) {
    $("progress-note").textContent = "Charts not read: " + e;
  } finally {
    busy = false;
  }
}

function soon() {
  if (pending) return;
  pending = true;
  setTimeout(() => { pending = false; refresh(); }, Math.max(0, last + MIN_GAP - Date.now()));
}

document.addEventListener("t9k:job", soon);
document.addEventListener("DOMContentLoaded", refresh);
