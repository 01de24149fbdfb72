"""The steps each job reported, as the console saw them since it started watching.

Every version of a job the informers hand the board passes through
:meth:`ProgressHistory.record`; a ``status.progress`` whose step or report
time moved adds a point (when the operator received the report, its
``lastReportTime``, else when the console saw it; and the step). The history
is bounded: :data:`MAX_POINTS` points a job (when full, every other point of
the older half is dropped, so a long run keeps its whole span at a coarser
grain) and :data:`MAX_JOBS` jobs (the one least recently moved goes first).
A job deleted is forgotten. Thread-safe: the informers write, pages read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from t9k_operator.objects import parse_time

MAX_POINTS = 600
"""Points kept a job."""
MAX_JOBS = 2000
"""Jobs kept (a console watching more forgets the least recently moved)."""


@dataclass(frozen=True)
class Point:
    """A step, and when it was reported."""

    at: datetime
    step: int

    def to_json(self) -> list[float]:
        """``[unix seconds, step]``, as the page's chart reads a point."""
        return [self.at.timestamp(), self.step]


def _progress(job: Mapping[str, Any]) -> Mapping[str, Any]:
    progress = (job.get("status") or {}).get("progress")
    return progress if isinstance(progress, Mapping) else {}


def point_of(job: Mapping[str, Any], now: datetime) -> Point | None:
    """The job's latest step as a point; ``None`` without a step."""
    progress = _progress(job)
    step = progress.get("step")
    if isinstance(step, bool) or not isinstance(step, int | float):
        return None
    at = parse_time(progress.get("lastReportTime")) or now
    return Point(at, int(step))


def thin(points: list[Point], limit: int) -> list[Point]:
    """``points`` within ``limit``: every other point of the older half goes."""
    if len(points) <= limit:
        return points
    half = len(points) // 2
    return points[:half:2] + points[half:]


class ProgressHistory:
    """Each job's (time, step) points, by the board's job key."""

    def __init__(self, max_points: int = MAX_POINTS, max_jobs: int = MAX_JOBS) -> None:
        self.max_points, self.max_jobs = max_points, max_jobs
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, list[Point]] = OrderedDict()

    def record(self, key: str, job: Mapping[str, Any], now: datetime) -> bool:
        """Add the job's latest step if it is news; whether it was."""
        point = point_of(job, now)
        if point is None:
            return False
        with self._lock:
            points = self._jobs.get(key, [])
            if points and points[-1] == point:
                return False
            if points and point.at < points[-1].at:
                return False  # an older version of the job, seen late
            self._jobs[key] = thin([*points, point], self.max_points)
            self._jobs.move_to_end(key)
            while len(self._jobs) > self.max_jobs:
                self._jobs.popitem(last=False)
        return True

    def points(self, key: str) -> list[Point]:
        with self._lock:
            return list(self._jobs.get(key, []))

    def forget(self, key: str) -> None:
        with self._lock:
            self._jobs.pop(key, None)
