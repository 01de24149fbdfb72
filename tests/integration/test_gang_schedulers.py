"""The gang schedulers the local cluster runs beside kube-scheduler work on it,
shown with plain pods and no operator: the deadlock they exist to prevent.

Four KWOK nodes of 8 ``nvidia.com/gpu`` each, two "jobs" of 3 pods asking 8
GPUs a pod, their pods created interleaved as a controller would: the default
scheduler binds 2 + 2 and leaves the third of each Pending for good, so
neither job can run (deadlock). Volcano and Coscheduling bind one group whole
and none of the other; when the first group's pods go, the second gets all 3.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.resources import NODES, PODS
from tests.integration.cluster import GangScheduler, wait_for

# Run on one pytest-xdist worker, so that only its cluster starts the gang
# schedulers and Kueue (session fixtures), once.
pytestmark = pytest.mark.xdist_group("add-ons")

GPU = "nvidia.com/gpu"
NODE_GPUS = 8
GROUP_SIZE = 3

VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
SP_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)


@dataclass(frozen=True)
class Gang:
    """How a gang scheduler is asked for: its schedulerName, its PodGroup
    resource, and how a pod names its group."""

    scheduler_name: str
    podgroups: Resource | None
    group_label: str | None = None
    group_annotation: str | None = None

    def podgroup(self, name: str, priority_class: str | None = None) -> dict[str, Any]:
        assert self.podgroups is not None
        spec: dict[str, Any] = {"minMember": GROUP_SIZE}
        if priority_class:
            spec["priorityClassName"] = priority_class
        return {
            "apiVersion": self.podgroups.api_version,
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": spec,
        }

    def pod(self, group: str, index: int, priority_class: str | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": f"{group}-{index}", "labels": {"group": group}}
        if self.group_label:
            meta["labels"][self.group_label] = group
        if self.group_annotation:
            meta["annotations"] = {self.group_annotation: group}
        spec: dict[str, Any] = {
            "schedulerName": self.scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "worker",
                    "image": "busybox",
                    "resources": {"limits": {GPU: str(NODE_GPUS)}},
                }
            ],
        }
        if priority_class:
            spec["priorityClassName"] = priority_class
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


DEFAULT = Gang("default-scheduler", None)
VOLCANO = Gang("volcano", VOLCANO_PODGROUPS, group_annotation="scheduling.k8s.io/group-name")
COSCHEDULING = Gang(
    "scheduler-plugins-scheduler", SP_PODGROUPS, group_label="scheduling.x-k8s.io/pod-group"
)


# -- helpers ---------------------------------------------------------------------------


def bound(client: KubeClient, namespace: str, group: str) -> list[str]:
    pods = client.list(PODS, namespace, label_selector=f"group={group}")["items"]
    return sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName"))


def waiting(client: KubeClient, namespace: str, group: str) -> list[str]:
    """The group's pods a scheduler has looked at and left unbound
    (condition PodScheduled False)."""
    pods = client.list(PODS, namespace, label_selector=f"group={group}")["items"]
    return sorted(
        p["metadata"]["name"]
        for p in pods
        if not p["spec"].get("nodeName")
        and any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in p.get("status", {}).get("conditions", [])
        )
    )


def create_groups(
    client: KubeClient,
    namespace: str,
    gang: Gang,
    groups: list[str],
    priority_classes: dict[str, str] | None = None,
) -> None:
    """PodGroups first, then the pods of all groups interleaved (a-0, b-0,
    a-1, b-1, ...), the way two job controllers create them side by side."""
    priority_classes = priority_classes or {}
    if gang.podgroups is not None:
        for group in groups:
            client.create(
                gang.podgroups, gang.podgroup(group, priority_classes.get(group)), namespace
            )
    for index in range(GROUP_SIZE):
        for group in groups:
            client.create(PODS, gang.pod(group, index, priority_classes.get(group)), namespace)


def delete_group_pods(client: KubeClient, namespace: str, group: str) -> None:
    for name in bound(client, namespace, group) + waiting(client, namespace, group):
        with contextlib.suppress(NotFound):
            client.delete(PODS, name, namespace, grace_period_seconds=0)
    wait_for(
        lambda: not client.list(PODS, namespace, label_selector=f"group={group}")["items"],
        30,
        f"the pods of {group} gone",
    )


def holds(predicate: Any, seconds: float, what: str) -> None:
    """``predicate`` stays true for ``seconds`` (polled): nothing is bound later."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), what
        time.sleep(0.2)


def gpus_in_use(client: KubeClient) -> int:
    pods, _ = client.list_all(PODS)
    return sum(
        int(c.get("resources", {}).get("limits", {}).get(GPU, 0))
        for p in pods
        if p["spec"].get("nodeName")
        and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        for c in p["spec"]["containers"]
    )


