"""PyTorchKind: reading a job into the engine's terms, and its outcome rule."""

from __future__ import annotations

from typing import Any

from t9k_operator.kinds.contract import read
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.pytorch import PyTorchKind
from t9k_operator.kinds.view import Override, Role


def job(specs: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "generation": 2},
        "spec": {"replicaSpecs": specs, **spec},
    }


def rs(type_: str, n: int, policy: str = "OnFailure", containers: Any = None) -> dict[str, Any]:
    if containers is None:
        containers = [{"name": "pytorch", "image": "i"}]
    return {
        "type": type_,
        "replicas": n,
        "restartPolicy": policy,
        "template": {"spec": {"containers": containers}},
    }


KIND = PyTorchKind()


def test_view_reads_roles_policies_and_run_mode() -> None:
    v = read(
        KIND,
        job(
            [rs("master", 1, "ExitCode"), rs("worker", 3)],
            runPolicy={"backoffLimit": 5, "activeDeadlineSeconds": 60, "cleanUpPolicy": "All"},
            runMode={
                "debug": {
                    "enabled": True,
                    "replicaSpecs": [
                        {"type": "worker", "command": ["sshd"], "skipInitContainer": True}
                    ],
                },
                "pause": {
                    "enabled": False,
                    "resumeSpecs": [{"type": "master", "command": ["python"], "args": ["r.py"]}],
                },
            },
        ),
    ).view
    assert v.roles == (Role("master", 1, "ExitCode"), Role("worker", 3, "OnFailure"))
    assert (v.backoff_limit, v.active_deadline_seconds, v.cleanup_policy) == (5, 60, "All")
    assert v.debug and not v.paused and v.generation == 2
    assert v.debug_overrides == (Override("worker", ("sshd",), None, True),)
    assert v.resume_overrides == (Override("master", ("python",), ("r.py",), False),)
    assert v.spec_error is None


def test_defaults() -> None:
    v = read(KIND, job([rs("worker", 2)])).view
    assert (v.backoff_limit, v.active_deadline_seconds, v.cleanup_policy) == (3, None, "None")
    assert not v.debug and not v.paused


def test_spec_errors_name_the_field() -> None:
    bad_policy = read(KIND, job([rs("worker", 1, "Sometimes")])).view
    assert bad_policy.spec_error is not None
    assert "spec.replicaSpecs[0].restartPolicy" in bad_policy.spec_error
    assert bad_policy.roles == ()
    no_container = read(KIND, job([rs("worker", 1, containers=[])])).view
    assert no_container.spec_error is not None
    assert "spec.replicaSpecs[0].template.spec.containers" in no_container.spec_error


def state(phase: str) -> ReplicaState:
    return ReplicaState("p", "u", phase)


def test_outcome_follows_the_master_else_the_first_replica() -> None:
    with_master = read(KIND, job([rs("worker", 2), rs("master", 1)])).view
    done = {("worker", 0): state("Succeeded"), ("master", 0): state("Running")}
    assert KIND.outcome(with_master, done) is None
    done[("master", 0)] = state("Succeeded")
    outcome = KIND.outcome(with_master, done)
    assert outcome is not None and outcome.phase == "Succeeded"
    nodes = read(KIND, job([rs("node", 3, "ExitCode")])).view
    assert KIND.outcome(nodes, {("node", 1): state("Succeeded")}) is None
    assert KIND.outcome(nodes, {("node", 0): state("Succeeded")}) is not None
    assert KIND.cleanup_types(nodes) is None
