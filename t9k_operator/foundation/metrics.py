"""Every Prometheus metric of the operator, on the default registry.

Workqueue and reconcile figures use client-go's and controller-runtime's names,
so existing dashboards and alerts work unchanged (``workqueue_*``,
``controller_runtime_reconcile_total`` and friends, ``leader_election_master_status``).
Job lifecycle and Event figures are ours (``t9k_*``), labelled by kind and namespace.
The jobs that exist now (``t9k_jobs``, ``t9k_jobs_oldest_pending_seconds``) and
the training progress of those not finished (``t9k_job_progress_*``,
``t9k_job_seconds_since_progress_report``) are read from the informer cache at
scrape time by :class:`JobsCollector`, and exported only while this process
leads, so sums over replicas count each job once.

Each collector is registered once, by :func:`_collector`, which returns the one
already registered under its name when this module is loaded again.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from t9k_operator.objects import Obj

_M = TypeVar("_M", Counter, Gauge, Histogram)


def _collector(
    cls: type[_M], name: str, documentation: str, labels: Sequence[str] = (), **kwargs: Any
) -> _M:
    existing = REGISTRY._names_to_collectors.get(name)
    if isinstance(existing, cls):
        return existing
    return cls(name, documentation, list(labels), **kwargs)


# -- workqueue (client-go's names; label: the queue's name) ----------------------------

# Exponential buckets 1e-8 s .. 10 s, factor 10, written out so the ``le`` labels
# are clean (repeated float multiplication would give 1.0000000000000001e-07).
_DURATION_BUCKETS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)

DEPTH = _collector(Gauge, "workqueue_depth", "Current depth of workqueue", ["name"])
ADDS = _collector(
    Counter, "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"]
)
QUEUE_LATENCY = _collector(
    Histogram,
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name"],
    buckets=_DURATION_BUCKETS,
)
WORK_DURATION = _collector(
    Histogram,
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=_DURATION_BUCKETS,
)
UNFINISHED_WORK = _collector(
    Gauge,
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been "
    "observed by work_duration. Large values indicate stuck threads. One can deduce "
    "the number of stuck threads by observing the rate at which this increases.",
    ["name"],
)
LONGEST_RUNNING = _collector(
    Gauge,
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name"],
)
RETRIES = _collector(
    Counter, "workqueue_retries_total", "Total number of retries handled by workqueue", ["name"]
)

# -- the API client ---------------------------------------------------------------------

API_REQUESTS = _collector(
    Counter,
    "rest_client_requests_total",
    "Requests this process sent to the API server, by the answer's HTTP status code "
    "('<error>' when none came), method and host (controller-runtime's name).",
    ["code", "method", "host"],
)
INFORMER_REQUESTS = _collector(
    Counter,
    "t9k_informer_requests_total",
    "Requests the informers sent to the API server, by resource and verb: each page of a "
    "list and each start of a watch. Relists and re-watches show here; the rest of "
    "rest_client_requests_total's GETs are the reconciles' own reads.",
    ["resource", "verb"],
)
API_LIMITER_WAIT = _collector(
    Histogram,
    "t9k_client_rate_limiter_wait_seconds",
    "Seconds a request waited for its client's own rate limiter before it was sent, by "
    "client (its user agent: the reconcile budget, Events, leader election) and method.",
    ["client", "method"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0),
)

# -- reconciles and leader election (controller-runtime's names) ----------------------

RECONCILE_TOTAL = _collector(
    Counter,
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller and result.",
    ["controller", "result"],
)
RECONCILE_ERRORS = _collector(
    Counter,
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller.",
    ["controller"],
)
RECONCILE_TIME = _collector(
    Histogram,
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller.",
    ["controller"],
    buckets=(
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.25,
        1.5,
        1.75,
        2.0,
        2.5,
        3.0,
        3.5,
        4.0,
        4.5,
        5,
        6,
        7,
        8,
        9,
        10,
        15,
        20,
        25,
        30,
        40,
        50,
        60,
    ),
)
ACTIVE_WORKERS = _collector(
    Gauge,
    "controller_runtime_active_workers",
    "Number of currently used workers per controller.",
    ["controller"],
)
MAX_CONCURRENT_RECONCILES = _collector(
    Gauge,
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller.",
    ["controller"],
)
LEADER = _collector(
    Gauge,
    "leader_election_master_status",
    "1 while this process holds the leader lease, else 0.",
    ["name"],
)

# -- jobs and Events (ours) -------------------------------------------------------------

JOBS_CREATED = _collector(
    Counter, "t9k_jobs_created_total", "Jobs first seen by the operator.", ["kind", "namespace"]
)
JOBS_SUCCEEDED = _collector(
    Counter, "t9k_jobs_succeeded_total", "Jobs that reached Succeeded.", ["kind", "namespace"]
)
JOBS_FAILED = _collector(
    Counter,
    "t9k_jobs_failed_total",
    "Jobs that reached Failed, by reason.",
    ["kind", "namespace", "reason"],
)
JOBS_RESTARTED = _collector(
    Counter,
    "t9k_jobs_restarted_total",
    "Replica recreations counted against backoffLimit.",
    ["kind", "namespace"],
)
JOB_DURATION = _collector(
    Histogram,
    "t9k_job_duration_seconds",
    "From the job's start to its completion, by kind and outcome.",
    ["kind", "namespace", "phase"],
    buckets=(10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800),
)
EVENTS_DROPPED = _collector(
    Counter,
    "t9k_events_dropped_total",
    "Kubernetes Events that were never written: recorder queue full or the write failed.",
)
PROGRESS_REPORTS = _collector(
    Counter,
    "t9k_progress_reports_total",
    "Progress reports received by the operator's endpoint, by result: accepted, "
    "invalid, unauthenticated, forbidden, rate_limited, not_found, unavailable, too_large.",
    ["result"],
)


# -- jobs that exist now, from the cache at scrape time (ours) ----------------------------

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


def _parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


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
                    since = _parse_time(status.get("startTime")) or _parse_time(
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
    last = _parse_time(progress.get("lastReportTime"))
    if last is not None:
        silence.add_metric([*ids, phase], max(0.0, (now - last).total_seconds()))


def _jobs_collector() -> JobsCollector:
    for collector in list(REGISTRY._collector_to_names):
        if type(collector).__name__ == "JobsCollector":
            return collector  # type: ignore[return-value]
    collector = JobsCollector()
    REGISTRY.register(collector)
    return collector


JOBS = _jobs_collector()
"""The one :class:`JobsCollector`, on the default registry: job reconcilers
``watch`` their job informers, the manager says when to export."""
