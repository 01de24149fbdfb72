// A time chart of a few lines, drawn by uPlot on a canvas: its time axis, its
// ticks, the hover cursor with each line's value, and a legend. The lines may
// be sampled at different times; uPlot.join lines them up. Labels and values
// reach the page as text (uPlot writes them with textContent), and what uPlot
// styles it styles through element.style, which the console's
// Content-Security-Policy allows (it refuses style attributes in markup).

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

const HEIGHT = 220, MAX_WIDTH = 768;

// The hour and minute of time t (seconds), with the day when `long`.
export function clock(t, long) {
  const d = new Date(t * 1000);
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return long ? d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + time : time;
}

// The page's text color, at opacity `alpha`: a canvas knows no currentColor.
function ink(target, alpha) {
  const rgb = getComputedStyle(target).color.match(/[\d.]+/g) || [0, 0, 0];
  return "rgba(" + rgb.slice(0, 3).join(", ") + ", " + alpha + ")";
}

function axis(target, values) {
  return {
    stroke: ink(target, 1),
    grid: { stroke: ink(target, 0.12), width: 1 },
    ticks: { stroke: ink(target, 0.5), width: 1 },
    values: (u, splits) => splits.map(values),
  };
}

function widthOf(target) {
  return Math.min(MAX_WIDTH, target.clientWidth || MAX_WIDTH);
}

// Draw `lines` ([{points: [[t, v]], label, color, dash}]) in `target`, in
// place of what it held; box: {x0, x1, y0, y1}, the ranges shown; yText(v):
// a value as the axis and the legend write it. Returns the chart (or null when
// no line has a point), to be destroyed before the next.
export function timeChart(target, lines, box, label, yText) {
  target.replaceChildren();
  const drawn = lines.filter((l) => l.points.length);
  if (!drawn.length) return null;
  const tables = drawn.map((l) => [l.points.map((p) => p[0]), l.points.map((p) => p[1])]);
  const data = uPlot.join(tables, tables.map(() => [0]));
  const long = box.x1 - box.x0 > 20 * 3600;
  const chart = new uPlot({
    width: widthOf(target),
    height: HEIGHT,
    // Each line's value at the time under the cursor, or none ("--"), not
    // its nearest point's.
    cursor: { dataIdx: (u, seriesIdx, hoveredIdx) => hoveredIdx },
    scales: { x: { time: true, range: () => [box.x0, box.x1] }, y: { range: () => [box.y0, box.y1] } },
    axes: [axis(target, (t) => clock(t, long)), { ...axis(target, yText), size: 56 }],
    series: [
      { label: "Time", value: (u, t) => (t == null ? "--" : clock(t, true)) },
      ...drawn.map((l) => ({
        label: l.label,
        stroke: l.color,
        width: 2,
        dash: l.dash,
        spanGaps: true,
        ...(l.points.length === 1 ? { points: { show: true, fill: l.color } } : {}),
        value: (u, v) => (v == null ? "--" : yText(v)),
      })),
    ],
  }, data, target);
  chart.ctx.canvas.setAttribute("role", "img");
  chart.ctx.canvas.setAttribute("aria-label", label);
  return chart;
}

// Keep `chart()`'s chart as wide as its target.
export function followWidth(target, chart) {
  new ResizeObserver(() => {
    const c = chart();
    if (c) c.setSize({ width: widthOf(target), height: HEIGHT });
  }).observe(target);
}
