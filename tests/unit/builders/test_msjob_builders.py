"""MSJob builders: the MindSpore operator's env and labels on each role's pods."""

from __future__ import annotations

from typing import Any

from t9k_operator.builders import msjob as b


def job() -> b.Job:
    def role(n: int) -> dict[str, Any]:
        return {
            "replicas": n,
            "template": {
                "metadata": {"labels": {"team": "a"}},
                "spec": {"containers": [{"name": "mindspore", "image": "ms:2.3"}]},
            },
        }

    roles = {"Scheduler": role(1), "PS": role(1), "Worker": role(2)}
    return b.Job.from_dict(
        {
            "apiVersion": "mindspore.gitee.com/v1",
            "kind": "MSJob",
            "metadata": {"name": "ms", "namespace": "ns", "uid": "u"},
            "spec": {"msReplicaSpecs": roles},
        }
    )


def test_pods_carry_the_mindspore_operators_labels() -> None:
    pod = b.build_pod(job(), "Worker", 1, scheduler_ip="10.0.0.9")
    labels = pod["metadata"]["labels"]
    assert {
        "group-name": "mindspore.gitee.com",
        "job-name": "ms",
        "replica-type": "worker",
        "replica-index": "1",
        "training.kubeflow.org/job-name": "ms",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
    }.items() <= labels.items()
    assert labels["team"] == "a"  # the template's own stay
    assert labels["t9k.dev/job-kind"] == "MSJob"
    sched = b.build_pod(job(), "Scheduler", 0, scheduler_ip=None)["metadata"]["labels"]
    assert sched["replica-type"] == sched["training.kubeflow.org/replica-type"] == "scheduler"


def test_env_of_each_role() -> None:
    def env(pod: dict[str, Any]) -> dict[str, Any]:
        return {
            e["name"]: e.get("value", e.get("valueFrom"))
            for e in pod["spec"]["containers"][0]["env"]
        }

    worker = env(b.build_pod(job(), "Worker", 0, scheduler_ip="10.0.0.9"))
    assert worker["MS_ROLE"] == "MS_WORKER" and worker["MS_SCHED_HOST"] == "10.0.0.9"
    assert (worker["MS_WORKER_NUM"], worker["MS_SERVER_NUM"]) == ("2", "1")
    assert worker["MS_NODE_ID"] == "ms-worker-0"
    sched = env(b.build_pod(job(), "Scheduler", 0, scheduler_ip=None))
    assert sched["MS_ROLE"] == "MS_SCHED"
    assert sched["MS_SCHED_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert b.MS_ROLE == {"Scheduler": "MS_SCHED", "PS": "MS_PSERVER", "Worker": "MS_WORKER"}


def test_kubeflow_conditions_carry_the_moment_they_changed() -> None:
    from t9k_operator.kinds.msjob import kubeflow_conditions

    engine = {
        "phase": "Running",
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": [
            {"type": "Running", "status": "True", "lastTransitionTime": "2026-01-01T00:05:00Z"},
            {
                "type": "ReplicaFailure",
                "status": "False",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    }
    conds = {c["type"]: c for c in kubeflow_conditions([], engine)}
    assert conds["Created"]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert conds["Running"]["lastTransitionTime"] == "2026-01-01T00:05:00Z"  # not startTime
    completed = {
        "type": "Completed",
        "status": "True",
        "message": "ok",
        "lastTransitionTime": "2026-01-01T00:59:59Z",
    }
    done = {
        **engine,
        "phase": "Succeeded",
        "completionTime": "2026-01-01T01:00:00Z",
        "conditions": [*engine["conditions"], completed],
    }
    later = {c["type"]: c for c in kubeflow_conditions(list(conds.values()), done)}
    assert later["Succeeded"]["lastTransitionTime"] == "2026-01-01T00:59:59Z"
    assert later["Created"] == conds["Created"]  # unchanged condition keeps its time