@pytest.fixture
def free_cluster(admin: KubeClient) -> None:
    """The four 8-GPU nodes, and no GPU held by an earlier test's pods."""
    nodes = [
        n
        for n in admin.list(NODES)["items"]
        if n["metadata"].get("labels", {}).get("type") == "kwok"
    ]
    assert sorted(int(n["status"]["allocatable"][GPU]) for n in nodes) == [NODE_GPUS] * 4
    wait_for(lambda: gpus_in_use(admin) == 0, 60, "no GPU held by other pods")


@pytest.fixture(autouse=True)
def pods_deleted(admin: KubeClient, namespace: str) -> Iterator[None]:
    """The test's pods go at its end, at once: the next test needs the GPUs,
    and deleting the namespace takes the pods with it only after a while."""
    yield
    admin.request("DELETE", PODS.path(namespace), query={"gracePeriodSeconds": 0})
    wait_for(lambda: not admin.list(PODS, namespace)["items"], 30, "the test's pods gone")


@pytest.fixture
def priority_classes(admin: KubeClient, namespace: str) -> Iterator[dict[str, str]]:
    """Two PriorityClasses for this test, ``low`` (100) and ``high`` (1000)."""
    names = {"low": f"{namespace}-low", "high": f"{namespace}-high"}
    for level, value in (("low", 100), ("high", 1000)):
        admin.create(
            PRIORITY_CLASSES,
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": names[level]},
                "value": value,
            },
        )
    yield names
    for name in names.values():
        with contextlib.suppress(NotFound):
            admin.delete(PRIORITY_CLASSES, name)


# -- the deadlock ----------------------------------------------------------------------


@pytest.mark.usefixtures("free_cluster")
def test_default_scheduler_deadlocks_two_gangs(admin: KubeClient, namespace: str) -> None:
    create_groups(admin, namespace, DEFAULT, ["a", "b"])
    wait_for(
        lambda: len(waiting(admin, namespace, "a") + waiting(admin, namespace, "b")) == 2,
        30,
        "the third pod of each group refused",
    )
    assert bound(admin, namespace, "a") == ["a-0", "a-1"]
    assert bound(admin, namespace, "b") == ["b-0", "b-1"]
    assert waiting(admin, namespace, "a") == ["a-2"]
    assert waiting(admin, namespace, "b") == ["b-2"]
    refused = admin.get(PODS, "a-2", namespace)["status"]["conditions"]
    assert any(
        c["type"] == "PodScheduled"
        and c["reason"] == "Unschedulable"
        and f"Insufficient {GPU}" in c["message"]
        for c in refused
    ), refused


# -- all or nothing --------------------------------------------------------------------


def all_or_nothing(client: KubeClient, namespace: str, gang: Gang) -> tuple[str, str]:
    """Two groups of 3 x 8 GPUs on 4 x 8 GPUs: one is bound whole, the other
    not at all; once the first one's pods are gone the second is bound whole.
    Returns (first, second)."""
    create_groups(client, namespace, gang, ["a", "b"])

    def one_whole() -> tuple[str, str] | None:
        if len(bound(client, namespace, "a")) == GROUP_SIZE:
            return ("a", "b")
        if len(bound(client, namespace, "b")) == GROUP_SIZE:
            return ("b", "a")
        return None

    first, second = wait_for(one_whole, 60, "one group bound whole")
    # The other group was looked at and left waiting, none of its pods bound.
    wait_for(
        lambda: len(waiting(client, namespace, second)) == GROUP_SIZE,
        30,
        f"the pods of {second} waiting",
    )
    holds(lambda: bound(client, namespace, second) == [], 2, f"none of {second} bound")

    delete_group_pods(client, namespace, first)
    wait_for(
        lambda: len(bound(client, namespace, second)) == GROUP_SIZE,
        60,
        f"{second} bound whole once {first} is gone",
    )
    return first, second


@pytest.mark.usefixtures("free_cluster")
def test_volcano_binds_one_group_whole_and_none_of_the_other(
    admin: KubeClient, namespace: str, volcano: GangScheduler
) -> None:
    assert volcano.scheduler_name == VOLCANO.scheduler_name
    _, second = all_or_nothing(admin, namespace, VOLCANO)
    wait_for(lambda: phase(admin, namespace, VOLCANO, second) == "Running", 30, "Running")


