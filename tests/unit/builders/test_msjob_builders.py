"""MSJob builders: the MindSpore operator's env and labels on each role's pods; and
enableDynamicWorker, as the engine plans an MSJob whose Worker fails."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator.builders import msjob as b
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.registry import by_kind
from t9k_operator.reconcilers.engine.planner import plan


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


# -- enableDynamicWorker: a Worker's failure does not fail the job ------------------------

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KIND = by_kind("MSJob")


def _view(dynamic: bool | None, worker_policy: str = "Never") -> Any:
    raw = job().model_dump(by_alias=True, exclude_none=True)
    raw["spec"]["msReplicaSpecs"]["Worker"]["restartPolicy"] = worker_policy
    if dynamic is not None:
        raw["spec"]["enableDynamicWorker"] = dynamic
    raw["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    return read(KIND, raw).view


def _pods(**phases: str) -> dict[tuple[str, int], ReplicaState]:
    """Replicas by ``Role_index=phase`` (a failed one exited 1)."""
    out = {}
    for label, phase in phases.items():
        role, index = label.rsplit("_", 1)
        code = 1 if phase == "Failed" else 0 if phase == "Succeeded" else None
        name = f"ms-{role.lower()}-{index}"
        out[(role, int(index))] = ReplicaState(name, label, phase, exit_code=code)
    return out


RUNNING = {"Scheduler_0": "Running", "PS_0": "Running", "Worker_0": "Running"}


@pytest.mark.parametrize("dynamic", [None, False])
def test_without_dynamic_workers_a_worker_failed_for_good_fails_the_job(
    dynamic: bool | None,
) -> None:
    out = plan(KIND, _view(dynamic), _pods(**RUNNING, Worker_1="Failed"), NOW)
    assert out.finished is not None and out.finished.phase == "Failed"
    assert "ms-worker-1" in out.finished.message


def test_with_dynamic_workers_a_worker_failed_for_good_leaves_the_job_running() -> None:
    out = plan(KIND, _view(True), _pods(**RUNNING, Worker_1="Failed"), NOW)
    assert out.finished is None
    assert out.status["phase"] == "Running"
    assert not out.delete  # restartPolicy Never: the failed worker is not recreated
    # ... and the job still succeeds by its successPolicy (Worker 0).
    done = {**RUNNING, "Worker_0": "Succeeded", "Worker_1": "Failed"}
    finished = plan(KIND, _view(True), _pods(**done), NOW).finished
    assert finished is not None and finished.phase == "Succeeded"


@pytest.mark.parametrize("failing", ["Scheduler_0", "PS_0"])
def test_with_dynamic_workers_the_scheduler_or_a_ps_failed_for_good_still_fails_it(
    failing: str,
) -> None:
    pods = _pods(**{**RUNNING, "Worker_1": "Running", failing: "Failed"})
    out = plan(KIND, _view(True), pods, NOW)
    assert out.finished is not None and out.finished.phase == "Failed"
    # (in the engine's words for a failure rule: each replica but the Workers is one)
    assert f"replicas {failing.replace('_', '-')} have all failed" in out.finished.message


def test_with_dynamic_workers_a_failed_worker_is_still_restarted_by_its_policy() -> None:
    out = plan(KIND, _view(True, "OnFailure"), _pods(**RUNNING, Worker_1="Failed"), NOW)
    assert out.finished is None
    assert [s.name for s in out.delete] == ["ms-worker-1"]
    assert out.status["restartCount"] == 1
