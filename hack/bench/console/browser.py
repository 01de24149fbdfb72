"""The Jobs page in headless Chromium (Debian's ``/usr/bin/chromium``, driven
by Playwright's driver): its first paint with every row, then its frames and
long tasks while the jobs change.

First paint: the page marks ``t9k:rows-rendered`` once the first snapshot's
rows are in the table and ``t9k:rows-painted`` in the task after the next
animation frame (after the browser painted them); both are read from
``performance``, in milliseconds from the start of the navigation (the one-time
token's exchange and its redirect included).

Smoothness: an animation-frame loop records every frame's time and a
``PerformanceObserver`` every long task (over 50 ms) while the server changes
the jobs; the events the page received are counted by wrapping nothing: the
stream is read by the bench beside the page (:func:`~.cli.count_events`).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CHROMIUM = "/usr/bin/chromium"

RECORD = """() => {
  window.__bench = { frames: [], longtasks: [] };
  window.__bench.observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__bench.longtasks.push(e.duration);
  });
  window.__bench.observer.observe({ type: "longtask" });
  const tick = () => {
    window.__bench.frames.push(performance.now());
    window.__bench.raf = requestAnimationFrame(tick);
  };
  window.__bench.raf = requestAnimationFrame(tick);
}"""

STOP = """() => {
  cancelAnimationFrame(window.__bench.raf);
  for (const e of window.__bench.observer.takeRecords()) window.__bench.longtasks.push(e.duration);
  return { frames: window.__bench.frames, longtasks: window.__bench.longtasks,
           rows: document.querySelectorAll("#jobs tbody tr").length };
}"""

MARKS = """() => {
  const at = (name) => (performance.getEntriesByName(name)[0] || {}).startTime;
  const fcp = performance.getEntriesByName("first-contentful-paint")[0];
  const nav = performance.getEntriesByType("navigation")[0];
  return { rendered: at("t9k:rows-rendered"), painted: at("t9k:rows-painted"),
           fcp: fcp ? fcp.startTime : null, html: nav ? nav.responseEnd : null,
           rows: document.querySelectorAll("#jobs tbody tr").length };
}"""


@dataclass
class FirstPaint:
    html_ms: float  # the page's HTML in (its response's end)
    fcp_ms: float  # the header painted
    rendered_ms: float  # the rows in the table
    painted_ms: float  # the rows painted
    rows: int


@dataclass
class Smoothness:
    seconds: float
    frames: int
    frame_median_ms: float
    frame_p95_ms: float
    frame_max_ms: float
    long_tasks: int
    long_task_ms: float  # their total
    long_task_max_ms: float
    rows: int


def first_paint(page: Any, url: str, timeout_ms: float = 120_000) -> FirstPaint:
    page.goto(url, wait_until="commit")
    page.wait_for_function(
        "() => performance.getEntriesByName('t9k:rows-painted').length > 0",
        timeout=timeout_ms,
        polling=50,
    )
    m = page.evaluate(MARKS)
    return FirstPaint(m["html"] or 0.0, m["fcp"] or 0.0, m["rendered"], m["painted"], m["rows"])


def smoothness(page: Any, during: Callable[[], float]) -> Smoothness:
    """The page's frames and long tasks while ``during`` runs (it returns the
    seconds it took)."""
    page.evaluate(RECORD)
    seconds = during()
    data = page.evaluate(STOP)
    frames = data["frames"]
    gaps = sorted(b - a for a, b in itertools.pairwise(frames)) or [0.0]
    tasks = data["longtasks"]
    return Smoothness(
        seconds=seconds,
        frames=len(frames),
        frame_median_ms=statistics.median(gaps),
        frame_p95_ms=gaps[int(0.95 * (len(gaps) - 1))],
        frame_max_ms=gaps[-1],
        long_tasks=len(tasks),
        long_task_ms=sum(tasks),
        long_task_max_ms=max(tasks, default=0.0),
        rows=data["rows"],
    )
