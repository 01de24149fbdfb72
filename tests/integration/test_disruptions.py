"""Disruptions are not failures: a replica whose pod was evicted (by its
kubelet under node pressure, or through the Eviction API as ``kubectl
drain`` does) is recreated without counting against ``backoffLimit``,
whatever its restart policy, with an Event, and counted in
``status.disruptionCount``.

The Eviction API is the real API server's and preemption the real
kube-scheduler's: each writes the pod's ``DisruptionTarget`` condition before
deleting it, and KWOK keeps the pod Terminating for its stop duration as a
kubelet would. A node-pressure
eviction is written by the stand-in kubelet as kubelet's eviction manager
writes it (tests/integration/kubelet.py ``evict``).
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import NODES, PODS
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs, pytorch_job, run_all, settled
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_gang_schedulers import gpus_in_use

pytestmark = pytest.mark.usefixtures("operator")


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def replaced(jobs: Jobs, job: str, pod: str, old_uid: str) -> Any:
    """That ``pod`` of ``job`` is there again, another than ``old_uid``."""

    def check(_: dict[str, Any]) -> bool:
        new = jobs.pods(job).get(pod)
        return new is not None and new["metadata"]["uid"] != old_uid

    return check


def test_a_replica_its_kubelet_evicted_is_recreated_uncounted_even_under_never(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    jobs.create(pytorch_job("ev", [("master", 1, "Never"), ("worker", 1, "Never")]))
    pods = jobs.wait_pods("ev", ["ev-master-0", "ev-worker-0"])
    run_all(kubelet, jobs, "ev", list(pods))
    old = pods["ev-worker-0"]["metadata"]["uid"]
    node = jobs.pods("ev")["ev-worker-0"]["spec"]["nodeName"]  # bound by now: it ran
    kubelet.evict(jobs.namespace, "ev-worker-0")
    jobs.wait_new_pod("ev", "ev-worker-0", old, 20)
    # Counted wrongly, the eviction fails the job (restartPolicy Never) or is
    # charged to restartCount: in a reconcile that may come after the new pod.
    job = settled(
        jobs,
        "ev",
        "ev-worker-0 recreated",
        replaced(jobs, "ev", "ev-worker-0", old),
        operator=operator,
    )
    status = job["status"]
    assert status["phase"] != "Failed"
    assert (status["restartCount"], status["disruptionCount"]) == (0, 1)
    _, _, message = jobs.wait_event("ev", "Disrupted")
    assert message.startswith("Pod ev-worker-0 was disrupted on node ")
    assert "(TerminationByKubelet: The node was low on resource: memory." in message
    assert message.endswith("not counted against backoffLimit (disruption 1 of 10)")
    (record,) = jobs.status("ev")["restarts"]
    assert record["replica"] == "ev-worker-0" and record["counted"] is False
    assert (record["exitCode"], record["reason"]) == (137, "TerminationByKubelet")
    assert record["node"] == node


def test_a_pod_evicted_through_the_eviction_api_is_recorded_and_recreated(
    jobs: Jobs, admin: KubeClient, operator: OperatorProcess
) -> None:
    body = pytorch_job(
        "dr",
        [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "600s", "kwok.t9k.dev/stop-duration": "2s"},
    )
    jobs.create(body)
    jobs.wait_phase("dr", "Running", 30)
    old = jobs.pods("dr")["dr-worker-0"]["metadata"]["uid"]
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "dr-worker-0", "namespace": jobs.namespace},
    }
    admin.request("POST", PODS.path(jobs.namespace, "dr-worker-0", "eviction"), body=eviction)
    _, _, message = jobs.wait_event("dr", "Disrupted")
    assert "(EvictionByEvictionAPI" in message
    jobs.wait_new_pod("dr", "dr-worker-0", old, 20)
    replica = replaced(jobs, "dr", "dr-worker-0", old)
    job = settled(
        jobs,
        "dr",
        "the job running again on a new dr-worker-0",
        lambda j: (j.get("status") or {}).get("phase") == "Running" and replica(j),
        operator=operator,
    )
    status = job["status"]
    assert (status["restartCount"], status["disruptionCount"]) == (0, 1)
    assert len(status["restarts"]) == 1 and status["restarts"][0]["counted"] is False


def gpu_job(name: str, workers: int, priority: int) -> dict[str, Any]:
    """A job of ``workers`` pods of 8 GPUs each (a whole KWOK node) that run
    until deleted, at the T9k priority ``priority``."""
    body = pytorch_job(
        name,
        [("worker", workers, "Never")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "600s"},
    )
    template = body["spec"]["replicaSpecs"][0]["template"]["spec"]
    template["priorityClassName"] = f"t9k-priority-{priority}"
    gpus = {"nvidia.com/gpu": "8"}
    template["containers"][0]["resources"] = {"limits": gpus, "requests": gpus}
    return body


def bound(jobs: Jobs, name: str) -> int:
    return sum(1 for p in jobs.pods(name).values() if p["spec"].get("nodeName"))


@pytest.mark.usefixtures("priority_classes")
def test_a_replica_preempted_by_a_higher_priority_job_is_recreated_uncounted(
    jobs: Jobs, admin: KubeClient, operator: OperatorProcess
) -> None:
    """The shipped classes let a job of higher priority preempt lower ones, as the
    T9k docs promise; the preempted job loses no backoffLimit to it and says why."""
    wait_for(lambda: gpus_in_use(admin) == 0, 120, "the GPUs of earlier tests freed")
    jobs.create(gpu_job("low", 4, 10))  # all 32 GPUs of the cluster
    jobs.wait_phase("low", "Running", 60)
    jobs.create(gpu_job("high", 2, 90))
    wait_for(lambda: bound(jobs, "high") == 2, 60, "the high-priority job placed by preemption")

    def disrupted() -> list[str]:
        return [m for _, r, m in jobs.events("low") if r == "Disrupted"]

    # kube-scheduler preempts at least one low pod per high pod; on a busy
    # machine it may preempt more before its nominations settle. A victim the
    # operator saw with its condition names PreemptionByScheduler; one that was
    # already gone when it looked is recorded as gone.
    seen = wait_for(lambda: len(disrupted()) >= 2 and disrupted(), 30, "the preempted replicas")
    assert any("(PreemptionByScheduler" in m for m in seen), seen
    assert all("(PreemptionByScheduler" in m or " is gone" in m for m in seen), seen
    wait_for(
        lambda: jobs.status("low").get("disruptionCount") == len(disrupted()),
        30,
        "every disruption counted once",
    )
    # The preempted replicas are created again; two of them find the nodes left.
    job = settled(
        jobs,
        "low",
        "the preempted replicas recreated, two of them on the nodes left",
        lambda _: len(jobs.pods("low")) == 4 and bound(jobs, "low") == 2,
        operator=operator,
    )
    status = job["status"]
    assert status["phase"] != "Failed"  # restartPolicy Never, yet no failure
    assert status["restartCount"] == 0
    assert status["disruptionCount"] == len(disrupted())
    assert not any(r["counted"] for r in status["restarts"]), status["restarts"]


def test_a_replica_on_a_deleted_node_is_recreated_once_podgc_removes_its_pod(
    jobs: Jobs, admin: KubeClient, operator: OperatorProcess
) -> None:
    """A node an administrator deletes (its machine is gone): kube-controller-manager's
    PodGC removes the pods bound to it (after its 40 s quarantine), and the
    operator recreates the replica as a disruption, recorded, not as a failure."""
    node = f"kwok-gone-{jobs.namespace[-5:]}"
    taint = {"key": "t9k.test/doomed", "value": "true", "effect": "NoSchedule"}
    admin.create(
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node,
                "annotations": {"kwok.x-k8s.io/node": "fake"},
                "labels": {"kubernetes.io/hostname": node, "type": "kwok"},
            },
            "spec": {"taints": [taint]},  # only this test's worker goes there
            "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "10"}},
        },
    )
    try:
        body = pytorch_job(
            "lost",
            [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")],
            manual=False,
            annotations={"kwok.t9k.dev/run-duration": "600s"},
        )
        worker = body["spec"]["replicaSpecs"][1]["template"]["spec"]
        worker["nodeSelector"] = {"kubernetes.io/hostname": node}
        worker["tolerations"] = [{**taint, "operator": "Equal"}]
        jobs.create(body)
        jobs.wait_phase("lost", "Running", 60)
        old = jobs.pods("lost")["lost-worker-0"]
        assert old["spec"]["nodeName"] == node
        admin.delete(NODES, node)
        jobs.wait_new_pod("lost", "lost-worker-0", old["metadata"]["uid"], 120)
        replica = replaced(jobs, "lost", "lost-worker-0", old["metadata"]["uid"])
        job = settled(
            jobs,
            "lost",
            "the job running again on a new lost-worker-0",
            lambda j: (j.get("status") or {}).get("phase") == "Running" and replica(j),
            operator=operator,
        )
        status = job["status"]
        assert status["phase"] != "Failed" and status["restartCount"] == 0
        assert status["disruptionCount"] == 1
        # PodGC marks the pod DisruptionTarget (DeletionByPodGC) and deletes it at
        # once: the operator may see that, or only that the pod is gone.
        (record,) = status["restarts"]
        assert record["replica"] == "lost-worker-0" and record["counted"] is False
        assert record["reason"] in ("DeletionByPodGC", "Deleted"), record
        _, _, message = jobs.wait_event("lost", "Disrupted")
        assert message.startswith("Pod lost-worker-0 ")
    finally:
        with contextlib.suppress(NotFound):
            admin.delete(NODES, node)
