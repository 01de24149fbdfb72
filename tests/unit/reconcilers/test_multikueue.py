"""MultiKueue in the apply path, for every kind, with the fake at the kube/
boundary. On the manager, a job whose spec.managedBy hands it to MultiKueue
gets its Workload and nothing else: no pod, Service, ConfigMap or Secret, no
status write and no Event, whatever Kueue says of the Workload; its
Workload goes once the status MultiKueue copies from the worker says it
ended, or when it is paused; one that names no queue, or meets an operator
without --kueue, fails naming spec.managedBy. On a worker, the job
MultiKueue created waits for the Workload MultiKueue made for it, takes it
as its own (never creating or deleting one), runs once it is admitted and
marks it Finished at the end. Kueue's and MultiKueue's sides are played by
writing the objects the way they write them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from t9k_operator.resources import WORKLOADS
from t9k_operator.runtime.wiring import Owns, _ToOwner
from tests.unit.reconcilers.test_job_reconciler import JOBS, KINDS, Harness
from tests.unit.reconcilers.test_kueue_reconciler import (
    ADMITTED,
    EVICTED,
    KUEUE,
    POD_SETS,
    WORKLOAD,
    cond,
    kueue_sets,
    queued,
    set_paused,
    workload,
)

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
PREBUILT = "j-uid-7-on-manager"
"""The name MultiKueue gives the worker's Workload (the manager's Workload's)."""


def handed(kind: str, queue: bool = True) -> dict[str, Any]:
    job = queued(kind) if queue else copy.deepcopy(JOBS[kind][1])
    job["spec"]["managedBy"] = MULTIKUEUE
    return job


def no_children(h: Harness) -> None:
    for kind in ("Pod", "Service", "ConfigMap", "Secret"):
        assert h.fake.of_kind(kind) == [], kind


@pytest.mark.parametrize("kind", KINDS)
def test_the_manager_keeps_the_workload_and_nothing_else(kind: str) -> None:
    h = Harness(kind, handed(kind), kueue=KUEUE)
    h.run()
    wl = workload(h)
    assert {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]} == POD_SETS[kind]
    assert wl["spec"]["queueName"] == "team-a"
    assert wl["metadata"]["ownerReferences"][0]["kind"] == kind
    # MultiKueue admits it on the manager once a worker has admitted its copy.
    h.fake.objects[("Workload", "ns", WORKLOAD)]["status"] = ADMITTED
    h.sync()
    h.run()
    no_children(h)
    assert "status" not in h.job()
    assert h.fake.writes == [("create", "Workload", WORKLOAD)]
    assert h.recorder.reasons() == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_status_the_worker_reports_ends_it_on_the_manager(kind: str) -> None:
    h = Harness(kind, handed(kind), kueue=KUEUE)
    h.run()
    h.fake.objects[("Workload", "ns", WORKLOAD)]["status"] = ADMITTED
    mirrored = {"phase": "Running"}
    h.fake.objects[(kind, "ns", "j")]["status"] = mirrored
    h.sync()
    h.run()
    assert len(h.fake.of_kind("Workload")) == 1, "a running job keeps its Workload"
    mirrored = {"phase": "Succeeded"}
    h.fake.objects[(kind, "ns", "j")]["status"] = mirrored
    h.sync()
    h.run()
    assert h.fake.of_kind("Workload") == []
    assert h.job()["status"] == {"phase": "Succeeded"}, "the mirrored status is left as it is"
    assert [w for w in h.fake.writes if w[0] != "delete"] == [("create", "Workload", WORKLOAD)]
    no_children(h)


def test_pausing_on_the_manager_takes_the_workload_back() -> None:
    kind = "PyTorchTrainingJob"
    h = Harness(kind, handed(kind), kueue=KUEUE)
    h.run()
    set_paused(h, True)
    assert h.fake.of_kind("Workload") == []
    set_paused(h, False)
    assert len(h.fake.of_kind("Workload")) == 1, "resumed: dispatched again"
    assert "status" not in h.job()
    no_children(h)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("kueue_on", [True, False], ids=["no-queue", "no-kueue"])
