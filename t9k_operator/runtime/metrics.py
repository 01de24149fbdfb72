"""Every Prometheus metric of the operator, on the default registry.

Workqueue and reconcile figures use client-go's and controller-runtime's names,
so existing dashboards and alerts work unchanged (``workqueue_*``,
``controller_runtime_reconcile_total`` and friends, ``leader_election_master_status``).
Job lifecycle and Event figures are ours (``t9k_*``), labelled by kind and namespace.

Each collector is registered once, by :func:`_collector`, which returns the one
already registered under its name when this module is loaded again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from prometheus_client import REGISTRY, Counter, Gauge, Histogram

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
