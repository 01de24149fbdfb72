"""Prometheus metrics of the operator, on the default registry.

Reconcile figures use controller-runtime's names so existing dashboards and
alerts work unchanged (``controller_runtime_reconcile_total`` and friends; the
``workqueue_*`` family lives in :mod:`t9k_operator.workqueue`). Job lifecycle
figures are ours, labelled by kind and namespace.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller and result.",
    ["controller", "result"],
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller.",
    ["controller"],
)
RECONCILE_TIME = Histogram(
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
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller.",
    ["controller"],
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller.",
    ["controller"],
)
LEADER = Gauge(
    "leader_election_master_status",
    "1 while this process holds the leader lease, else 0.",
    ["name"],
)

JOBS_CREATED = Counter(
    "t9k_jobs_created_total", "Jobs first seen by the operator.", ["kind", "namespace"]
)
JOBS_SUCCEEDED = Counter(
    "t9k_jobs_succeeded_total", "Jobs that reached Succeeded.", ["kind", "namespace"]
)
JOBS_FAILED = Counter(
    "t9k_jobs_failed_total", "Jobs that reached Failed, by reason.", ["kind", "namespace", "reason"]
)
JOBS_RESTARTED = Counter(
    "t9k_jobs_restarted_total",
    "Replica recreations counted against backoffLimit.",
    ["kind", "namespace"],
)
JOB_DURATION = Histogram(
    "t9k_job_duration_seconds",
    "From the job's start to its completion, by kind and outcome.",
    ["kind", "namespace", "phase"],
    buckets=(10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800),
)
