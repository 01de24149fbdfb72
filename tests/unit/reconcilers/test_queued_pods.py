"""A TensorBoard that names a queue: its pod waits in it, with the engine that
queues jobs (Kueue, else Volcano), and the TensorBoard says so; without one,
the queue is not used and the Ready condition says that.

The plans are pure: each expected write is written out here by hand."""

from __future__ import annotations

import copy
from typing import Any

from t9k_operator.integrations.gang import build as gang
from t9k_operator.integrations.gang import queued as gang_queued
from t9k_operator.integrations.gang.integration import GangScheduling
from t9k_operator.integrations.kueue import queued
from t9k_operator.integrations.kueue.integration import RESOURCE_FLAVORS, Kueue
from t9k_operator.reconcilers.pipeline.queued_pods import queuer
from t9k_operator.resources import PODS, WORKLOADS, Resource
from tests.unit.reconcilers.test_tensorboard_reconciler import NS, POD, Harness

SPEC = {
    "logDir": {"pvc": [{"name": "logs"}]},
    "scheduler": {"t9kScheduler": {"queue": "gpu-a"}},
}
UID = "0123456789abcdef"
OWNED_BY_THE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "name": POD,
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": False,
}


def created_pod(**changes: Any) -> dict[str, Any]:
    """A queued pod as the API server holds it (a uid, a resourceVersion)."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD,
            "namespace": NS,
            "uid": UID,
            "resourceVersion": "7",
            "labels": {"t9k.dev/queue": "gpu-a"},
        },
        "spec": {
            "schedulingGates": [{"name": "t9k.dev/kueue-admission"}],
            "nodeSelector": {"disk": "ssd"},
            "containers": [
                {"name": "tensorboard", "image": "tb:1", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
        "status": {"phase": "Pending"},
    }
    pod.update(changes)
    return pod


def workload_with(conditions: list[dict[str, Any]], admission: Any = None) -> dict[str, Any]:
    wl = queued.workload(created_pod(), "gpu-a")
    wl["metadata"]["uid"] = "w1"
    wl["status"] = {"conditions": conditions}
    if admission is not None:
        wl["status"]["admission"] = admission
    return wl


def no_caches(resource: Resource, namespace: str | None, name: str) -> Any:
    return None


# -- which integration queues ---------------------------------------------------------


def test_kueue_queues_before_volcano_and_a_scheduler_without_queues_queues_nothing() -> None:
    volcano = GangScheduling(gang.backend("volcano"))
    kueue = Kueue()
    assert queuer([kueue, volcano]) is kueue
    assert queuer([volcano]) is volcano
    assert queuer([GangScheduling(gang.backend("coscheduling"))]) is None
    assert queuer([GangScheduling(None)]) is None
    assert (kueue.engine, volcano.engine) == ("Kueue LocalQueue", "Volcano queue")


# -- the TensorBoard's side -----------------------------------------------------------


def test_without_an_engine_the_queue_is_not_used_and_said_so() -> None:
    h = Harness(dict(SPEC))
    h.run()
    pod = h.fake.get(PODS, POD, NS)
    assert "schedulingGates" not in pod["spec"] and "t9k.dev/queue" not in pod["metadata"]["labels"]
    message = h.ready()["message"]
    assert "spec.scheduler.t9kScheduler.queue gpu-a is not used" in message
    assert "--kueue or --gang-scheduler volcano" in message


def test_with_kueue_the_pod_is_created_gated_and_the_tensorboard_says_it_is_queued() -> None:
    h = Harness(dict(SPEC))
    h.reconciler.queuer = Kueue()
    h.run()
    pod = h.fake.get(PODS, POD, NS)
    assert pod["spec"]["schedulingGates"] == [{"name": "t9k.dev/kueue-admission"}]
    assert pod["metadata"]["labels"]["t9k.dev/queue"] == "gpu-a"
    ready = h.ready()
    assert (ready["status"], ready["reason"]) == ("False", "Queued")
    assert ready["message"] == (
        "pod tb-tensorboard waits in Kueue LocalQueue gpu-a: not admitted yet"
    )
    assert h.warnings() == [], "waiting in a queue is not trouble"
    # Kueue's words, once the pod carries them
    h.pod()["metadata"].setdefault("annotations", {})["t9k.dev/queue-waiting"] = (
        "couldn't assign flavors to pod set main: insufficient quota for cpu"
    )
    h.sync()
    h.run()
    assert h.ready()["message"] == (
        "pod tb-tensorboard waits in Kueue LocalQueue gpu-a: couldn't assign flavors to "
        "pod set main: insufficient quota for cpu"
    )
    # let go: the gate and the annotation gone, the pod is read as any pod
    h.pod()["spec"]["schedulingGates"] = []
    del h.pod()["metadata"]["annotations"]["t9k.dev/queue-waiting"]
    h.sync()
    h.run()
    assert (h.ready()["status"], h.ready()["reason"]) == ("False", "Pending")
    creates = [n for verb, kind, n in h.fake.writes if (verb, kind) == ("create", "Pod")]
    assert creates == [POD], "a pod let go is the same pod: not replaced"


def test_with_volcano_the_pod_names_a_group_of_its_own_in_volcanos_scheduler() -> None:
    h = Harness(dict(SPEC))
    h.reconciler.queuer = GangScheduling(gang.backend("volcano"))
    h.run()
    pod = h.fake.get(PODS, POD, NS)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == POD
    assert pod["metadata"]["labels"]["t9k.dev/queue"] == "gpu-a"
    assert "schedulingGates" not in pod["spec"]


def test_a_pod_built_without_its_queue_is_replaced_once_an_engine_queues_it() -> None:
    h = Harness(dict(SPEC))
    h.run()
    h.reconciler.queuer = Kueue()
    h.run()
    deletes = [n for verb, kind, n in h.fake.writes if (verb, kind) == ("delete", "Pod")]
    assert deletes == [POD]


# -- Kueue's plan for a queued pod ----------------------------------------------------


def test_a_gated_pod_without_a_workload_gets_one_of_one_pod_owned_by_it() -> None:
    (write,) = queued.plan(created_pod(), None, no_caches)
    assert (write.verb, write.resource) == ("create", WORKLOADS)
    assert write.body == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "tb-tensorboard-01234567",
            "namespace": NS,
            "labels": {"app.kubernetes.io/managed-by": "t9k-operator"},
            "ownerReferences": [OWNED_BY_THE_POD],
        },
        "spec": {
            "queueName": "gpu-a",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "tensorboard",
                                    "image": "tb:1",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ],
                            "nodeSelector": {"disk": "ssd"},
                        }
                    },
                }
            ],
            "priority": 0,
        },
    }


PENDING = [
    {
        "type": "QuotaReserved",
        "status": "False",
        "reason": "Pending",
        "message": "couldn't assign flavors to pod set main: insufficient quota for cpu",
    }
]


def test_while_it_waits_the_pod_carries_kueues_words_once() -> None:
    wl = workload_with(PENDING)
    (write,) = queued.plan(created_pod(), wl, no_caches)
    assert (write.verb, write.resource) == ("patch", PODS)
    assert write.body == {
        "metadata": {
            "name": POD,
            "namespace": NS,
            "resourceVersion": "7",
            "annotations": {
                "t9k.dev/queue-waiting": (
                    "couldn't assign flavors to pod set main: insufficient quota for cpu"
                )
            },
        }
    }
    told = created_pod()
    told["metadata"]["annotations"] = {"t9k.dev/queue-waiting": PENDING[0]["message"]}
    assert list(queued.plan(told, wl, no_caches)) == []


def test_admitted_the_pod_is_let_go_to_its_flavors_nodes() -> None:
    wl = workload_with(
        [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ],
        admission={
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"cpu": "rack-1"}, "count": 1}],
        },
    )
    flavor = {
        "metadata": {"name": "rack-1"},
        "spec": {
            "nodeLabels": {"rack": "r1"},
            "tolerations": [{"key": "rack", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }

    def caches(resource: Resource, namespace: str | None, name: str) -> Any:
        return flavor if (resource, name) == (RESOURCE_FLAVORS, "rack-1") else None

    (write,) = queued.plan(created_pod(), wl, caches)
    assert (write.verb, write.resource) == ("patch", PODS)
    assert write.body == {
        "metadata": {
            "name": POD,
            "namespace": NS,
            "resourceVersion": "7",
            "annotations": {"t9k.dev/queue-waiting": None},
        },
        "spec": {
            "schedulingGates": [],
            "nodeSelector": {"disk": "ssd", "rack": "r1"},
            "tolerations": [{"key": "rack", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
    running = created_pod()
    running["spec"]["schedulingGates"] = []
    assert list(queued.plan(running, wl, caches)) == [], "let go once"


def test_evicted_the_pod_is_deleted_under_its_uid() -> None:
    wl = workload_with(
        [{"type": "Evicted", "status": "True", "reason": "Preempted", "message": "preempted"}]
    )
    running = created_pod()
    running["spec"]["schedulingGates"] = []
    (write,) = queued.plan(running, wl, no_caches)
    assert (write.verb, write.resource) == ("delete", PODS)
    assert write.body == {"metadata": {"name": POD, "namespace": NS, "uid": UID}}


def test_an_ended_pod_or_one_let_go_without_a_workload_needs_nothing() -> None:
    assert list(queued.plan(created_pod(status={"phase": "Failed"}), None, no_caches)) == []
    free = created_pod()
    free["spec"]["schedulingGates"] = []
    assert list(queued.plan(free, None, no_caches)) == []


# -- Volcano's plan for a queued pod --------------------------------------------------


def test_volcano_gives_a_queued_pod_a_podgroup_of_one_in_its_queue() -> None:
    be = gang.backend("volcano")
    groups = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
    pod = created_pod()
    del pod["spec"]["schedulingGates"]
    plan = gang_queued.planner(be, groups)
    (write,) = plan(pod, None, no_caches)
    assert (write.verb, write.resource) == ("create", groups)
    assert write.body == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": POD,
            "namespace": NS,
            "labels": {"app.kubernetes.io/managed-by": "t9k-operator"},
            "ownerReferences": [OWNED_BY_THE_POD],
        },
        "spec": {"minMember": 1, "queue": "gpu-a"},
    }
    assert list(plan(pod, copy.deepcopy(write.body), no_caches)) == []
