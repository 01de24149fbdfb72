"""Reading pods into ReplicaState, and the restart decision."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.kinds.pods import (
    ReplicaState,
    node_draining,
    node_trouble,
    replica_state,
    should_restart,
    training_container,
)


def pod_with(
    phase: str, statuses: list[dict[str, Any]], containers: tuple[str, ...] = (), **status: Any
) -> dict[str, Any]:
    """A pod whose spec lists ``containers`` (default: those of ``statuses``, in
    their order) and whose status is ``statuses``, as given."""
    names = containers or tuple(s["name"] for s in statuses)
    return {
        "metadata": {"name": "p", "uid": "u"},
        "spec": {"containers": [{"name": n, "image": "x"} for n in names]},
        "status": {"phase": phase, "containerStatuses": statuses, **status},
    }


def terminated(name: str, code: int, reason: str = "Error") -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason}}}


def running(name: str) -> dict[str, Any]:
    return {"name": name, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}


def test_training_container_exit_code_wins() -> None:
    pod = pod_with("Failed", [terminated("sidecar", 0, "Completed"), terminated("pytorch", 137)])
    s = replica_state(pod, ("pytorch",))
    assert (s.phase, s.exit_code, s.reason) == ("Failed", 137, "Error")
    assert s.containers == (
        ("sidecar", "Terminated", 0, "Completed"),
        ("pytorch", "Terminated", 137, "Error"),
    )
    assert "exit code 137" in s.describe_failure()


def test_without_the_conventional_name_the_first_spec_container_decides() -> None:
    # Kubelet sorts containerStatuses by name: the builders launched training in
    # the template's first container, "trainer", which is listed second.
    statuses = [terminated("aaa-log", 0, "Completed"), terminated("trainer", 137)]
    pod = pod_with("Failed", statuses, containers=("trainer", "aaa-log"))
    s = replica_state(pod, ("pytorch",))
    assert (s.phase, s.exit_code) == ("Failed", 137)
    assert training_container(pod, ("pytorch",)) == "trainer"
    assert training_container(pod, ("aaa-log", "pytorch")) == "aaa-log"
    assert training_container({"spec": {"containers": []}}, ("pytorch",)) is None


def test_a_pod_without_the_training_containers_status_has_no_exit_code() -> None:
    pod = pod_with("Failed", [terminated("aaa-log", 0)], containers=("trainer", "aaa-log"))
    assert replica_state(pod, ()).exit_code is None


@pytest.mark.parametrize(("code", "phase"), [(1, "Failed"), (137, "Failed"), (0, "Succeeded")])
def test_a_sidecar_still_running_does_not_keep_an_ended_replica_alive(
    code: int, phase: str
) -> None:
    # Kubelet keeps the pod Running while any regular container runs.
    pod = pod_with(
        "Running", [running("istio-proxy"), terminated("pytorch", code)], ("pytorch", "istio-proxy")
    )
    s = replica_state(pod, ("pytorch",))
    assert (s.phase, s.pod_phase, s.exit_code, s.ended) == (phase, "Running", code, True)


def test_a_running_training_container_keeps_the_pods_phase() -> None:
    pod = pod_with("Running", [terminated("aaa-log", 1), running("pytorch")])
    s = replica_state(pod, ("pytorch",))
    assert (s.phase, s.pod_phase, s.exit_code, s.ended) == ("Running", "", None, False)


def test_a_sidecars_failure_does_not_fail_a_replica_whose_training_succeeded() -> None:
    pod = pod_with("Failed", [terminated("log", 2), terminated("pytorch", 0, "Completed")])
    s = replica_state(pod, ("pytorch",))
    assert (s.phase, s.pod_phase, s.exit_code) == ("Succeeded", "Failed", 0)
    # The node's failure of the pod stays a failure.
    evicted = pod_with(
        "Failed", [terminated("pytorch", 0, "Completed")], reason="Evicted", message="memory"
    )
    assert replica_state(evicted, ("pytorch",)).phase == "Failed"


def test_a_native_sidecar_is_never_the_training_container() -> None:
    pod = pod_with("Running", [running("trainer")], containers=("trainer",))
    pod["spec"]["initContainers"] = [{"name": "proxy", "restartPolicy": "Always"}]
    pod["status"]["initContainerStatuses"] = [terminated("proxy", 1)]
    s = replica_state(pod, ())
    assert (s.phase, s.exit_code) == ("Running", None)


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


def waiting(name: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason, "message": message}}}


PLACED = {
    "conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
}


def placed(pod: dict[str, Any]) -> dict[str, Any]:
    pod["spec"]["nodeName"] = "node-1"
    return pod


def test_a_container_that_cannot_start_is_named_with_kubelets_reason() -> None:
    msg = 'Back-off pulling image "img:nope"'
    pod = placed(
        pod_with(
            "Pending",
            [waiting("aaa-log", "ContainerCreating"), waiting("pytorch", "ImagePullBackOff", msg)],
            **PLACED,
        )
    )
    s = replica_state(pod, ("pytorch",))
    assert s.waiting is not None
    assert (s.waiting.container, s.waiting.reason, s.waiting.message) == (
        "pytorch",
        "ImagePullBackOff",
        msg,
    )
    assert not s.waiting.permanent
    assert (s.node, s.placed_at, s.started) == ("node-1", "2026-01-01T00:00:00Z", False)


def test_an_init_container_that_cannot_start_comes_first() -> None:
    pod = pod_with(
        "Pending",
        [waiting("pytorch", "PodInitializing")],
        initContainerStatuses=[waiting("fetch", "InvalidImageName", "couldn't parse image")],
    )
    s = replica_state(pod, ("pytorch",))
    assert s.waiting is not None and (s.waiting.container, s.waiting.reason) == (
        "fetch",
        "InvalidImageName",
    )
    assert s.waiting.permanent


@pytest.mark.parametrize(
    ("reason", "message", "permanent"),
    [
        ("InvalidImageName", "", True),
        ("ErrImageNeverPull", "", True),
        ("CreateContainerConfigError", "couldn't find key TOKEN in Secret ns/creds", True),
        ("CreateContainerConfigError", 'secret "creds" not found', False),
        ("ErrImagePull", "", False),
        ("ImagePullBackOff", "", False),
        ("CreateContainerError", "", False),
    ],
)
def test_which_causes_no_wait_cures(reason: str, message: str, permanent: bool) -> None:
    s = replica_state(pod_with("Pending", [waiting("pytorch", reason, message)]), ("pytorch",))
    assert s.waiting is not None and s.waiting.permanent is permanent


def test_containers_starting_as_they_should_are_not_waiting() -> None:
    pod = pod_with("Pending", [waiting("pytorch", "ContainerCreating"), waiting("b", "")])
    assert replica_state(pod, ("pytorch",)).waiting is None


def test_a_training_container_that_ran_has_started() -> None:
    restarted = {**waiting("pytorch", "CrashLoopBackOff"), "lastState": terminated("x", 1)["state"]}
    assert replica_state(pod_with("Running", [running("pytorch")]), ("pytorch",)).started
    assert replica_state(pod_with("Running", [restarted]), ("pytorch",)).started
    assert not replica_state(pod_with("Pending", []), ("pytorch",)).started


def test_a_disrupted_pod_says_why_from_its_disruption_target_condition() -> None:
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    s = replica_state(pod_with("Running", [running("pytorch")], conditions=[condition]))
    assert (s.disruption, s.disruption_message) == (
        "EvictionByEvictionAPI",
        "Eviction API: evicting",
    )


def test_a_pod_its_kubelet_evicted_without_the_condition_is_disrupted_too() -> None:
    evicted = pod_with(
        "Failed", [terminated("pytorch", 137)], reason="Evicted", message="low on memory"
    )
    s = replica_state(evicted, ("pytorch",))
    assert (s.disruption, s.disruption_message) == ("Evicted", "low on memory")
    assert replica_state(pod_with("Failed", [terminated("pytorch", 1)])).disruption == ""


def test_node_trouble_reads_the_nodes_ready_condition() -> None:
    def node(status: str, reason: str = "", message: str = "") -> dict[str, Any]:
        ready = {"type": "Ready", "status": status, "reason": reason, "message": message}
        return {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, ready]}}

    assert node_trouble("n", node("True", "KubeletReady")) == ""
    assert node_trouble("n", node("Unknown", "NodeStatusUnknown", "Kubelet stopped posting.")) == (
        "node n is not ready (NodeStatusUnknown: Kubelet stopped posting.)"
    )
    assert node_trouble("n", node("False")) == "node n is not ready (False)"
    assert node_trouble("n", None) == "node n is gone"
    assert node_trouble("n", {"status": {}}) == "", "a node that has not reported yet"


def test_node_draining_reads_the_nodes_cordon() -> None:
    cordoned = {
        "metadata": {"name": "n"},
        "spec": {
            "unschedulable": True,
            "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert node_draining("n", cordoned) == "node n is cordoned"
    assert node_draining("n", {"spec": {"unschedulable": False}}) == ""
    assert node_draining("n", {"metadata": {"name": "n"}, "status": {}}) == ""
    assert node_draining("n", None) == "", "a node that is gone is node_trouble's"


def test_a_pod_whose_phase_is_unknown_is_lost() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}, "status": {"phase": "Unknown"}}
    assert replica_state(pod).lost == "node n has stopped reporting the pod (phase Unknown)"
    pod["status"]["phase"] = "Running"
    assert replica_state(pod).lost == ""
