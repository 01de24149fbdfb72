"""A job that never fits as it is: its pods on the empty nodes, its Workload in
its ClusterQueue's whole quota; the sentence it carries, ``t9k list``'s START
and ``t9k describe``'s lines (the expected texts written out by hand)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from t9k_operator.integrations.start_estimate.build import START_ESTIMATE_PART
from t9k_operator.integrations.start_estimate.integration import (
    QueuePlace,
    kueue_estimate,
    room_part,
)
from t9k_operator.integrations.start_estimate.never import never_fits, quota_never_fits
from t9k_operator.integrations.start_estimate.view import start_column, start_estimate

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
NODES = {"a": {GPU: 8.0, "cpu": 64.0}, "b": {GPU: 4.0, "cpu": 32.0}, "c": {"cpu": 16.0}}
"""Nodes of different sizes: 8 GPUs, 4 GPUs, none."""


# -- on the nodes -------------------------------------------------------------------------


def test_a_pod_larger_than_the_largest_node() -> None:
    pods = [{GPU: 64.0, "cpu": 1.0}, {GPU: 64.0, "cpu": 1.0}]
    assert never_fits(pods, NODES) == (
        "never fits: asks 128 nvidia.com/gpu in pods of 64; the largest node has 8"
    )


def test_one_pod_and_pods_of_different_sizes() -> None:
    assert never_fits([{GPU: 16.0}], NODES) == (
        "never fits: asks 16 nvidia.com/gpu in one pod; the largest node has 8"
    )
    assert never_fits([{GPU: 16.0}, {GPU: 4.0}], NODES) == (
        "never fits: asks 20 nvidia.com/gpu in pods of up to 16; the largest node has 8"
    )


def test_a_resource_no_node_has() -> None:
    cpu_only = {"x": {"cpu": 8.0}, "y": {"cpu": 8.0, GPU: 0.0}}
    assert never_fits([{GPU: 8.0, "cpu": 1.0}] * 2, cpu_only) == (
        "never fits: asks 16 nvidia.com/gpu in pods of 8; no node has nvidia.com/gpu"
    )
    assert never_fits([{GPU: 1.0}], {}) == (
        "never fits: asks 1 nvidia.com/gpu in one pod; no node has nvidia.com/gpu"
    )


def test_more_in_all_than_the_nodes_have_together() -> None:
    # 5 pods of 4 GPUs: each fits the 8-GPU node, but 20 > 12 in all.
    assert never_fits([{GPU: 4.0}] * 5, NODES) == (
        "never fits: asks 20 nvidia.com/gpu in pods of 4; the nodes have 12 in all"
    )


def test_more_pods_than_the_nodes_can_hold() -> None:
    # 2 pods of 6: 12 GPUs is what the nodes have, but the 4-GPU node holds none.
    assert never_fits([{GPU: 6.0}] * 2, NODES) == (
        "never fits: asks 12 nvidia.com/gpu in pods of 6; the nodes hold at most 1 pod of 6"
    )


def test_what_fits_the_empty_nodes_is_not_never() -> None:
    assert never_fits([{GPU: 8.0}, {GPU: 4.0}], NODES) is None
    assert never_fits([{GPU: 4.0}] * 3, NODES) is None  # two on a, one on b
    assert never_fits([{"cpu": 64.0}], NODES) is None
    assert never_fits([{}, {GPU: 0.0}], NODES) is None  # asks for nothing


def test_the_first_resource_that_never_fits_by_name() -> None:
    pods = [{"cpu": 100.0, GPU: 64.0}]
    assert never_fits(pods, NODES) == "never fits: asks 100 cpu in one pod; the largest node has 64"


# -- in the quota -------------------------------------------------------------------------


def test_more_than_the_cluster_queues_whole_quota() -> None:
    assert quota_never_fits({GPU: 48.0, "cpu": 4.0}, {GPU: 32.0, "cpu": 96.0}, "gpus") == (
        "never fits: asks 48 nvidia.com/gpu; the ClusterQueue gpus has a nominal quota of 32"
    )
    assert quota_never_fits({GPU: 32.0}, {GPU: 32.0}, "gpus") is None
    assert quota_never_fits({"memory": 1.0}, {GPU: 32.0}, "gpus") is None  # not charged


def _cluster_queue(gpus: str, cohort: str = "") -> dict[str, Any]:
    flavors = [{"resources": [{"name": GPU, "nominalQuota": gpus}]}]
    spec: dict[str, Any] = {"resourceGroups": [{"flavors": flavors}]}
    if cohort:
        spec["cohortName"] = cohort
    return {"spec": spec, "status": {}}


def _workload(count: int, gpus: int) -> dict[str, Any]:
    template = {"spec": {"containers": [{"resources": {"requests": {GPU: str(gpus)}}}]}}
    return {
        "metadata": {"name": "big-1234abcd", "namespace": "t"},
        "spec": {"queueName": "team", "podSets": [{"count": count, "template": template}]},
    }


def test_a_workload_larger_than_its_cluster_queue_never_fits_unless_it_may_borrow() -> None:
    place = QueuePlace("team", "gpus", 1, 1)
    got = kueue_estimate(_workload(4, 8), place, _cluster_queue("24"), [], {}, NOW)
    assert got == {
        "where": "Kueue",
        "localQueue": "team",
        "localQueuePosition": 1,
        "clusterQueue": "gpus",
        "clusterQueuePosition": 1,
        "waitingFor": [],
        "neverFits": True,
        "reason": "never fits: asks 32 nvidia.com/gpu; the ClusterQueue gpus has a nominal "
        "quota of 24",
    }
    # In a cohort, it may borrow: not never, the quota it lacks as before.
    cq = _cluster_queue("24", cohort="all")
    got = kueue_estimate(_workload(4, 8), place, cq, [], {}, NOW)
    assert "neverFits" not in got
    assert got["reason"] == (
        "even with every admitted workload ended, the ClusterQueue lacks 8 nvidia.com/gpu "
        "for it and the workloads ahead of it"
    )


# -- the status, and how t9k shows it ----------------------------------------------------------


NEVER = "never fits: asks 32 nvidia.com/gpu in pods of 16; the largest node has 8"
ESTIMATE = {
    "where": "scheduler",
    "lacking": [
        {"resource": GPU, "requested": "16", "pods": 2, "free": "8", "nodes": ["n0", "n1"]}
    ],
    "waitingFor": [],
    "neverFits": True,
    "reason": NEVER,
}
"""The estimate of two 16-GPU pods on two 8-GPU nodes, as its status carries it."""


def test_the_room_part_of_a_job_that_never_fits() -> None:
    room = {"n0": {GPU: 8.0}, "n1": {GPU: 8.0}}
    got = room_part("scheduler", [{GPU: 16.0}] * 2, room, [], NOW, NEVER)
    assert got == ESTIMATE


def test_t9k_shows_never_and_describe_says_why() -> None:
    estimate = ESTIMATE
    job = {
        "kind": "GenericJob",
        "metadata": {"name": "j", "namespace": "t"},
        "status": {"phase": "Pending", "startEstimate": estimate},
    }
    assert start_column(job, [], NOW) == "never"
    typed = start_estimate(job)
    assert typed is not None and typed.never_fits is True
    assert START_ESTIMATE_PART.lines(estimate) == [
        "estimated start never, waiting for the scheduler: never fits: asks 32 nvidia.com/gpu "
        "in pods of 16; the largest node has 8",
        "lacks nvidia.com/gpu: 2 pod(s) ask 16 each; at most 8 free (n0, n1)",
    ]
