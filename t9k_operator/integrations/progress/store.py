"""Where the replicas' progress reports wait for their job's reconcile.

The endpoint (``integrations/progress/endpoint.py``) calls, for each report it
takes, :meth:`ProgressStore.record` and then :meth:`Coalescer.report`, and
adds the job to its queue after the delay that returns (None: a reconcile
that will carry the report is already due). A reconcile reads the store
through the progress integration (``integrations/progress/integration.py``),
as the :class:`Reporting` its server provides.
So however many reports arrive, they cause at most one reconcile of a job,
and one status write, per ``interval`` seconds.

Both are thread-safe (the endpoint's threads and the workers share them) and
take the time as an argument: the callers read the clock.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from t9k_operator.integrations.progress.pods import Settings
from t9k_operator.integrations.progress.reports import ProgressReport
from t9k_operator.integrations.progress.status import Received, Sample

SAMPLES = 8
"""Earlier steps kept per pod, for the throughput."""
SAMPLE_EVERY = 10.0
"""Seconds between two kept samples of a pod (reports in between replace the latest only)."""
MAX_PODS = 4096
"""Pods remembered per job: a report of one more is dropped."""


class ProgressStore:
    """The latest report of each pod of each job (by the job's uid), with a few
    earlier steps of the same pod and the newest checkpoint it reported; a
    report of a pod that was replaced (a new uid under the same name) starts
    afresh."""

    def __init__(self, samples: int = SAMPLES, sample_every: float = SAMPLE_EVERY) -> None:
        self.samples, self.sample_every = samples, sample_every
        self._lock = threading.Lock()
        self._jobs: dict[str, dict[str, Received]] = {}

    def record(
        self, job_uid: str, pod: str, pod_uid: str, report: ProgressReport, at: datetime
    ) -> bool:
        """Keep ``report``, received at ``at``; whether it was kept (not: an older
        report of the same pod than the one kept, or one pod too many)."""
        with self._lock:
            pods = self._jobs.setdefault(job_uid, {})
            before = pods.get(pod)
            if before is None and len(pods) >= MAX_PODS:
                return False
            samples: tuple[Sample, ...] = ()
            saved = None if report.checkpoint_step is None else Sample(at, report.checkpoint_step)
            if before is not None and before.uid == pod_uid:
                if at < before.at:
                    return False
                saved = saved or before.checkpoint
                if not report.has_progress:  # a checkpoint alone: the progress stays
                    pods[pod] = replace(before, heard=at, checkpoint=saved)
                    return True
                samples = self._samples(before)
            pods[pod] = Received(pod, pod_uid, at, report, samples, checkpoint=saved)
            return True

    def alive(self, job_uid: str, pod: str, pod_uid: str, at: datetime) -> bool:
        """A liveness report of ``pod`` at ``at``: it was heard, with no progress;
        whether that was kept (only for a pod whose report is kept: a pod that
        has not reported its progress is not judged)."""
        with self._lock:
            before = self._jobs.get(job_uid, {}).get(pod)
            if before is None or before.uid != pod_uid or at <= before.last_heard:
                return False
            self._jobs[job_uid][pod] = replace(before, heard=at)
            return True

    def _samples(self, before: Received) -> tuple[Sample, ...]:
        """The samples once ``before`` is no longer the latest report."""
        kept = before.samples
        if before.report.step is None:
            return kept
        if kept and kept[-1].step > before.report.step:
            kept = ()  # the training went back (from a checkpoint): another run
        if kept and before.at - kept[-1].at < timedelta(seconds=self.sample_every):
            return kept
        return (*kept, Sample(before.at, before.report.step))[-self.samples :]

    def latest(self, job_uid: str) -> list[Received]:
        with self._lock:
            return list(self._jobs.get(job_uid, {}).values())

    def forget(self, job_uid: str) -> None:
        """The job is gone: its reports with it."""
        with self._lock:
            self._jobs.pop(job_uid, None)


class Coalescer:
    """When a job is reconciled for its reports: at once after a quiet
    ``interval``, else ``interval`` after the reconcile last asked for; never
    twice for reports that one due reconcile will carry. So reports cause at
    most one reconcile of a job, and so one status write, per ``interval``,
    and the last report of a burst is always carried by one."""

    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._due: dict[Hashable, float] = {}

    def report(self, key: Hashable, now: float) -> float | None:
        """A report for the job ``key`` was kept at ``now`` (monotonic seconds):
        the delay to reconcile it after, or None when the reconcile already
        asked for has not run yet (it reads the store when it runs)."""
        with self._lock:
            due = self._due.get(key)
            if due is not None and now <= due:
                return None
            if due is None or now >= due + self.interval:
                self._due[key] = now
                return 0.0
            self._due[key] = due + self.interval  # the one due has run: the next
            return due + self.interval - now

    def due_in(self, key: Hashable, now: float) -> float:
        """Seconds from ``now`` to the reconcile last asked for (0 when past)."""
        with self._lock:
            return max(0.0, self._due.get(key, now) - now)

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._due.pop(key, None)


@dataclass
class Reporting:
    """What the serving endpoint provides the progress integration (its
    ``ProgressSource``): where it serves, the CA its certificate chains to
    (replaced when the certificate is renewed) and the reports it took."""

    settings: Settings
    store: ProgressStore
    ca: str = ""

    def latest(self, job_uid: str) -> list[Received]:
        return self.store.latest(job_uid)
