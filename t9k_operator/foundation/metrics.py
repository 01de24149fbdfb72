"""The operator's Prometheus metrics, on the default registry: how each is
registered once, and the reconcile, leader-election, job-lifecycle and Event
figures, written as things happen.

Reconcile figures use controller-runtime's names, so existing dashboards and
alerts work unchanged (``controller_runtime_reconcile_total`` and friends,
``leader_election_master_status``). Job lifecycle and Event figures are ours
(``t9k_*``), labelled by kind and namespace. The other areas have a module
each: :mod:`~t9k_operator.foundation.metrics_workqueue` (client-go's
``workqueue_*``), :mod:`~t9k_operator.foundation.metrics_client` (the API
client and the informers' requests) and
:mod:`~t9k_operator.foundation.metrics_jobs` (the jobs that exist now, read
from the informer cache at scrape time).

Each collector is registered once, by :func:`collector`, which returns the one
already registered under its name when a module defining it is loaded again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.registry import Collector

_M = TypeVar("_M", Counter, Gauge, Histogram)
_C = TypeVar("_C", bound=Collector)


def collector(
    cls: type[_M], name: str, documentation: str, labels: Sequence[str] = (), **kwargs: Any
) -> _M:
    """The collector registered under ``name``, made and registered now unless
    one already is (this module, or the one calling it, loaded again)."""
    existing = REGISTRY._names_to_collectors.get(name)
    if isinstance(existing, cls):
        return existing
    return cls(name, documentation, list(labels), **kwargs)


def custom_collector(cls: type[_C]) -> _C:
    """The one registered collector of class ``cls`` (found by the class's name,
    so a module loaded again finds its first load's), made and registered now
    unless one is."""
    for existing in list(REGISTRY._collector_to_names):
        if type(existing).__name__ == cls.__name__:
            return existing  # type: ignore[return-value]
    made = cls()
    REGISTRY.register(made)
    return made


# -- reconciles and leader election (controller-runtime's names) ----------------------

RECONCILE_TOTAL = collector(
    Counter,
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller and result.",
    ["controller", "result"],
)
RECONCILE_ERRORS = collector(
    Counter,
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller.",
    ["controller"],
)
RECONCILE_TIME = collector(
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
ACTIVE_WORKERS = collector(
    Gauge,
    "controller_runtime_active_workers",
    "Number of currently used workers per controller.",
    ["controller"],
)
MAX_CONCURRENT_RECONCILES = collector(
    Gauge,
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller.",
    ["controller"],
)
LEADER = collector(
    Gauge,
    "leader_election_master_status",
    "1 while this process holds the leader lease, else 0.",
    ["name"],
)

# -- jobs and Events (ours) -------------------------------------------------------------

JOBS_CREATED = collector(
    Counter, "t9k_jobs_created_total", "Jobs first seen by the operator.", ["kind", "namespace"]
)
JOBS_SUCCEEDED = collector(
    Counter, "t9k_jobs_succeeded_total", "Jobs that reached Succeeded.", ["kind", "namespace"]
)
JOBS_FAILED = collector(
    Counter,
    "t9k_jobs_failed_total",
    "Jobs that reached Failed, by reason.",
    ["kind", "namespace", "reason"],
)
JOBS_RESTARTED = collector(
    Counter,
    "t9k_jobs_restarted_total",
    "Replica recreations counted against backoffLimit.",
    ["kind", "namespace"],
)
JOB_DURATION = collector(
    Histogram,
    "t9k_job_duration_seconds",
    "From the job's start to its completion, by kind and outcome.",
    ["kind", "namespace", "phase"],
    buckets=(10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800),
)
EVENTS_DROPPED = collector(
    Counter,
    "t9k_events_dropped_total",
    "Kubernetes Events that were never written: recorder queue full or the write failed.",
)
PROGRESS_REPORTS = collector(
    Counter,
    "t9k_progress_reports_total",
    "Progress reports received by the operator's endpoint, by result: accepted, "
    "invalid, unauthenticated, forbidden, rate_limited, not_found, unavailable, too_large; "
    "and by the reason of a refusal by the token (unauthenticated, forbidden).",
    ["result", "reason"],
)
