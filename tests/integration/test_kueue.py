"""The Kueue manager the local cluster runs (``python3 -m hack.cluster kueue``) admits
Workloads for real, shown with Workload objects alone and no operator: the
way the operator is to use it, creating each job's Workload itself.

A ClusterQueue of 16 ``nvidia.com/gpu`` (the four KWOK nodes hold 32), open to
every namespace, and a LocalQueue in the test's namespace; each Workload asks
for one pod set of 2 pods of 8 GPUs, so one fits and the next waits.

What an owner of a Workload without a job integration must do, seen here and
in Kueue v0.12.3's source (the names below are v0.12.3's; some moved since).
These tests check the behaviour against the Kueue the local cluster runs,
v0.17.0, through its v1beta2 API:

- Creating it: ``spec.priority`` is the creator's to set. The CRD refuses a
  ``priorityClassRef`` without it, and Kueue's webhooks (not registered
  here anyway) would not fill it in; a job integration copies the
  WorkloadPriorityClass's value (``extractPriority`` in
  pkg/controller/jobframework/reconciler.go).
- Finishing it: the condition ``Finished`` True (status subresource), or
  deleting it, gives its quota back at once.
- Preemption (``Preemptor.applyPreemptionWithSSA`` in
  pkg/scheduler/preemption/preemption.go) sets ``Evicted`` True (reason
  ``Preempted``) and ``Preempted`` True (reason ``InClusterQueue`` here), and
  nothing more: ``QuotaReserved`` and ``Admitted`` stay True and
  ``status.admission`` stays, so the quota stays used and the preemptor
  waits ("Pending the preemption of 1 workload(s)"). Nothing in Kueue clears
  that for an ownerless Workload: WorkloadReconciler.Reconcile
  (pkg/controller/core/workload_controller.go) clears a reservation only for
  a missing or stopped LocalQueue or ClusterQueue, and it is
  JobReconciler.ReconcileGenericJob (step "handle eviction") that, once the
  job has stopped, sets ``Requeued`` (True only for preemption), sets
  ``QuotaReserved`` False (reason ``Pending``), drops ``status.admission``
  and so ``Admitted`` turns False. The owner must do the same.
- Then Kueue queues it again by itself (the transition from reserved to
  pending, in WorkloadReconciler.Update), unless ``Requeued`` is False
  (``backoffWaitingTimeExpired`` in pkg/queue/cluster_queue.go holds it back),
  and admits it once there is room, turning ``Evicted`` and ``Preempted``
  False with reason ``QuotaReserved`` and a message "Previously: ..."
  (``workload.SetQuotaReservation``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator.kube import Invalid, KubeClient, NotFound, Resource
from tests.integration.cluster import Kueue, wait_for

# Run on one pytest-xdist worker, so that only its cluster starts the gang
# schedulers and Kueue (session fixtures), once.
pytestmark = pytest.mark.xdist_group("add-ons")

GPU = "nvidia.com/gpu"
QUOTA = 16
PODS_PER_WORKLOAD = 2
GPUS_PER_POD = 8

KUEUE_API = ("kueue.x-k8s.io", "v1beta2")
RESOURCE_FLAVORS = Resource(*KUEUE_API, "resourceflavors", "ResourceFlavor", namespaced=False)
CLUSTER_QUEUES = Resource(*KUEUE_API, "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUES = Resource(*KUEUE_API, "localqueues", "LocalQueue")
WORKLOADS = Resource(*KUEUE_API, "workloads", "Workload")
PRIORITY_CLASSES = Resource(
    *KUEUE_API, "workloadpriorityclasses", "WorkloadPriorityClass", namespaced=False
)
PRIORITIES = {"low": 10, "high": 1000}


@dataclass(frozen=True)
class Queues:
    """This test's ClusterQueue and LocalQueue (and its ResourceFlavor and
    WorkloadPriorityClasses, by level), all named after its namespace."""

    namespace: str
    flavor: str
    cluster_queue: str
    local_queue: str
    priority_classes: dict[str, str]


@pytest.fixture
def queues(admin: KubeClient, namespace: str, kueue: Kueue) -> Iterator[Queues]:
    q = Queues(
        namespace=namespace,
        flavor=f"{namespace}-gpus",
        cluster_queue=namespace,
        local_queue="jobs",
        priority_classes={level: f"{namespace}-{level}" for level in PRIORITIES},
    )
    admin.create(RESOURCE_FLAVORS, kueue_object("ResourceFlavor", q.flavor))
    for level, value in PRIORITIES.items():
        body = kueue_object("WorkloadPriorityClass", q.priority_classes[level])
        body["value"] = value
        admin.create(PRIORITY_CLASSES, body)
    cq = kueue_object("ClusterQueue", q.cluster_queue)
    cq["spec"] = {
        "namespaceSelector": {},  # every namespace
        # A Workload may preempt lower-priority ones of its own queue.
        "preemption": {"withinClusterQueue": "LowerPriority"},
        # Only what the Workloads ask for: a resource they ask for and the
        # queue does not cover makes them inadmissible.
        "resourceGroups": [
            {
                "coveredResources": [GPU],
                "flavors": [
                    {"name": q.flavor, "resources": [{"name": GPU, "nominalQuota": QUOTA}]}
                ],
            }
        ],
    }
    admin.create(CLUSTER_QUEUES, cq)
    lq = kueue_object("LocalQueue", q.local_queue)
    lq["spec"] = {"clusterQueue": q.cluster_queue}
    admin.create(LOCAL_QUEUES, lq, namespace)
    wait_for(
        lambda: is_true(admin.get(CLUSTER_QUEUES, q.cluster_queue), "Active"),
        30,
        f"ClusterQueue {q.cluster_queue} Active (log: {kueue.log})",
    )
    wait_for(
        lambda: is_true(admin.get(LOCAL_QUEUES, q.local_queue, namespace), "Active"),
        30,
        f"LocalQueue {q.local_queue} Active",
    )
    yield q
    # The Workloads first: Kueue lets the ClusterQueue and the flavor go
    # (finalizer kueue.x-k8s.io/resource-in-use) once nothing uses them.
    admin.request("DELETE", WORKLOADS.path(namespace))
    for resource, name in (
        (CLUSTER_QUEUES, q.cluster_queue),
        (RESOURCE_FLAVORS, q.flavor),
        *((PRIORITY_CLASSES, n) for n in q.priority_classes.values()),
    ):
        with contextlib.suppress(NotFound):
            admin.delete(resource, name)


# -- helpers ---------------------------------------------------------------------------


def kueue_object(kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "/".join(KUEUE_API), "kind": kind, "metadata": {"name": name}}


def workload(q: Queues, name: str, level: str | None = None) -> dict[str, Any]:
    """One pod set of 2 pods of 8 GPUs, in the LocalQueue; at ``level``'s
    WorkloadPriorityClass, its value copied into ``spec.priority``."""
    body = kueue_object("Workload", name)
    body["spec"] = {
        "queueName": q.local_queue,
        "podSets": [
            {
                "name": "workers",
                "count": PODS_PER_WORKLOAD,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "worker",
                                "image": "busybox",
                                "resources": {
                                    "requests": {GPU: str(GPUS_PER_POD)},
                                    "limits": {GPU: str(GPUS_PER_POD)},
                                },
                            }
                        ],
                    }
                },
            }
        ],
    }
    if level:
        body["spec"].update(
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": q.priority_classes[level],
            },
            priority=PRIORITIES[level],
        )
    return body


def create(client: KubeClient, q: Queues, name: str, level: str | None = None) -> dict[str, Any]:
    return client.create(WORKLOADS, workload(q, name, level), q.namespace)


def get(client: KubeClient, q: Queues, name: str) -> dict[str, Any]:
    return client.get(WORKLOADS, name, q.namespace)


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), None)


def is_true(obj: dict[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return bool(c and c["status"] == "True")


def admitted(client: KubeClient, q: Queues, name: str) -> bool:
    return is_true(get(client, q, name), "Admitted")


def waiting(client: KubeClient, q: Queues, name: str, *texts: str) -> dict[str, Any] | None:
    """The Workload when Kueue has tried and left it unreserved (QuotaReserved
    False, reason Pending) with a message saying all of ``texts``."""
    wl = get(client, q, name)
    c = condition(wl, "QuotaReserved") or {}
    pending = c.get("status") == "False" and c.get("reason") == "Pending"
    return wl if pending and all(t in c.get("message", "") for t in texts) else None


def holds(predicate: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), what
        time.sleep(0.2)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def finish(client: KubeClient, q: Queues, name: str) -> None:
    """What an owner does when its job is over: ``Finished`` True, applied to
    the status subresource under its own field manager (conditions are a map
    keyed by type: Kueue's conditions stay as they are)."""
    patch = kueue_object("Workload", name)
    patch["status"] = {
        "conditions": [
            {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "message": "the job succeeded",
                "lastTransitionTime": now(),
            }
        ]
    }
    client.patch(
        WORKLOADS,
        name,
        patch,
        q.namespace,
        patch_type="apply",
        subresource="status",
        field_manager="t9k-test",
    )


def release(client: KubeClient, q: Queues, name: str, requeue: bool = True) -> None:
    """What an owner does once an evicted Workload's pods are gone, as Kueue's
    job integrations do: ``Requeued`` (True: queue it again), QuotaReserved
    False (reason Pending), no ``status.admission``, and so Admitted False.
    A merge patch guarded by resourceVersion: Kueue writes these too."""
    wl = get(client, q, name)
    evicted = condition(wl, "Evicted")
    assert evicted and evicted["status"] == "True", wl["status"]
    message = evicted["message"]
    stamp = now()
    kept = [
        c
        for c in wl["status"]["conditions"]
        if c["type"] not in ("QuotaReserved", "Admitted", "Requeued")
    ]
    conditions = [
        *kept,
        {
            "type": "Requeued",
            "status": "True" if requeue else "False",
            "reason": evicted["reason"],
            "message": message,
            "lastTransitionTime": stamp,
        },
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": message,
            "lastTransitionTime": stamp,
        },
        {
            "type": "Admitted",
            "status": "False",
            "reason": "NoReservation",
            "message": "The workload has no reservation",
            "lastTransitionTime": stamp,
        },
    ]
    patch = {
        "metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]},
        "status": {"admission": None, "conditions": conditions},
    }
    client.patch(WORKLOADS, name, patch, q.namespace, subresource="status")


