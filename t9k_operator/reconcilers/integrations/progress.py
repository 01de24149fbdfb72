"""Training progress: the replicas' reports in the job's status, and what the
engine's hang rule judges.

A training process reports its progress (``t9k_operator/report.py``) to the
operator's endpoint, which checks who sent it and keeps it in a store
(:class:`ProgressSource` is what this integration reads of it; the store
itself, thread-safe, is ``reconcilers/apply/progress.py``). Per job, in a
reconcile, this integration

- observes the latest report of each of the job's pods (:class:`Received`)
  and puts when each was heard into the job's view (``JobView.heard``): the
  engine's hang rule (runPolicy.progress) judges from it, restarting or
  failing the job as the job asks; the integration itself holds nothing back
  and builds nothing;
- renders ``status.progress`` (:func:`render`): the newest report's step,
  total, epoch and metrics, the replica it came from and when, the
  throughput over that replica's recent reports and the time left.

Everything here is pure: times are given, never read. Not yet wired (see
docs/progress.md): the endpoint, so the store stays empty and the
integration is not in the registry yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from t9k_operator.api.progress import ProgressReport, human_seconds, summary
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import TERMINAL, fmt_time
from t9k_operator.reconcilers.integrations.contract import Base, Caches, Event, JobInput
from t9k_operator.reconcilers.kinds.view import Heard, JobView

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


class ProgressSource(Protocol):
    """What the integration reads of the store the endpoint fills."""

    def latest(self, job_uid: str) -> Sequence[Received]:
        """The latest report of each pod of the job (by the job's uid), any order."""
        ...


@dataclass(frozen=True)
class ProgressState:
    received: tuple[Received, ...] = ()


class JobProgress(Base[ProgressState]):
    """The progress integration, reading the endpoint's store."""

    name = "progress"

    def __init__(self, source: ProgressSource) -> None:
        self.source = source

    def observe(self, job: JobInput, caches: Caches) -> tuple[ProgressState, JobView] | None:
        received = tuple(self.source.latest(job.view.uid))
        view = replace(job.view, heard=tuple(Heard(r.uid, r.at) for r in received))
        return ProgressState(received), view

    def status(self, state: ProgressState, view: JobView, status: Obj) -> list[Event]:
        # A job that had finished keeps what was last written; the pass that ends
        # it still writes the reports received until then.
        finished = view.status.get("phase") in TERMINAL
        progress = None if finished else render(state.received)
        if progress is not None:
            status["progress"] = progress
        elif view.status.get("progress"):
            status["progress"] = dict(view.status["progress"])  # kept as last written
        return []


def render(received: Sequence[Received]) -> Obj | None:
    """``status.progress`` from the pods' latest reports: the newest one's (the
    latest step, if several arrived at once), with its throughput and time
    left; None without reports."""
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
