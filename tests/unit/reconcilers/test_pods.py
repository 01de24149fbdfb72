"""Reading pods into ReplicaState, and the restart decision."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.reconcilers.kinds.pods import ReplicaState, replica_state, should_restart


def pod_with(phase: str, statuses: list[dict[str, Any]], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "uid": "u"},
        "status": {"phase": phase, "containerStatuses": statuses, **status},
    }


def terminated(name: str, code: int, reason: str = "Error") -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason}}}


def test_training_container_exit_code_wins() -> None:
    pod = pod_with("Failed", [terminated("sidecar", 0, "Completed"), terminated("pytorch", 137)])
    s = replica_state(pod, "pytorch")
    assert (s.phase, s.exit_code, s.reason) == ("Failed", 137, "Error")
    assert replica_state(pod).exit_code == 0  # default: the first container
    assert s.containers == (
        ("sidecar", "Terminated", 0, "Completed"),
        ("pytorch", "Terminated", 137, "Error"),
    )
    assert "exit code 137" in s.describe_failure()


def test_evicted_pod_without_exit_code() -> None:
    s = replica_state(pod_with("Failed", [], reason="Evicted", message="low on memory"))
    assert s.phase == "Failed" and s.exit_code is None
    assert s.describe_failure() == "pod p failed (Evicted: low on memory)"


def test_new_and_terminating_pods() -> None:
    s = replica_state({"metadata": {"name": "p", "uid": "u", "deletionTimestamp": "x"}})
    assert s.phase == "Pending" and s.terminating and not s.ended
    running = replica_state(pod_with("Running", [{"name": "c", "state": {"running": {}}}]))
    assert running.containers == (("c", "Running", None, ""),)
    waiting = replica_state(
        pod_with("Pending", [{"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff"}}}])
    )
    assert waiting.containers == (("c", "Waiting", None, "ImagePullBackOff"),)


@pytest.mark.parametrize(
    ("policy", "phase", "code", "expected"),
    [
        ("Never", "Failed", 137, False),
        ("OnFailure", "Failed", 1, True),
        ("OnFailure", "Running", None, False),
        ("Always", "Succeeded", 0, True),
        ("Always", "Running", None, False),
        ("ExitCode", "Failed", 143, True),
        ("ExitCode", "Failed", None, False),
        ("ExitCode", "Failed", 2, False),
    ],
)
def test_should_restart(policy: str, phase: str, code: int | None, expected: bool) -> None:
    assert should_restart(policy, ReplicaState("p", "u", phase, exit_code=code)) is expected