@pytest.mark.usefixtures("free_cluster")
def test_coscheduling_binds_one_group_whole_and_none_of_the_other(
    admin: KubeClient, namespace: str, coscheduling: GangScheduler
) -> None:
    assert coscheduling.scheduler_name == COSCHEDULING.scheduler_name
    _, second = all_or_nothing(admin, namespace, COSCHEDULING)
    # The scheduler-plugins controller counts the group's running pods.
    wait_for(
        lambda: (
            status(admin, namespace, COSCHEDULING, second).get("running") == GROUP_SIZE
            and phase(admin, namespace, COSCHEDULING, second) == "Running"
        ),
        30,
        f"PodGroup {second} Running, running 3",
    )


# -- Volcano: PodGroup status and priority ---------------------------------------------


def status(client: KubeClient, namespace: str, gang: Gang, group: str) -> dict[str, Any]:
    assert gang.podgroups is not None
    return dict(client.get(gang.podgroups, group, namespace).get("status") or {})


def phase(client: KubeClient, namespace: str, gang: Gang, group: str) -> str | None:
    return status(client, namespace, gang, group).get("phase")


def condition(client: KubeClient, namespace: str, group: str, kind: str) -> dict[str, Any] | None:
    conditions = status(client, namespace, VOLCANO, group).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind and c["status"] == "True"), None)


@pytest.mark.usefixtures("free_cluster")
def test_volcano_podgroup_phase_goes_pending_inqueue_running(
    admin: KubeClient, namespace: str, volcano: GangScheduler
) -> None:
    # "first" holds 3 of the 4 nodes; "a" asks for 3 nodes' worth of GPUs.
    create_groups(admin, namespace, VOLCANO, ["first"])
    wait_for(lambda: len(bound(admin, namespace, "first")) == GROUP_SIZE, 60, "first bound")
    group = VOLCANO.podgroup("a")
    group["spec"]["minResources"] = {GPU: str(GROUP_SIZE * NODE_GPUS)}
    admin.create(VOLCANO_PODGROUPS, group, namespace)

    # Not admitted to the queue while its minResources do not fit.
    wait_for(lambda: condition(admin, namespace, "a", "Unschedulable"), 30, "a Unschedulable")
    holds(lambda: phase(admin, namespace, VOLCANO, "a") == "Pending", 2, "a Pending")

    delete_group_pods(admin, namespace, "first")
    # Admitted (enqueue) before any of its pods exists...
    wait_for(lambda: phase(admin, namespace, VOLCANO, "a") == "Inqueue", 30, "a Inqueue")
    for index in range(GROUP_SIZE):
        admin.create(PODS, VOLCANO.pod("a", index), namespace)
    # ... and Running once minMember of them are placed.
    wait_for(lambda: phase(admin, namespace, VOLCANO, "a") == "Running", 30, "a Running")
    wait_for(
        lambda: status(admin, namespace, VOLCANO, "a").get("running") == GROUP_SIZE,
        30,
        "status.running 3",
    )
    scheduled = condition(admin, namespace, "a", "Scheduled")
    assert scheduled and scheduled["reason"] == "tasks in gang are ready to be scheduled"
    assert len(bound(admin, namespace, "a")) == GROUP_SIZE


@pytest.mark.usefixtures("free_cluster")
def test_volcano_binds_the_higher_priority_group_first(
    admin: KubeClient, namespace: str, volcano: GangScheduler, priority_classes: dict[str, str]
) -> None:
    # "first" holds 3 of the 4 nodes; "low", then "high", wait for room.
    create_groups(admin, namespace, VOLCANO, ["first"])
    wait_for(lambda: len(bound(admin, namespace, "first")) == GROUP_SIZE, 60, "first bound")
    create_groups(admin, namespace, VOLCANO, ["low"], {"low": priority_classes["low"]})
    # "high" a second younger (creationTimestamp counts seconds): with equal
    # priorities Volcano would take the older "low" first (checked by hand).
    low = admin.get(VOLCANO_PODGROUPS, "low", namespace)["metadata"]["creationTimestamp"]
    born = datetime.strptime(low, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    wait_for(lambda: datetime.now(UTC) - born >= timedelta(seconds=1), 5, "a second later")
    create_groups(admin, namespace, VOLCANO, ["high"], {"high": priority_classes["high"]})
    wait_for(
        lambda: (
            len(waiting(admin, namespace, "low") + waiting(admin, namespace, "high"))
            == 2 * GROUP_SIZE
        ),
        30,
        "low and high waiting",
    )
    assert bound(admin, namespace, "low") == bound(admin, namespace, "high") == []

    delete_group_pods(admin, namespace, "first")
    # Room for one of them: the older but lower-priority group stays waiting.
    wait_for(lambda: len(bound(admin, namespace, "high")) == GROUP_SIZE, 60, "high bound")
    holds(lambda: bound(admin, namespace, "low") == [], 2, "none of low bound")
    assert phase(admin, namespace, VOLCANO, "high") == "Running"
    assert phase(admin, namespace, VOLCANO, "low") == "Inqueue"
