"""The local cluster's KWOK stages (hack/third_party/kwok/stages.yaml) end a pod the way a
job's pod ends: the exit code of ``kwok.t9k.dev/exit-code`` lands on the
training container, the one the operator reads, wherever it is in the spec;
an OOM-killed container ends ``OOMKilled`` with 137; an image that cannot be
pulled alternates ``ErrImagePull`` and ``ImagePullBackOff`` with kubelet's
Events, never moving the pod's placement time.

The pods are the builders' own (as the operator would create them, without an
owner to garbage-collect them), placed by the real kube-scheduler and ended by
KWOK's ``pod-finish`` stage. The test's kubelet stand-in
(tests/integration/kubelet.py) ends the same container by default.
"""

from __future__ import annotations

import time
from typing import Any

from t9k_operator.builders import pytorch
from t9k_operator.kube import KubeClient
from t9k_operator.resources import EVENTS, PODS
from tests.integration.cluster import wait_for
from tests.integration.kubelet import MANUAL, Kubelet

EXIT = {"kwok.t9k.dev/run-duration": "1s", "kwok.t9k.dev/exit-code": "3"}


def built_pod(namespace: str, annotations: dict[str, str]) -> dict[str, Any]:
    """A PyTorchTrainingJob worker whose training container, ``pytorch``, is
    the second of its spec, between two sidecars."""
    job = pytorch.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "PyTorchTrainingJob",
            "metadata": {"name": "ends", "namespace": namespace, "uid": "not-a-job"},
            "spec": {
                "replicaSpecs": [
                    {
                        "type": "worker",
                        "replicas": 1,
                        "template": {
                            "metadata": {"annotations": annotations},
                            "spec": {
                                "containers": [
                                    {"name": "logger", "image": "busybox"},
                                    {"name": "pytorch", "image": "pytorch/pytorch:2.4.0"},
                                    {"name": "monitor", "image": "busybox"},
                                ]
                            },
                        },
                    }
                ]
            },
        }
    )
    pod = pytorch.build_pod(job, "worker", 0)
    del pod["metadata"]["ownerReferences"]
    return pod


def summary(status: dict[str, Any]) -> dict[str, Any]:
    """The pod's phase and each container's exit code and reason."""
    ends = {c["name"]: c["state"]["terminated"] for c in status["containerStatuses"]}
    return {
        "phase": status["phase"],
        "codes": {name: (end["exitCode"], end["reason"]) for name, end in ends.items()},
    }


def ended(admin: KubeClient, namespace: str, annotations: dict[str, str]) -> dict[str, Any]:
    """:func:`summary` of the pod once KWOK has ended it."""
    pod = built_pod(namespace, annotations)
    admin.create(PODS, pod, namespace)
    name = pod["metadata"]["name"]

    def finished() -> dict[str, Any] | None:
        status = admin.get(PODS, name, namespace).get("status") or {}
        return status if status.get("phase") in ("Succeeded", "Failed") else None

    status = wait_for(finished, 30, f"KWOK to end pod {name}")
    return summary(status)


def test_the_exit_code_lands_on_the_training_container_not_the_first(
    admin: KubeClient, namespace: str
) -> None:
    assert ended(admin, namespace, EXIT) == {
        "phase": "Failed",
        "codes": {"logger": (0, "Completed"), "pytorch": (3, "Error"), "monitor": (0, "Completed")},
    }


def test_exit_container_names_the_container_that_exits_with_the_code(
    admin: KubeClient, namespace: str
) -> None:
    notes = {**EXIT, "kwok.t9k.dev/exit-container": "monitor"}
    assert ended(admin, namespace, notes) == {
        "phase": "Failed",
        "codes": {"logger": (0, "Completed"), "pytorch": (0, "Completed"), "monitor": (3, "Error")},
    }


def test_a_pod_that_exits_0_succeeds_with_every_container_at_0(
    admin: KubeClient, namespace: str
) -> None:
    notes = {"kwok.t9k.dev/run-duration": "1s"}
    assert ended(admin, namespace, notes) == {
        "phase": "Succeeded",
        "codes": {
            "logger": (0, "Completed"),
            "pytorch": (0, "Completed"),
            "monitor": (0, "Completed"),
        },
    }


def test_the_kubelet_stand_in_ends_the_training_container_too(
    admin: KubeClient, namespace: str, kubelet: Kubelet
) -> None:
    pod = built_pod(namespace, MANUAL)
    admin.create(PODS, pod, namespace)
    name = pod["metadata"]["name"]
    kubelet.run(namespace, name)
    kubelet.fail(namespace, name, exit_code=3)
    assert summary(admin.get(PODS, name, namespace)["status"]) == {
        "phase": "Failed",
        "codes": {"logger": (0, "Completed"), "pytorch": (3, "Error"), "monitor": (0, "Completed")},
    }


