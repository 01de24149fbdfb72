"""A TensorBoard that names a queue (``spec.scheduler.t9kScheduler.queue``) on
the local cluster, with the real Kueue manager and the real Volcano scheduler:
with ``--kueue`` its pod waits behind a scheduling gate until Kueue admits the
pod's Workload in the LocalQueue (and a queue without room keeps it waiting,
the TensorBoard saying why in Kueue's words); with ``--gang-scheduler=volcano``
its pod gets a PodGroup of one in the Volcano queue and Volcano binds it.
Deleting the TensorBoard takes the pod and what it waited in with it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.resources import PODS, WORKLOADS
from tests.integration.cluster import wait_for
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_kueue_jobs import (  # noqa: F401 (fixtures)
    kueue_operator,
    kueue_ready,
    make_queue,
)
from tests.integration.test_tensorboard import IMAGE, ready_condition, tb_status

pytestmark = pytest.mark.xdist_group("add-ons")

POD = "tb-tensorboard"
VOLCANO_GROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")


@pytest.fixture
def team(admin: KubeClient, namespace: str) -> Iterator[str]:
    """A ClusterQueue of the test's own (1000 CPUs) and its LocalQueue ``team``
    (Kueue running: the fixture kueue_operator asks for kueue_ready)."""
    yield from make_queue(admin, namespace)


def queued_tensorboard(queue: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "tensorstack.dev/v1beta1",
        "kind": "TensorBoard",
        "metadata": {"name": "tb"},
        "spec": {
            "image": IMAGE,
            "logDir": {"http": {"url": ["http://logs.example/run/events.out.tfevents.1"]}},
            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
            "scheduler": {"t9kScheduler": {"queue": queue}},
        },
    }


def pod_or_none(admin: KubeClient, namespace: str) -> dict[str, Any] | None:
    try:
        return admin.get(PODS, POD, namespace)
    except NotFound:
        return None


def gone(admin: KubeClient, resource: Resource, name: str, namespace: str) -> bool:
    try:
        admin.get(resource, name, namespace)
    except NotFound:
        return True
    return False


@pytest.mark.usefixtures("kueue_operator")
def test_with_kueue_the_pod_waits_for_admission_then_runs(
    admin: KubeClient, namespace: str, team: str
) -> None:
    admin.create(TENSORBOARDS, queued_tensorboard(team), namespace)
    pod = wait_for(
        lambda: (p := pod_or_none(admin, namespace)) and p["spec"].get("nodeName") and p,
        60,
        "the TensorBoard's pod admitted by Kueue and bound",
    )
    assert pod["spec"].get("schedulingGates") in (None, [])
    assert pod["metadata"]["labels"]["t9k.dev/queue"] == team
    (workload,) = admin.list(WORKLOADS, namespace)["items"]
    assert workload["spec"]["queueName"] == team
    assert workload["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    admitted = [c for c in workload["status"]["conditions"] if c["type"] == "Admitted"]
    assert admitted and admitted[0]["status"] == "True"
    # settled: one pod, one Workload, and the TensorBoard no longer says it is queued
    wait_for(
        lambda: ready_condition(tb_status(admin, namespace, "tb")).get("reason") != "Queued",
        30,
        "the TensorBoard past its queue",
    )
    assert len(admin.list(WORKLOADS, namespace)["items"]) == 1
    assert admin.get(PODS, POD, namespace)["metadata"]["uid"] == pod["metadata"]["uid"]
    admin.delete(TENSORBOARDS, "tb", namespace)
    wait_for(lambda: gone(admin, PODS, POD, namespace), 60, "the pod gone with the TensorBoard")
    wait_for(
        lambda: not admin.list(WORKLOADS, namespace)["items"], 60, "the Workload gone with its pod"
    )


@pytest.mark.usefixtures("kueue_operator")
def test_with_kueue_a_queue_without_room_keeps_it_waiting_and_says_why(
    admin: KubeClient, namespace: str, team: str
) -> None:
    # the ClusterQueue has 1000 CPUs: this asks for more
    admin.create(TENSORBOARDS, queued_tensorboard(team, cpu="2000"), namespace)

    def queued() -> dict[str, Any] | None:
        cond = ready_condition(tb_status(admin, namespace, "tb"))
        return cond if cond.get("reason") == "Queued" and "quota" in cond["message"] else None

    cond = wait_for(queued, 60, "the TensorBoard Queued, in Kueue's words")
    assert cond["status"] == "False"
    assert cond["message"].startswith(f"pod {POD} waits in Kueue LocalQueue {team}: ")
    pod = admin.get(PODS, POD, namespace)
    assert pod["spec"]["schedulingGates"] == [{"name": "t9k.dev/kueue-admission"}]
    assert not pod["spec"].get("nodeName")
    (workload,) = admin.list(WORKLOADS, namespace)["items"]
    assert not (workload.get("status") or {}).get("admission")
    # nothing else happens while it waits: the same pod, still gated, one Workload
    uid = pod["metadata"]["uid"]
    time.sleep(3)
    again = admin.get(PODS, POD, namespace)
    assert again["metadata"]["uid"] == uid and again["spec"]["schedulingGates"]
    assert len(admin.list(WORKLOADS, namespace)["items"]) == 1
    warnings = [
        e
        for e in admin.list(Resource("", "v1", "events", "Event"), namespace)["items"]
        if e["involvedObject"].get("name") == "tb" and e["type"] == "Warning"
    ]
    assert warnings == [], "waiting in a queue is not trouble"


@pytest.mark.usefixtures("volcano")
def test_with_volcano_the_pod_gets_a_podgroup_of_one_in_the_queue(
    admin: KubeClient, namespace: str, start_operator: Callable[..., OperatorProcess]
) -> None:
    start_operator("--gang-scheduler=volcano").wait_ready()
    admin.create(TENSORBOARDS, queued_tensorboard("default"), namespace)
    pod = wait_for(
        lambda: (p := pod_or_none(admin, namespace)) and p["spec"].get("nodeName") and p,
        60,
        "the TensorBoard's pod bound by Volcano",
    )
    assert pod["spec"]["schedulerName"] == "volcano"
    group = admin.get(VOLCANO_GROUPS, POD, namespace)
    assert (group["spec"]["minMember"], group["spec"]["queue"]) == (1, "default")
    assert group["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    admin.delete(TENSORBOARDS, "tb", namespace)
    wait_for(lambda: gone(admin, PODS, POD, namespace), 60, "the pod gone with the TensorBoard")
    wait_for(
        lambda: gone(admin, VOLCANO_GROUPS, POD, namespace), 60, "the PodGroup gone with its pod"
    )
