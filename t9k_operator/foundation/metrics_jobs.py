"""The jobs that exist now (``t9k_jobs``, ``t9k_jobs_oldest_pending_seconds``)
and the training progress of those not finished (``t9k_job_progress_*``,
``t9k_job_seconds_since_progress_report``), read from the informer cache at
scrape time by :class:`JobsCollector`, and exported only while this process
leads, so sums over replicas count each job once.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from t9k_operator.foundation.metrics import custom_collector
from t9k_operator.objects import Obj, parse_time

PHASES = ("Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed")
"""The phases a job's ``status.phase`` takes; each is exported (0 when none) for
every kind and namespace that has a job, so a phase emptying shows as 0, not as
a series that vanishes. A job with no status yet counts as Pending."""

FINISHED = ("Succeeded", "Failed")
"""The phases after which a job's progress is no longer exported: it stays in
``status.progress``, and a finished job's silence is not news."""


class JobCache(Protocol):
    """What :class:`JobsCollector` reads of an informer."""

    def list(self) -> list[Obj]: ...

    def has_synced(self) -> bool: ...


class JobsCollector(Collector):
    """``t9k_jobs{kind,namespace,phase}`` and
    ``t9k_jobs_oldest_pending_seconds{kind,namespace}``, computed from the job
    informers' caches when Prometheus scrapes; and, for each job not finished
    that has a ``status.progress``, ``t9k_job_progress_ratio``,
    ``t9k_job_progress_step`` (``{kind,namespace,name}``) and
    ``t9k_job_seconds_since_progress_report{kind,namespace,name,phase}``.

    Only while ``exporting()`` is true (the manager passes "this process leads")
    and only for caches that have synced: a standby replica and a cold cache
    export nothing, so ``sum`` over every replica counts each job once and
    never counts a half-listed cache. The counts' labels are bounded by kinds x
    namespaces x phases: no job names. The progress series name their job, so
    they are bounded by the jobs not finished, and only those that report: a
    job's series end when it finishes (its last progress stays in its status).
    """

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._lock = threading.Lock()
        self._caches: dict[str, JobCache] = {}
        self._exporting: Callable[[], bool] = lambda: False
        self._now = now

    def watch(self, kind: str, cache: JobCache) -> None:
        """Count the jobs of ``kind`` in ``cache`` (replaces an earlier cache of that kind)."""
        with self._lock:
            self._caches[kind] = cache

    def export_while(self, exporting: Callable[[], bool] | None) -> None:
        """Export only while ``exporting()`` is true; ``None``: never."""
        with self._lock:
            self._exporting = exporting or (lambda: False)

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def _families(self) -> tuple[GaugeMetricFamily, ...]:
        return (
            GaugeMetricFamily(
                "t9k_jobs",
                "Jobs that exist now, by kind, namespace and phase (status.phase; no "
                "status yet counts as Pending). Exported by the leader only.",
                labels=["kind", "namespace", "phase"],
            ),
            GaugeMetricFamily(
                "t9k_jobs_oldest_pending_seconds",
                "Seconds the longest-Pending job of a kind in a namespace has been "
                "Pending (since status.startTime, else its creation). Exported by the "
                "leader only, for kinds and namespaces with a Pending job.",
                labels=["kind", "namespace"],
            ),
            GaugeMetricFamily(
                "t9k_job_progress_ratio",
                "How far a job's training is: status.progress step / totalSteps (a step "
                "past the total counts as the total), for jobs not finished that "
                "reported both. Exported by the leader only.",
                labels=["kind", "namespace", "name"],
            ),
            GaugeMetricFamily(
                "t9k_job_progress_step",
                "The latest step a job's training reported (status.progress.step), for "
                "jobs not finished. Exported by the leader only.",
                labels=["kind", "namespace", "name"],
            ),
            GaugeMetricFamily(
                "t9k_job_seconds_since_progress_report",
                "Seconds since the operator last received a progress report of a job "
                "(status.progress.lastReportTime), for jobs not finished that have "
                "reported, by the job's phase. Exported by the leader only.",
                labels=["kind", "namespace", "name", "phase"],
            ),
        )

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            caches = dict(self._caches)
            exporting = self._exporting
        if not exporting():
            return
        jobs, pending, ratio, step, silence = self._families()
        now = self._now()
        for kind, cache in sorted(caches.items()):
            if not cache.has_synced():
                continue
            counts: dict[str, dict[str, int]] = {}
            oldest: dict[str, float] = {}
            for job in cache.list():
                meta = job.get("metadata") or {}
                namespace = str(meta.get("namespace") or "")
                phase = str((job.get("status") or {}).get("phase") or "Pending")
                by_phase = counts.setdefault(namespace, dict.fromkeys(PHASES, 0))
                by_phase[phase] = by_phase.get(phase, 0) + 1
                if phase == "Pending":
                    status = job.get("status") or {}
                    since = parse_time(status.get("startTime")) or parse_time(
                        meta.get("creationTimestamp")
                    )
                    age = max(0.0, (now - since).total_seconds()) if since else 0.0
                    oldest[namespace] = max(oldest.get(namespace, 0.0), age)
                progress = (job.get("status") or {}).get("progress")
                if isinstance(progress, dict) and phase not in FINISHED:
                    ids = [kind, namespace, str(meta.get("name") or "")]
                    _add_progress(ids, phase, progress, now, ratio, step, silence)
            for namespace, by_phase in sorted(counts.items()):
                for phase, count in by_phase.items():
                    jobs.add_metric([kind, namespace, phase], count)
            for namespace, age in sorted(oldest.items()):
                pending.add_metric([kind, namespace], age)
        yield jobs
        yield pending
        yield ratio
        yield step
        yield silence


def _number(value: Any) -> float | None:
    """``value`` as a finite number; ``None`` for anything else (a bool included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _add_progress(
    ids: list[str],
    phase: str,
    progress: dict[str, Any],
    now: datetime,
    ratio: GaugeMetricFamily,
    step: GaugeMetricFamily,
    silence: GaugeMetricFamily,
) -> None:
    """One job's progress series, from its raw ``status.progress``."""
    current, total = _number(progress.get("step")), _number(progress.get("totalSteps"))
    if current is not None:
        step.add_metric(ids, current)
        if total is not None and total > 0:
            ratio.add_metric(ids, max(0.0, min(current, total)) / total)
    last = parse_time(progress.get("lastReportTime"))
    if last is not None:
        silence.add_metric([*ids, phase], max(0.0, (now - last).total_seconds()))


JOBS = custom_collector(JobsCollector)
"""The one :class:`JobsCollector`, on the default registry: job reconcilers
``watch`` their job informers, the manager says when to export."""