def usage(client: KubeClient, q: Queues) -> dict[str, Any]:
    """The ClusterQueue's counts and the GPUs its admitted Workloads use."""
    status = client.get(CLUSTER_QUEUES, q.cluster_queue).get("status") or {}
    used = {
        r["name"]: r["total"]
        for f in status.get("flavorsUsage") or []
        if f["name"] == q.flavor
        for r in f["resources"]
    }
    return {
        "admitted": status.get("admittedWorkloads"),
        "pending": status.get("pendingWorkloads"),
        "gpus": used.get(GPU),
    }


# -- admission within quota ------------------------------------------------------------


def test_admits_within_quota_and_the_next_once_the_first_finishes_or_goes(
    admin: KubeClient, queues: Queues
) -> None:
    q = queues
    create(admin, q, "first")
    wait_for(lambda: admitted(admin, q, "first"), 30, "first Admitted")
    first = get(admin, q, "first")
    reserved = condition(first, "QuotaReserved")
    assert reserved and reserved["status"] == "True", first["status"]
    assert reserved["message"] == f"Quota reserved in ClusterQueue {q.cluster_queue}"
    admission = first["status"]["admission"]
    assert admission["clusterQueue"] == q.cluster_queue
    assert admission["podSetAssignments"] == [
        {
            "name": "workers",
            "count": PODS_PER_WORKLOAD,
            "flavors": {GPU: q.flavor},
            "resourceUsage": {GPU: str(QUOTA)},
        }
    ]

    create(admin, q, "second")
    needed = f"insufficient unused quota for {GPU} in flavor {q.flavor}, {QUOTA} more needed"
    wait_for(lambda: waiting(admin, q, "second", needed), 30, "second waiting for quota")
    holds(lambda: not admitted(admin, q, "second"), 2, "second not admitted")
    wait_for(
        lambda: usage(admin, q) == {"admitted": 1, "pending": 1, "gpus": str(QUOTA)},
        30,
        "the ClusterQueue's status: 1 admitted, 1 pending, 16 GPUs used",
    )

    finish(admin, q, "first")
    wait_for(lambda: admitted(admin, q, "second"), 30, "second Admitted once first finished")
    # Finished does not take the admission away: the quota is given back all the same.
    first = get(admin, q, "first")
    assert is_true(first, "Finished") and first["status"]["admission"], first["status"]

    create(admin, q, "third")
    wait_for(lambda: waiting(admin, q, "third", needed), 30, "third waiting for quota")
    admin.delete(WORKLOADS, "second", q.namespace)
    wait_for(lambda: admitted(admin, q, "third"), 30, "third Admitted once second was deleted")


