"""What ``t9k`` shows of ``status.progress``: ``t9k list``'s PROGRESS and ETA
columns, and its lines in ``t9k describe``'s head, after Restarts (step,
epoch, throughput and time left; the metrics; who reported last and when).

Pure: the job as listed, and the time.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from t9k_operator.api.parts import CommandView, ListColumn
from t9k_operator.objects import parse_time
from t9k_operator.sdk import views

Obj = Mapping[str, Any]


def _progress(job: Obj) -> Mapping[str, Any]:
    progress = (job.get("status") or {}).get("progress")
    return progress if isinstance(progress, dict) else {}


def progress_column(job: Obj, pods: Sequence[Obj], now: datetime) -> str:
    """PROGRESS: ``status.progress.summary`` (``420/1000 (42%)``)."""
    return str(_progress(job).get("summary") or "")


def eta_column(job: Obj, pods: Sequence[Obj], now: datetime) -> str:
    """ETA: the time left at the last report."""
    return str(_progress(job).get("eta") or "")


def progress_lines(job: Obj, now: datetime) -> list[str]:
    """``t9k describe``'s words on ``status.progress``: step, epoch, throughput and
    time left; the metrics; who reported last and when. Empty without reports."""
    p = _progress(job)
    if not p:
        return []
    parts = [str(p.get("summary") or p.get("step") or "-")]
    if p.get("epoch") is not None:
        parts.append(f"epoch {p['epoch']:g}")
    if p.get("stepsPerSecond") is not None:
        parts.append(f"{p['stepsPerSecond']:g} steps/s")
    if p.get("eta"):
        parts.append(f"ETA {p['eta']}")
    lines = [", ".join(parts)]
    metrics = p.get("metrics") or {}
    if metrics:
        lines.append(", ".join(f"{k}={v:g}" for k, v in sorted(metrics.items())))
    at = parse_time(p.get("lastReportTime"))
    if at is not None:
        ago = views.human_duration((now - at).total_seconds())
        lines.append(f"last report {ago} ago, from {p.get('replica') or '<unknown>'}")
    return lines


def progress_fields(job: Obj, now: datetime) -> list[tuple[str, str]]:
    """The describe head's Progress lines, labelled on the first."""
    return [("Progress" if n == 0 else "", line) for n, line in enumerate(progress_lines(job, now))]


class ProgressView(CommandView):
    """PROGRESS and ETA in ``t9k list``; Progress in ``t9k describe``."""

    columns = (ListColumn("PROGRESS", progress_column), ListColumn("ETA", eta_column))
    head_after = "Restarts"

    def fields(
        self, args: argparse.Namespace, job: Obj, pods: Sequence[Obj]
    ) -> list[tuple[str, str]]:
        return progress_fields(job, views.now_utc())


VIEW = ProgressView()
