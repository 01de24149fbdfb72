"""``t9k list``'s START column and the typed start estimate (the
start-estimate integration's view), from a
job's ``status.startEstimate`` (the expected texts written out by hand)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from t9k_operator.integrations.start_estimate.view import start_column, start_estimate

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


PLACED = {
    "metadata": {
        "name": "j-worker-0",
        "namespace": "t",
        "labels": {"t9k.dev/job-kind": "GenericJob", "t9k.dev/job-name": "j"},
    },
    "spec": {"nodeName": "n1"},
}
"""A pod of the job, bound to a node."""


def job(phase: str, estimate: dict[str, Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if estimate is not None:
        status["startEstimate"] = estimate
    return {"kind": "GenericJob", "metadata": {"name": "j", "namespace": "t"}, "status": status}


def test_a_time_reads_as_the_clock_and_the_wait() -> None:
    e = {"where": "Kueue", "estimatedStartTime": "2026-03-01T14:05:00Z", "reason": "r"}
    assert start_column(job("Pending", e), [], NOW) == "~14:05Z (in 2h5m)"
    e["estimatedStartTime"] = "2026-03-01T12:00:30Z"
    assert start_column(job("Pending", e), [], NOW) == "~now"


def test_without_a_time_the_place_or_what_it_lacks() -> None:
    e: dict[str, Any] = {"where": "Kueue", "clusterQueuePosition": 3, "reason": "r"}
    assert start_column(job("Pending", e), [], NOW) == "#3 in queue"
    lack = {"resource": "nvidia.com/gpu", "requested": "16", "pods": 1, "free": "8"}
    e = {"where": "scheduler", "lacking": [lack], "reason": "r"}
    assert start_column(job("Pending", e), [], NOW) == "lacks nvidia.com/gpu"
    assert start_column(job("Pending", {"where": "gang", "reason": "r"}), [], NOW) == "unknown"


def test_pending_without_an_estimate_is_unknown_and_a_running_job_has_none() -> None:
    assert start_column(job("Pending"), [], NOW) == "unknown"
    assert start_column(job("Pending"), [PLACED], NOW) == "starting"
    e = {"where": "Kueue", "estimatedStartTime": "2026-03-01T14:05:00Z", "reason": "r"}
    assert start_column(job("Running", e), [], NOW) == ""
    assert start_estimate(job("Running", e)) is None


def test_the_sdk_reads_it_typed() -> None:
    e = {
        "where": "Kueue",
        "localQueue": "team",
        "localQueuePosition": 1,
        "clusterQueue": "gpus",
        "clusterQueuePosition": 2,
        "waitingFor": [{"name": "t/big", "endTime": "2026-03-01T12:10:00Z"}],
        "estimatedStartTime": "2026-03-01T12:10:00Z",
        "reason": "the quota it needs is free once t/big ends",
    }
    typed = start_estimate(job("Pending", e))
    assert typed is not None
    assert (typed.where, typed.local_queue_position, typed.cluster_queue_position) == (
        "Kueue",
        1,
        2,
    )
    assert typed.waiting_for[0].name == "t/big"
    assert typed.estimated_start_time == "2026-03-01T12:10:00Z"