def test_a_workload_naming_a_priority_class_must_carry_its_priority(
    admin: KubeClient, queues: Queues
) -> None:
    body = workload(queues, "unpriced", "high")
    del body["spec"]["priority"]
    with pytest.raises(Invalid) as refused:
        admin.create(WORKLOADS, body, queues.namespace)
    assert "priority should not be nil when priorityClassRef is set" in str(refused.value)


def test_a_v1beta1_workload_is_converted_by_kueues_webhook_and_admitted(
    admin: KubeClient, queues: Queues
) -> None:
    """Kueue stores v1beta2 and serves v1beta1 only through its manager's
    conversion webhook, which the local cluster registers as Kueue's manifests
    do (hack/cluster/kueue_manager.py): a Workload written as v1beta1 has its
    priority class in v1beta2's priorityClassRef, is admitted, and reads back
    as v1beta1 with its fields."""
    q = queues
    v1beta1 = Resource("kueue.x-k8s.io", "v1beta1", "workloads", "Workload")
    body = workload(q, "old")
    body["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    body["spec"].update(
        priorityClassSource="kueue.x-k8s.io/workloadpriorityclass",
        priorityClassName=q.priority_classes["low"],
        priority=PRIORITIES["low"],
    )
    admin.create(v1beta1, body, q.namespace)
    stored = get(admin, q, "old")
    assert stored["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": q.priority_classes["low"],
    }
    wait_for(lambda: admitted(admin, q, "old"), 30, "old Admitted")
    old = admin.get(v1beta1, "old", q.namespace)
    assert old["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert old["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
    assert old["spec"]["priorityClassName"] == q.priority_classes["low"]
    assert old["status"]["admission"]["clusterQueue"] == q.cluster_queue


# -- preemption ------------------------------------------------------------------------


def test_preemption_evicts_but_the_quota_stays_reserved_until_the_owner_releases_it(
    admin: KubeClient, queues: Queues
) -> None:
    q = queues
    create(admin, q, "low", "low")
    wait_for(lambda: admitted(admin, q, "low"), 30, "low Admitted")
    high_uid = create(admin, q, "high", "high")["metadata"]["uid"]

    # 1. Kueue marks the lower-priority Workload evicted and preempted...
    wait_for(lambda: is_true(get(admin, q, "low"), "Evicted"), 30, "low Evicted")
    low = get(admin, q, "low")
    evicted, preempted = condition(low, "Evicted"), condition(low, "Preempted")
    assert evicted and evicted["reason"] == "Preempted", low["status"]
    assert f"Preempted to accommodate a workload (UID: {high_uid}" in evicted["message"]
    # Kueue v0.17 adds the cohort paths of both (a ClusterQueue in no cohort: /<its name>).
    assert "due to prioritization in the ClusterQueue" in evicted["message"]
    assert evicted["message"].endswith(
        f"; preemptor path: /{q.cluster_queue}; preemptee path: /{q.cluster_queue}"
    )
    assert preempted and preempted["status"] == "True", low["status"]
    assert preempted["reason"] == "InClusterQueue"
    assert low["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Preempted", "underlyingCause": "", "count": 1}
    ]
    # ... and leaves it admitted, its quota reserved: the preemptor waits for it.
    assert is_true(low, "QuotaReserved") and is_true(low, "Admitted"), low["status"]
    assert low["status"]["admission"]["clusterQueue"] == q.cluster_queue
    wait_for(
        lambda: waiting(admin, q, "high", "Pending the preemption of 1 workload(s)"),
        30,
        "high waiting for the preemption",
    )
    holds(
        lambda: is_true(get(admin, q, "low"), "QuotaReserved") and not admitted(admin, q, "high"),
        3,
        "Kueue itself never releases the evicted Workload's quota",
    )

    # 2. The owner (its pods gone) releases it: the preemptor is admitted, and
    # the evicted Workload is queued again, still Evicted.
    release(admin, q, "low")
    wait_for(lambda: admitted(admin, q, "high"), 30, "high Admitted once low was released")
    needed = f"insufficient unused quota for {GPU} in flavor {q.flavor}"
    low = wait_for(lambda: waiting(admin, q, "low", needed), 30, "low tried again, waiting")
    assert "admission" not in low["status"]
    assert is_true(low, "Evicted") and is_true(low, "Requeued"), low["status"]

    # 3. Room again: Kueue admits it by itself; Evicted and Preempted turn False.
    finish(admin, q, "high")
    wait_for(lambda: admitted(admin, q, "low"), 30, "low Admitted again once high finished")
    low = get(admin, q, "low")
    for kind in ("Evicted", "Preempted"):
        c = condition(low, kind)
        assert c and c["status"] == "False" and c["reason"] == "QuotaReserved", low["status"]
        assert c["message"].startswith("Previously: Preempted to accommodate a workload")
    assert is_true(low, "QuotaReserved") and low["status"]["admission"]


def test_a_workload_released_with_requeued_false_is_not_queued_again(
    admin: KubeClient, queues: Queues
) -> None:
    q = queues
    create(admin, q, "low", "low")
    wait_for(lambda: admitted(admin, q, "low"), 30, "low Admitted")
    create(admin, q, "high", "high")
    wait_for(lambda: is_true(get(admin, q, "low"), "Evicted"), 30, "low Evicted")
    create(admin, q, "later", "low")  # as low as "low", and younger: behind it in the queue

    release(admin, q, "low", requeue=False)
    wait_for(lambda: admitted(admin, q, "high"), 30, "high Admitted once low was released")
    finish(admin, q, "high")
    wait_for(lambda: admitted(admin, q, "later"), 30, "later Admitted, not low")
    low = get(admin, q, "low")
    reserved, evicted = condition(low, "QuotaReserved"), condition(low, "Evicted")
    # Never tried again: the message is still the one the owner wrote.
    assert reserved and evicted and reserved["status"] == "False", low["status"]
    assert reserved["message"] == evicted["message"]
    assert evicted["status"] == "True" and not is_true(low, "Admitted")