def test_an_oom_killed_container_ends_oomkilled_with_137(admin: KubeClient, namespace: str) -> None:
    notes = {
        "kwok.t9k.dev/run-duration": "1s",
        "kwok.t9k.dev/exit-reason": "OOMKilled",
        "kwok.t9k.dev/exit-container": "monitor",
    }
    assert ended(admin, namespace, notes) == {
        "phase": "Failed",
        "codes": {
            "logger": (0, "Completed"),
            "pytorch": (0, "Completed"),
            "monitor": (137, "OOMKilled"),
        },
    }


def test_the_kubelet_stand_in_oom_kills_the_training_container(
    admin: KubeClient, namespace: str, kubelet: Kubelet
) -> None:
    pod = built_pod(namespace, MANUAL)
    admin.create(PODS, pod, namespace)
    name = pod["metadata"]["name"]
    kubelet.run(namespace, name)
    kubelet.oom_kill(namespace, name)
    assert summary(admin.get(PODS, name, namespace)["status"]) == {
        "phase": "Failed",
        "codes": {
            "logger": (0, "Completed"),
            "pytorch": (137, "OOMKilled"),
            "monitor": (0, "Completed"),
        },
    }


def test_a_failing_pull_alternates_errimagepull_and_imagepullbackoff_with_events(
    admin: KubeClient, namespace: str
) -> None:
    pod = built_pod(
        namespace,
        {
            "kwok.t9k.dev/waiting-reason": "ErrImagePull",
            "kwok.t9k.dev/waiting-message": "pull access denied",
            "kwok.t9k.dev/pull-backoff": "1s",
        },
    )
    admin.create(PODS, pod, namespace)
    name = pod["metadata"]["name"]
    seen: list[tuple[str, str]] = []  # the training container's reason and message, as they change
    placed: set[str] = set()
    deadline = time.monotonic() + 30
    while len(seen) < 4 and time.monotonic() < deadline:
        status = admin.get(PODS, name, namespace).get("status") or {}
        for c in status.get("conditions") or []:
            if c["type"] == "PodScheduled":
                placed.add(c["lastTransitionTime"])
        waiting = {
            c["name"]: c["state"].get("waiting") or {}
            for c in status.get("containerStatuses") or []
        }
        now = waiting.get("pytorch")
        if now and (not seen or seen[-1] != (now["reason"], now.get("message", ""))):
            seen.append((now["reason"], now.get("message", "")))
            assert status["phase"] == "Pending"
        time.sleep(0.1)
    back_off = ("ImagePullBackOff", 'Back-off pulling image "pytorch/pytorch:2.4.0"')
    assert seen == [("ErrImagePull", "pull access denied"), back_off] * 2
    assert len(placed) == 1  # the placement keeps its time: a start timeout never restarts
    events = {
        (e["type"], e["reason"], e["message"])
        for e in admin.list_all(EVENTS, namespace)[0]
        if e["involvedObject"]["name"] == name
    }
    assert {
        ("Warning", "Failed", "Error: ErrImagePull"),
        ("Normal", "BackOff", "Back-off pulling image"),
    } <= events


def test_the_kubelet_stand_in_alternates_a_failing_pull_too(
    admin: KubeClient, namespace: str, kubelet: Kubelet
) -> None:
    pod = built_pod(namespace, MANUAL)
    admin.create(PODS, pod, namespace)
    name = pod["metadata"]["name"]
    backing_off = 'Back-off pulling image "pytorch/pytorch:2.4.0"'
    seen: list[tuple[str, str, str]] = []
    placed: set[str] = set()
    for back_off in (False, True, False):
        if back_off:
            status = kubelet.pull_backs_off(namespace, name)["status"]
        else:
            status = kubelet.pull_fails(namespace, name, "pull access denied")["status"]
        waiting = {c["name"]: c["state"]["waiting"] for c in status["containerStatuses"]}
        seen.append((status["phase"], waiting["pytorch"]["reason"], waiting["pytorch"]["message"]))
        assert waiting["logger"] == {"reason": "ContainerCreating"}
        placed |= {
            c["lastTransitionTime"] for c in status["conditions"] if c["type"] == "PodScheduled"
        }
    assert seen == [
        ("Pending", "ErrImagePull", "pull access denied"),
        ("Pending", "ImagePullBackOff", backing_off),
        ("Pending", "ErrImagePull", "pull access denied"),
    ]
    assert len(placed) == 1
    events = [
        (e["type"], e["reason"], e["message"])
        for e in admin.list_all(EVENTS, namespace)[0]
        if e["involvedObject"]["name"] == name and e["source"].get("component") == "kubelet"
    ]
    assert sorted(set(events)) == sorted(
        {
            ("Normal", "Pulling", 'Pulling image "pytorch/pytorch:2.4.0"'),
            (
                "Warning",
                "Failed",
                'Failed to pull image "pytorch/pytorch:2.4.0": pull access denied',
            ),
            ("Warning", "Failed", "Error: ErrImagePull"),
            ("Normal", "BackOff", backing_off),
            ("Warning", "Failed", "Error: ImagePullBackOff"),
        }
    )
