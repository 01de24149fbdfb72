"""``status.progress``, read purely from the replicas' reports: the report of
each pod the endpoint kept (:class:`Received`, with a few earlier steps), and
what the status shows of them (:func:`render`: the newest report, the
throughput over its replica's recent reports, the time left).

No I/O, no clock: when each report came is part of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from t9k_operator.integrations.progress.build import human_seconds, summary
from t9k_operator.integrations.progress.reports import ProgressReport
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import fmt_time

THROUGHPUT_WINDOW = 300.0
"""Seconds of a replica's reports the throughput is measured over."""


@dataclass(frozen=True)
class Sample:
    """A report's step, and when the operator received it."""

    at: datetime
    step: int


@dataclass(frozen=True)
class Received:
    """The latest report of one pod of a job, as the endpoint took it."""

    pod: str  # the pod's name (the replica)
    uid: str  # the pod's uid: reports of a pod since replaced are told apart
    at: datetime  # when the operator received it
    report: ProgressReport
    samples: tuple[Sample, ...] = ()
    """Earlier steps of the same pod, oldest first (the store keeps a few, for
    the throughput); the latest report is not among them."""
    heard: datetime | None = None
    """When a liveness report of the pod last came, if after ``at``."""
    checkpoint: Sample | None = None
    """The newest checkpoint the pod reported (its step, and when it came)."""

    @property
    def last_heard(self) -> datetime:
        """When the operator last heard from the pod (a report or a liveness one)."""
        return self.heard if self.heard is not None and self.heard > self.at else self.at


def render(received: Sequence[Received]) -> Obj | None:
    """``status.progress`` from the pods' latest reports: the newest one's (the
    latest step, if several arrived at once), with its throughput and time
    left; None without reports."""
    received = [r for r in received if r.report.has_progress]
    if not received:
        return None
    newest = max(received, key=lambda r: (r.at, r.report.step or 0, r.pod))
    report = newest.report
    out: Obj = {}
    if report.step is not None:
        out["step"] = report.step
    total = report.total_steps or _last_known_total(received)
    if total is not None:
        out["totalSteps"] = total
    if report.epoch is not None:
        out["epoch"] = report.epoch
    if report.metrics:
        out["metrics"] = dict(sorted(report.metrics.items()))
    out["replica"] = newest.pod
    out["lastReportTime"] = fmt_time(newest.at)
    rate = throughput(newest)
    if rate is not None:
        out["stepsPerSecond"] = round(rate, 4)
        left = eta_seconds(report.step, total, rate)
        if left is not None:
            out["eta"] = human_seconds(left)
    text = summary(report.step, total)
    if text is not None:
        out["summary"] = text
    return out


def _last_known_total(received: Sequence[Received]) -> int | None:
    """A total some pod reported (the newest report may leave it out)."""
    totals = [r for r in received if r.report.total_steps]
    if not totals:
        return None
    return max(totals, key=lambda r: r.at).report.total_steps


def throughput(received: Received, window: float = THROUGHPUT_WINDOW) -> float | None:
    """Steps per second over the pod's reports within ``window`` seconds of its
    latest, since its step last went back (a restart from a checkpoint); None
    without two reports of distinct times and steps in that run."""
    step = received.report.step
    if step is None:
        return None
    base: Sample | None = None
    for sample in reversed(received.samples):
        if sample.step > step:
            break  # the training went back: what came before is another run
        if (received.at - sample.at).total_seconds() > window:
            break
        base = sample
    if base is None:
        return None
    seconds = (received.at - base.at).total_seconds()
    if seconds <= 0 or step <= base.step:
        return None
    return (step - base.step) / seconds


def eta_seconds(step: int | None, total: int | None, rate: float) -> float | None:
    """Seconds left to ``total`` at ``rate`` steps per second (0 once reached)."""
    if step is None or not total or rate <= 0:
        return None
    return max(0, total - step) / rate
