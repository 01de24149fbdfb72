"""MPIJob's own hooks: mpirun's exit decides (Completed, or Failed), a job
without a program fails naming spec.worker.cmd, and `t9k create mpi`."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.kinds.asks import SchedulingRequest
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.flags import JobRequest, NotForThisKind
from t9k_operator.kinds.mpijob import COMPLETED
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.registry import by_kind, by_name

KIND = by_kind("MPIJob")


def stored(**worker: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": {
            "worker": {"replicas": 2, "template": {"spec": {"containers": [{}]}}, **worker},
        },
    }


def test_the_launchers_success_completes_the_job() -> None:
    view = read(KIND, stored(cmd=["./prog"])).view
    assert KIND.deciding_replica(view) == ("launcher", 0)
    ok = {("launcher", 0): ReplicaState("j-launcher", "u1", "Succeeded")}
    running = {("launcher", 0): ReplicaState("j-launcher", "u1", "Running")}
    assert KIND.outcome(view, ok) == COMPLETED
    assert (COMPLETED.phase, COMPLETED.reason) == ("Succeeded", "Completed")
    assert KIND.outcome(view, running) is None


def test_no_pod_is_restarted_and_cleanup_keeps_the_launcher() -> None:
    view = read(KIND, stored(cmd=["./prog"])).view
    assert {r.type: r.restart_policy for r in view.roles} == {
        "launcher": "Never",
        "worker": "Never",
    }
    assert view.backoff_limit == 0 and view.ask(SchedulingRequest) == SchedulingRequest(3)
    assert KIND.cleanup_types(view) == frozenset({"worker"})


def test_without_cmd_the_job_fails_naming_it_unless_debugging() -> None:
    view = read(KIND, stored()).view
    assert view.spec_error is not None and "spec.worker.cmd" in view.spec_error
    debug = stored()
    debug["spec"]["runMode"] = {"debug": {"enabled": True}}
    assert read(KIND, debug).view.spec_error is None


def test_t9k_create_mpi() -> None:
    assert by_name("mpi") is KIND and by_name("mpij") is KIND
    request = JobRequest("MPIJob", "m", "img", ["python3", "train.py"], workers=3, gpus=2)
    assert KIND.from_flags(request) == {
        "worker": {
            "replicas": 3,
            "extraMPIArgs": ["-N", "2"],
            "cmd": ["python3", "train.py"],
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "mpi-worker",
                            "image": "img",
                            "resources": {"limits": {"nvidia.com/gpu": 2}},
                        }
                    ]
                }
            },
        }
    }
    with pytest.raises(NotForThisKind, match="no TensorBoard"):
        KIND.from_flags(JobRequest("MPIJob", "m", "img", ["x"], tensorboard="pvc"))
