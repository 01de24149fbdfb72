// The Job page's charts: the job's steps over time with the ETA, its GPUs'
// utilization with the idle-GPU flag, and the link to its TensorBoard, from
// GET /api/jobs/<ns>/<kind>/<name>/charts. Read again when the page's job
// changes (job.js dispatches "t9k:job"), at most every few seconds, and every
// half minute while a Prometheus answers. Drawn by uPlot (lib/lines.js); every
// string from the cluster is written as text.

import { $, pageJob } from "./lib/dom.js";
import { followWidth, timeChart } from "./lib/lines.js";

const parts = pageJob();
const api = "/api/jobs/" + parts.map(encodeURIComponent).join("/") + "/charts";
const MIN_GAP = 5000, POLL = 30000;
const STEPS = "#0969da", ETA = "#9a6700";
const GPUS = ["#0969da", "#1a7f37", "#9a6700", "#cf222e", "#8250df", "#bf3989", "#0a7480", "#6e7781"];
const charts = { progress: null, gpu: null };
let last = 0, timer = null, busy = false, pending = false;

// Draw chart `which` in its element anew.
function draw(which, lines, box, label, yText) {
  if (charts[which]) charts[which].destroy();
  charts[which] = box ? timeChart($(which + "-chart"), lines, box, label, yText) : null;
  if (!charts[which]) $(which + "-chart").replaceChildren();
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
  const series = [{ points, label: "Step", color: STEPS }];
  const extra = [];
  const lastPoint = points[points.length - 1];
  if (lastPoint && p.totalSteps && p.stepsPerSecond > 0) {
    const end = lastPoint[0] + Math.max(0, p.totalSteps - lastPoint[1]) / p.stepsPerSecond;
    series.push({ points: [lastPoint, [end, p.totalSteps]], label: "Projected", color: ETA, dash: [6, 4] });
  }
  if (p.totalSteps) extra.push([lastPoint ? lastPoint[0] : now, p.totalSteps]);
  const box = bounds(series, extra);
  $("progress-eta").textContent = (p.summary ? "Progress " + p.summary : "No progress reported")
    + (p.eta ? " \u2014 ETA " + p.eta : "");
  draw("progress", series, box, "Steps over time" + (p.eta ? ", ETA " + p.eta : ""), (v) => String(Math.round(v)));
  $("progress-note").textContent = points.length + " point(s), from the " + p.source
    + (p.totalSteps ? "; dashed: the projection to step " + p.totalSteps + " at the current rate" : "");
}

function renderGpus(g) {
  const note = $("gpu-note");
  if (!g.available) {
    draw("gpu", [], null);
    note.textContent = g.note;
    return;
  }
  const series = g.series.map((s, i) => ({ points: s.points, label: s.pod + " " + s.gpu, color: GPUS[i % GPUS.length] }));
  const box = bounds(series);
  if (box) box.y1 = 100;
  draw("gpu", series, box, "GPU utilization, percent, per GPU", (v) => Math.round(v) + "%");
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
document.addEventListener("DOMContentLoaded", () => {
  ["progress", "gpu"].forEach((which) => followWidth($(which + "-chart"), () => charts[which]));
  refresh();
});