def test_a_handed_over_job_nothing_takes_fails_naming_the_field(kind: str, kueue_on: bool) -> None:
    job = handed(kind, queue=not kueue_on)
    h = Harness(kind, job, kueue=KUEUE if kueue_on else None)
    h.run()
    status = h.job()["status"]
    assert status["phase"] == "Failed"
    conditions = status.get("t9kConditions") or status["conditions"]
    failed = next(c for c in conditions if c["type"] == "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.managedBy: kueue.x-k8s.io/multikueue" in failed["message"]
    assert "kueue.x-k8s.io/queue-name" in failed["message"]
    assert h.fake.of_kind("Workload") == [] and h.pod_names() == []


def dispatched(kind: str) -> dict[str, Any]:
    """The job as MultiKueue creates it on a worker: managedBy gone, two labels on."""
    job = queued(kind)
    job["metadata"] = {
        "labels": {
            "kueue.x-k8s.io/prebuilt-workload-name": PREBUILT,
            "kueue.x-k8s.io/multikueue-origin": "manager",
        }
    }
    return job


def prebuilt_workload(kind: str) -> dict[str, Any]:
    """The Workload MultiKueue creates on the worker: the manager's, without owners."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": PREBUILT,
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/multikueue-origin": "manager"},
        },
        "spec": {
            "queueName": "team-a",
            "podSets": [{"name": n, "count": c} for n, c in POD_SETS[kind].items()],
        },
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_worker_runs_the_job_in_the_workload_multikueue_made(kind: str) -> None:
    h = Harness(kind, dispatched(kind), kueue=KUEUE)
    h.run()
    assert h.fake.of_kind("Workload") == [] and h.pod_names() == []
    told = " ".join(e.message for e in h.recorder.events)
    assert "MultiKueue has not created it on this cluster yet" in told
    h.fake.put(WORKLOADS, prebuilt_workload(kind))
    h.sync()
    h.run()
    (wl,) = h.fake.of_kind("Workload")
    uid = h.job()["metadata"]["uid"]
    owners = [
        (r["kind"], r["name"], r["uid"], r["controller"]) for r in wl["metadata"]["ownerReferences"]
    ]
    assert owners == [(kind, "j", uid, True)]
    assert h.pod_names() == []
    h.fake.objects[("Workload", "ns", PREBUILT)]["status"] = ADMITTED
    h.sync()
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    for key, obj in h.fake.objects.items():
        if key[0] == "Pod":
            obj["status"] = {"phase": "Succeeded"}
    h.sync()
    h.run()
    assert h.job()["status"]["phase"] == "Succeeded"
    (wl,) = h.fake.of_kind("Workload")
    finished = [c for c in wl["status"]["conditions"] if c["type"] == "Finished"]
    assert [(c["status"], c["reason"]) for c in finished] == [("True", "Succeeded")]
    assert not [w for w in h.fake.writes if w[1] == "Workload" and w[0] in ("create", "delete")]


class Enqueued:
    """Stands in for the controller: keeps what a handler enqueues."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def enqueue(self, key: str) -> None:
        self.keys.append(key)


def test_the_workload_multikueue_makes_wakes_the_job_that_waits_for_it() -> None:
    """It has no owner yet: the job is found by the operator's labels it carries
    (MultiKueue copies them from the manager's Workload); an owned child still
    goes to its owner alone, and a Workload naming another kind's job to none."""
    kind = "PyTorchTrainingJob"
    h = Harness(kind, dispatched(kind), kueue=KUEUE)
    made = prebuilt_workload(kind)
    made["metadata"]["labels"].update({"t9k.dev/job-kind": kind, "t9k.dev/job-name": "j"})
    foreign = copy.deepcopy(made)
    foreign["metadata"]["labels"]["t9k.dev/job-kind"] = "MSJob"
    owned = copy.deepcopy(made)
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": h.kind.crd.api_version,
            "kind": kind,
            "name": "k",
            "uid": "u",
            "controller": True,
        }
    ]
    queue = Enqueued()
    spec = Owns(h.reconciler.caches.informer(WORKLOADS), unowned=h.reconciler._named)
    handler = _ToOwner(queue, (h.kind.crd.group, kind), spec)  # type: ignore[arg-type]
    for obj in (made, foreign, owned):
        handler.changed(obj)
    assert queue.keys == ["ns/j", "ns/k"]


