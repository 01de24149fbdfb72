"""Where a job ran, once its pods are gone or have ended: ``t9k list`` and
``t9k describe`` read the nodes the operator recorded in ``status.nodes``."""

from __future__ import annotations

from typing import Any

from t9k_operator.builders.common import JOB_KIND, JOB_NAME
from t9k_operator.sdk import views
from tests.unit.cli.fixtures import NOW


def finished_job(phase: str = "Succeeded") -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": "done", "namespace": "team-a"},
        "spec": {
            "replicaSpecs": [
                {"type": "master", "replicas": 1, "template": {"spec": {"containers": []}}},
                {"type": "worker", "replicas": 2, "template": {"spec": {"containers": []}}},
            ]
        },
        "status": {
            "phase": phase,
            "tasks": [
                {
                    "type": "master",
                    "replicas": [{"name": "done-master-0", "uid": "m0", "phase": "Succeeded"}],
                },
                {"type": "worker", "replicas": []},
            ],
            "nodes": [
                {"replica": "done-master-0", "node": "gpu-b"},
                {"replica": "done-worker-0", "node": "gpu-a"},
                {"replica": "done-worker-1", "node": "gpu-b"},
            ],
        },
    }


def ended_pod(name: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "labels": {JOB_NAME: "done", JOB_KIND: "PyTorchTrainingJob"},
        },
        "spec": {"nodeName": node},
        "status": {"phase": "Succeeded"},
    }


def test_a_finished_job_without_pods_shows_the_nodes_it_ran_on() -> None:
    assert views.summarize(finished_job(), [], NOW).nodes == ("gpu-a", "gpu-b")


def test_a_finished_job_whose_pods_ended_shows_the_nodes_it_ran_on() -> None:
    pods = [ended_pod("done-master-0", "gpu-b")]
    assert views.summarize(finished_job("Failed"), pods, NOW).nodes == ("gpu-a", "gpu-b")


def test_a_job_not_finished_shows_only_where_its_pods_run() -> None:
    assert views.summarize(finished_job("Pending"), [], NOW).nodes == ()


def test_describe_shows_the_recorded_node_of_a_replica_whose_pod_is_gone() -> None:
    rows = views.replica_rows(finished_job(), [])
    assert [(r.replica, r.phase, r.node) for r in rows] == [("master-0", "Succeeded", "gpu-b")]


def test_t9k_top_leaves_out_a_finished_job_that_holds_no_pod() -> None:
    assert views.job_usage([finished_job()], [ended_pod("done-master-0", "gpu-b")], NOW) == []
