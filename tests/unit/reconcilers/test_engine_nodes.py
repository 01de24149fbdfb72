"""The engine's record of where each replica ran (``status.nodes``): the node of
each placed pod, kept once the pod is gone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from t9k_operator.kinds.view import Role
from tests.unit.reconcilers.test_engine import T0, job, pod, step


def test_a_replica_whose_pod_completed_and_was_deleted_keeps_its_node() -> None:
    j = job(cleanup_policy="All", roles=(Role("master", 1, "Never"), Role("worker", 2, "Never")))
    pods = {
        ("master", 0): pod("master", 0, node="gpu-1"),
        ("worker", 0): pod("worker", 0, node="gpu-2"),
        ("worker", 1): pod("worker", 1, node="gpu-2"),
    }
    ran = step(j, pods)
    assert ran.status["nodes"] == [
        {"replica": "j-master-0", "node": "gpu-1"},
        {"replica": "j-worker-0", "node": "gpu-2"},
        {"replica": "j-worker-1", "node": "gpu-2"},
    ]
    # The master completes; the job succeeds and the cleanup policy deletes every pod.
    pods[("master", 0)] = pod("master", 0, "Succeeded", 0, node="gpu-1")
    done = step(replace(j, status=ran.status), pods, T0 + timedelta(minutes=1))
    assert done.status["phase"] == "Succeeded"
    assert sorted(s.name for s in done.delete) == ["j-master-0", "j-worker-0", "j-worker-1"]
    # Once the pods are gone, the finished job still says where its replicas ran.
    gone = step(replace(j, status=done.status), {}, T0 + timedelta(minutes=2))
    assert gone.status["tasks"][0]["replicas"] == []
    assert gone.status["nodes"] == [
        {"replica": "j-master-0", "node": "gpu-1"},
        {"replica": "j-worker-0", "node": "gpu-2"},
        {"replica": "j-worker-1", "node": "gpu-2"},
    ]


def test_a_recreated_replica_keeps_its_last_node_until_placed_again() -> None:
    j = job(roles=(Role("worker", 12, "OnFailure"),))
    pods = {("worker", i): pod("worker", i, node=f"n-{i}") for i in (2, 10)}
    first = step(j, pods)
    assert first.status["nodes"] == [
        {"replica": "j-worker-2", "node": "n-2"},
        {"replica": "j-worker-10", "node": "n-10"},
    ]
    # worker-2's new pod is not placed yet, worker-10 moved to another node.
    pods = {("worker", 2): pod("worker", 2, "Pending"), ("worker", 10): pod("worker", 10, node="x")}
    later = step(replace(j, status=first.status), pods)
    assert later.status["nodes"] == [
        {"replica": "j-worker-2", "node": "n-2"},
        {"replica": "j-worker-10", "node": "x"},
    ]


def test_no_record_before_a_replica_is_placed() -> None:
    j = job()
    assert "nodes" not in step(j, {}).status
    pending = {("master", 0): pod("master", 0, "Pending")}
    assert "nodes" not in step(j, pending).status