WORKER_ANNOTATION = "batch.tensorstack.dev/worker-cluster"
DISRUPTIONS_ANNOTATION = "batch.tensorstack.dev/dispatch-disruptions"
LOST = {
    # Kueue's eviction after MultiKueue's check turned Retry: clusterName emptied,
    # the check reset to Pending, the quota still reserved until the owner gives it back.
    **ADMITTED,
    "admissionChecks": [
        {
            "name": "multikueue",
            "state": "Pending",
            "message": "Reset to Pending after eviction. Previously: Retry",
            "retryCount": 1,
        }
    ],
    "conditions": [
        *ADMITTED["conditions"],
        cond("Evicted", "True", "AdmissionCheck", "At least one admission check is false"),
    ],
}


def admitted_on(cluster: str) -> Harness:
    """A handed-over job whose Workload a worker ``cluster`` admitted, as
    MultiKueue marks it on the manager."""
    kind = "PyTorchTrainingJob"
    h = Harness(kind, handed(kind), kueue=KUEUE)
    h.run()
    kueue_sets(h, {**ADMITTED, "clusterName": cluster})
    h.run()
    return h


def test_a_lost_worker_is_named_counted_and_the_job_dispatched_again() -> None:
    h = admitted_on("worker-2")
    annotations = workload(h)["metadata"]["annotations"]
    assert annotations == {WORKER_ANNOTATION: "worker-2"}, "the holder, remembered"
    assert h.recorder.reasons() == []
    kueue_sets(h, copy.deepcopy(LOST))
    h.reconcile()
    h.sync()
    wl = workload(h)
    assert wl["metadata"]["annotations"] == {DISRUPTIONS_ANNOTATION: "1"}
    assert "admission" in wl["status"], "counted before the quota goes back"
    assert h.recorder.reasons() == ["WorkerLost"]
    (told,) = [e.message for e in h.recorder.events]
    assert "Worker cluster worker-2 no longer holds the job" in told
    assert "disruption 1, not against backoffLimit" in told
    h.run()
    status = workload(h)["status"]
    assert "admission" not in status, "given back: Kueue queues it again"
    assert h.recorder.reasons() == ["WorkerLost"], "told once"
    # Dispatched again, to worker-1, and lost again: counted twice.
    kueue_sets(h, {**ADMITTED, "clusterName": "worker-1"})
    h.run()
    assert workload(h)["metadata"]["annotations"] == {
        DISRUPTIONS_ANNOTATION: "1",
        WORKER_ANNOTATION: "worker-1",
    }
    kueue_sets(h, copy.deepcopy(LOST))
    h.run()
    assert workload(h)["metadata"]["annotations"] == {DISRUPTIONS_ANNOTATION: "2"}
    assert "worker-1" in h.recorder.events[-1].message
    assert "status" not in h.job(), "the mirrored status is never written here"
    no_children(h)


def test_a_preemption_on_the_manager_is_no_lost_worker() -> None:
    h = admitted_on("worker-2")
    kueue_sets(h, copy.deepcopy(EVICTED))
    h.run()
    wl = workload(h)
    assert "admission" not in wl["status"], "given back at once"
    assert DISRUPTIONS_ANNOTATION not in wl["metadata"]["annotations"]
    assert h.recorder.reasons() == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_next_worker_starts_with_the_disruptions_counted_on_the_manager(kind: str) -> None:
    h = Harness(kind, dispatched(kind), kueue=KUEUE)
    made = prebuilt_workload(kind)
    made["metadata"]["annotations"] = {
        DISRUPTIONS_ANNOTATION: "1",
        WORKER_ANNOTATION: "worker-2",  # copied from the manager's: not this worker's
    }
    h.fake.put(WORKLOADS, made)
    h.run()
    assert h.job()["status"]["disruptionCount"] == 1
    h.fake.objects[("Workload", "ns", PREBUILT)]["status"] = ADMITTED
    h.sync()
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    status = h.job()["status"]
    assert status["disruptionCount"] == 1 and status.get("restartCount", 0) == 0
