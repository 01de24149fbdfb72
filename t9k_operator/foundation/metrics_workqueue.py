"""The work queues' figures, under client-go's ``workqueue_*`` names (label:
the queue's name), so existing dashboards and alerts work unchanged."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from t9k_operator.foundation.metrics import collector

# Exponential buckets 1e-8 s .. 10 s, factor 10, written out so the ``le`` labels
# are clean (repeated float multiplication would give 1.0000000000000001e-07).
_DURATION_BUCKETS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)

DEPTH = collector(Gauge, "workqueue_depth", "Current depth of workqueue", ["name"])
ADDS = collector(
    Counter, "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"]
)
QUEUE_LATENCY = collector(
    Histogram,
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name"],
    buckets=_DURATION_BUCKETS,
)
WORK_DURATION = collector(
    Histogram,
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=_DURATION_BUCKETS,
)
UNFINISHED_WORK = collector(
    Gauge,
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been "
    "observed by work_duration. Large values indicate stuck threads. One can deduce "
    "the number of stuck threads by observing the rate at which this increases.",
    ["name"],
)
LONGEST_RUNNING = collector(
    Gauge,
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name"],
)
RETRIES = collector(
    Counter, "workqueue_retries_total", "Total number of retries handled by workqueue", ["name"]
)
