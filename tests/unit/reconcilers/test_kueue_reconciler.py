"""Kueue in the apply path, for every kind, with the fake at the kube/ boundary:
a queued job gets a Workload and no pod until Kueue admits it; admitted, it
runs; evicted, it stops without a restart counted, gives its reservation back
once its pods are gone, and runs again when readmitted; finishing or pausing
deletes the Workload. Kueue's side (admitting, evicting) is played by writing
the Workload's status the way Kueue writes it (v0.12 and v0.17 alike, as
tests/integration/test_kueue.py checks against v0.17)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from t9k_operator.integrations.gang import build as gang
from t9k_operator.integrations.gang.integration import GangScheduling
from t9k_operator.integrations.kueue.integration import (
    POD_PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    Kueue,
)
from tests.kinds import kind_table
from tests.unit.reconcilers.test_job_reconciler import JOBS, KINDS, Harness

KUEUE = Kueue()
WORKLOAD = "j-uid-1"
"""The Workload of job ``j`` (uid ``uid-1``): named like its PodGroup."""
POD_SETS: dict[str, dict[str, int]] = kind_table("KUEUE_POD_SETS")
"""kind -> the Workload's pod sets: name -> count (its ``KUEUE_POD_SETS``)."""
GPUS = {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}


def queued(kind: str, queue: str = "team-a", priority: int | None = None) -> dict[str, Any]:
    """The kind's job in LocalQueue ``queue``, named the kind's own way."""
    job = copy.deepcopy(JOBS[kind][1])
    if kind == "MSJob":
        policy: dict[str, Any] = {"queue": queue}
        if priority is not None:
            policy["priorityClass"] = f"t9k-priority-{priority}"  # as docs/scheduling.md names it
        job["spec"]["runPolicy"] = {"schedulingPolicy": policy}
    else:
        t9k: dict[str, Any] = {"queue": queue}
        if priority is not None:
            t9k["priority"] = priority
        job["spec"]["scheduler"] = {"t9kScheduler": t9k}
    return job


def workload(h: Harness) -> dict[str, Any]:
    (found,) = h.fake.of_kind("Workload")
    return found


def kueue_sets(h: Harness, status: dict[str, Any]) -> None:
    """Kueue writes the Workload's status."""
    h.fake.objects[("Workload", "ns", WORKLOAD)]["status"] = status
    h.sync()


def cond(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


ADMITTED = {
    "admission": {"clusterQueue": "cluster-a", "podSetAssignments": []},
    "conditions": [
        cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cluster-a"),
        cond("Admitted", "True", "Admitted", "The workload is admitted"),
    ],
}
PENDING = {
    "conditions": [
        cond(
            "QuotaReserved",
            "False",
            "Pending",
            "couldn't assign flavors to pod set worker: insufficient unused quota for "
            "nvidia.com/gpu in flavor default, 16 more needed",
        )
    ]
}
EVICTED = {
    **ADMITTED,
    "conditions": [
        *ADMITTED["conditions"],
        cond("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: x)"),
        cond("Preempted", "True", "InClusterQueue", "Preempted to accommodate a workload"),
    ],
}


def running(h: Harness) -> None:
    pods = [obj for (kind, _, _), obj in h.fake.objects.items() if kind == "Pod"]
    assert pods, "no pod to run"
    for obj in pods:
        obj["status"] = {"phase": "Running"}
    h.sync()


def set_paused(h: Harness, paused: bool) -> None:
    """The user pauses (or resumes) the job, and the operator takes it in."""
    job = h.job()
    job["spec"]["runMode"] = {"pause": {"enabled": paused}}
    h.fake.put(h.reconciler.resource, job)
    h.sync()
    h.run()


def engine_condition(h: Harness, type_: str) -> dict[str, Any]:
    status = h.job()["status"]
    conditions = status.get("t9kConditions") or status["conditions"]
    found: dict[str, Any] = next(c for c in conditions if c["type"] == type_)
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_a_queued_job_waits_without_pods_until_admitted(kind: str) -> None:
    h = Harness(kind, queued(kind), kueue=KUEUE)
    h.run()
    assert h.pod_names() == []
    wl = workload(h)
    assert wl["spec"]["queueName"] == "team-a"
    assert {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]} == POD_SETS[kind]
    assert wl["metadata"]["ownerReferences"][0]["kind"] == kind
    status = h.job()["status"]
    assert status["phase"] == "Pending" and "startTime" not in status
    assert status["workload"] == {"name": WORKLOAD, "queue": "team-a", "admitted": False}
    kueue_sets(h, PENDING)
    h.run()
    running_cond = engine_condition(h, "Running")
    assert running_cond["reason"] == "WaitingForAdmission"
    assert "16 more needed" in running_cond["message"] and "team-a" in running_cond["message"]
    assert "16 more needed" in h.job()["status"]["workload"]["message"]
    assert h.recorder.reasons().count("WaitingForAdmission") == 1, "one Event, not one a pass"
    kueue_sets(h, ADMITTED)
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    status = h.job()["status"]
    assert status["workload"]["admitted"] is True
    assert status["workload"]["clusterQueue"] == "cluster-a"
    assert "startTime" in status, "the deadline counts from the admission"


def test_the_pod_set_template_carries_what_costs_quota() -> None:
    job = queued("PyTorchTrainingJob")
    spec = job["spec"]["replicaSpecs"][0]["template"]["spec"]
    spec["containers"][0]["resources"] = GPUS
    spec["nodeSelector"] = {"gpu": "a100"}
    spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    h = Harness("PyTorchTrainingJob", job, kueue=KUEUE)
    h.run()
    (ps,) = workload(h)["spec"]["podSets"]
    template = ps["template"]["spec"]
    assert template["containers"][0]["resources"] == GPUS
    assert template["nodeSelector"] == {"gpu": "a100"}
    assert template["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert set(template["containers"][0]) <= {"name", "image", "resources"}


def test_a_job_names_its_queue_with_kueues_label_too() -> None:
    job = copy.deepcopy(JOBS["DeepSpeedJob"][1])
    job["metadata"] = {"labels": {"kueue.x-k8s.io/queue-name": "team-b"}}
    h = Harness("DeepSpeedJob", job, kueue=KUEUE)
    h.run()
    assert workload(h)["spec"]["queueName"] == "team-b" and h.pod_names() == []


def test_a_job_that_names_no_queue_runs_at_once() -> None:
    h = Harness("PyTorchTrainingJob", kueue=KUEUE)
    h.run()
    assert h.fake.of_kind("Workload") == [] and h.pod_names() == JOBS["PyTorchTrainingJob"][2]
    assert "workload" not in h.job()["status"]


@pytest.mark.parametrize("kind", KINDS)
def test_an_evicted_job_stops_gives_its_quota_back_and_runs_again(kind: str) -> None:
    h = Harness(kind, queued(kind), kueue=KUEUE)
    h.run()
    kueue_sets(h, ADMITTED)
    h.run()
    running(h)
    h.run()
    assert h.job()["status"]["phase"] == "Running"
    kueue_sets(h, EVICTED)
    h.reconcile()
    h.sync()
    assert h.pod_names() == [], "stopped the way pause stops it"
    assert "admission" in workload(h)["status"], "not given back while its pods were there"
    h.run()
    status = workload(h)["status"]
    assert "admission" not in status
    reserved = next(c for c in status["conditions"] if c["type"] == "QuotaReserved")
    assert reserved["status"] == "False" and "Preempted" in reserved["message"]
    assert next(c for c in status["conditions"] if c["type"] == "Admitted")["status"] == "False"
    job_status = h.job()["status"]
    assert job_status["phase"] == "Pending" and job_status["restartCount"] == 0
    assert engine_condition(h, "Running")["reason"] == "EvictedByKueue"
    assert "EvictedByKueue" in h.recorder.reasons()
    kueue_sets(h, ADMITTED)  # readmitted
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    assert h.job()["status"]["restartCount"] == 0


@pytest.mark.parametrize("kind", KINDS)
def test_finishing_gives_the_quota_back(kind: str) -> None:
    h = Harness(kind, queued(kind), kueue=KUEUE)
    h.run()
    kueue_sets(h, ADMITTED)
    h.run()
    pods = [obj for (k, _, _), obj in h.fake.objects.items() if k == "Pod"]
    assert len(pods) == sum(POD_SETS[kind].values())
    for obj in pods:
        obj["status"] = {"phase": "Succeeded"}
    h.sync()
    h.run()
    assert h.job()["status"]["phase"] == "Succeeded"
    assert h.fake.of_kind("Workload") == []


def test_pausing_gives_the_quota_back_and_resuming_queues_again() -> None:
    h = Harness("PyTorchTrainingJob", queued("PyTorchTrainingJob"), kueue=KUEUE)
    h.run()
    kueue_sets(h, ADMITTED)
    h.run()
    set_paused(h, True)
    assert h.job()["status"]["phase"] == "Paused"
    assert h.fake.of_kind("Workload") == [] and h.pod_names() == []
    set_paused(h, False)
    assert workload(h).get("status") is None, "a new Workload, waiting"
    assert h.pod_names() == []


def test_a_changed_size_queues_the_job_again_at_its_new_size() -> None:
    h = Harness("DeepSpeedJob", queued("DeepSpeedJob"), kueue=KUEUE)
    h.run()
    kueue_sets(h, ADMITTED)
    h.run()
    assert len(h.pod_names()) == 2
    job = h.job()
    job["spec"]["worker"]["replicas"] = 3
    h.fake.put(h.reconciler.resource, job)
    h.sync()
    h.run()
    assert h.pod_names() == []
    assert {ps["name"]: ps["count"] for ps in workload(h)["spec"]["podSets"]} == {"worker": 3}


def test_priority_names_a_workload_priority_class_else_a_priority_class() -> None:
    h = Harness("PyTorchTrainingJob", queued("PyTorchTrainingJob", priority=50), kueue=KUEUE)
    h.fake.put(WORKLOAD_PRIORITY_CLASSES, {"metadata": {"name": "t9k-priority-50"}, "value": 50})
    h.run()
    spec = workload(h)["spec"]
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "t9k-priority-50",
    }
    assert spec["priority"] == 50

    h = Harness("MSJob", queued("MSJob", priority=70), kueue=KUEUE)
    h.fake.put(POD_PRIORITY_CLASSES, {"metadata": {"name": "t9k-priority-70"}, "value": 70})
    h.run()
    spec = workload(h)["spec"]
    assert spec["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "t9k-priority-70",
    }
    assert spec["priority"] == 70


def test_a_job_naming_no_priority_gets_a_workload_of_priority_0() -> None:
    # As Kueue's own job integrations write it: its visibility API (pending
    # workloads' positions) reads every pending Workload's priority.
    h = Harness("PyTorchTrainingJob", queued("PyTorchTrainingJob"), kueue=KUEUE)
    h.run()
    spec = workload(h)["spec"]
    assert spec["priority"] == 0 and "priorityClassRef" not in spec


def test_a_priority_class_that_does_not_exist_is_said_and_waited_for() -> None:
    h = Harness("PyTorchTrainingJob", queued("PyTorchTrainingJob", priority=5), kueue=KUEUE)
    assert h.reconcile().requeue, "retried with backoff"
    h.sync()
    assert h.fake.of_kind("Workload") == [] and h.pod_names() == []
    initialized = engine_condition(h, "Initialized")
    assert initialized["reason"] == "FailedCreate"
    assert "t9k-priority-5" in initialized["message"]
    assert h.job()["status"]["phase"] == "Pending"
    assert "FailedCreate" in h.recorder.reasons()
    h.fake.put(POD_PRIORITY_CLASSES, {"metadata": {"name": "t9k-priority-5"}, "value": 5})
    h.run()
    assert workload(h)["spec"]["priority"] == 5


def test_with_a_gang_scheduler_kueue_takes_the_queue_and_the_group_places_the_pods() -> None:
    volcano = GangScheduling(gang.backend("volcano"))
    h = Harness("DeepSpeedJob", queued("DeepSpeedJob"), gang=volcano, kueue=KUEUE)
    h.run()
    (group,) = h.fake.of_kind("PodGroup")
    assert group["spec"]["queue"] == gang.DEFAULT_QUEUE, "quota is Kueue's, not Volcano's"
    assert workload(h)["spec"]["queueName"] == "team-a"
    assert h.pod_names() == []
    assert "QueueNotSupported" not in h.recorder.reasons()
    kueue_sets(h, ADMITTED)
    h.run()
    pods = h.fake.of_kind("Pod")
    assert pods, "admitted, the job has pods"
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == WORKLOAD


def test_admitted_pods_go_to_their_flavors_nodes() -> None:
    h = Harness("MSJob", queued("MSJob"), kueue=KUEUE)
    h.fake.put(
        RESOURCE_FLAVORS,
        {
            "metadata": {"name": "a100"},
            "spec": {
                "nodeLabels": {"gpu.model": "a100"},
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            },
        },
    )
    h.run()
    admitted = copy.deepcopy(ADMITTED)
    admitted["admission"]["podSetAssignments"] = [
        {"name": "worker", "flavors": {"nvidia.com/gpu": "a100"}, "count": 2},
        {"name": "scheduler", "flavors": {}, "count": 1},
    ]
    kueue_sets(h, admitted)
    h.run()
    pods = {p["metadata"]["name"]: p["spec"] for p in h.fake.of_kind("Pod")}
    for name in ("j-worker-0", "j-worker-1"):
        assert pods[name]["nodeSelector"]["gpu.model"] == "a100"
        assert {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"} in pods[name][
            "tolerations"
        ]
    assert "gpu.model" not in (pods["j-scheduler-0"].get("nodeSelector") or {})


def test_without_a_gang_scheduler_kueue_serves_the_queue_and_nothing_holds_the_job() -> None:
    hold = GangScheduling(hold=True)
    h = Harness("PyTorchTrainingJob", queued("PyTorchTrainingJob"), gang=hold, kueue=KUEUE)
    h.run()
    kueue_sets(h, ADMITTED)
    h.run()
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]
    assert "GangSchedulerUnavailable" not in h.recorder.reasons()


@pytest.mark.parametrize("kind", KINDS)
def test_the_reconcile_path_reads_priorities_and_flavors_from_the_caches(kind: str) -> None:
    """A queued job with a priority, admitted to a flavor, starts without one
    read from the API server: the WorkloadPriorityClass, the PriorityClass and
    the ResourceFlavor come from informers, as every other read does."""
    h = Harness(kind, queued(kind, priority=50), kueue=KUEUE)
    h.fake.put(POD_PRIORITY_CLASSES, {"metadata": {"name": "t9k-priority-50"}, "value": 50})
    h.fake.put(
        RESOURCE_FLAVORS, {"metadata": {"name": "a100"}, "spec": {"nodeLabels": {"gpu": "a100"}}}
    )
    h.run()
    assert workload(h)["spec"]["priority"] == 50
    admitted = copy.deepcopy(ADMITTED)
    admitted["admission"]["podSetAssignments"] = [
        {"name": name, "flavors": {"cpu": "a100"}, "count": count}
        for name, count in POD_SETS[kind].items()
    ]
    kueue_sets(h, admitted)
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    assert all(p["spec"]["nodeSelector"]["gpu"] == "a100" for p in h.fake.of_kind("Pod"))
    assert h.fake.reads == [], "no GET on the reconcile path"


def test_a_pause_that_waits_for_checkpoints_keeps_the_quota_until_the_pods_go() -> None:
    job = queued("PyTorchTrainingJob")
    job["spec"]["runPolicy"] = {"checkpoint": {"graceSeconds": 600}}
    h = Harness("PyTorchTrainingJob", job, kueue=KUEUE)
    h.run()
    kueue_sets(h, ADMITTED)
    h.run()
    for obj in [obj for (k, _, _), obj in h.fake.objects.items() if k == "Pod"]:
        obj["status"] = {"phase": "Running"}
    h.sync()
    h.run()
    job = h.job()
    job["spec"]["runMode"] = {"pause": {"enabled": True}}
    h.fake.put(h.reconciler.resource, job)
    h.sync()
    h.run()
    status = h.job()["status"]
    assert status["checkpoint"]["reason"] == "Paused" and status["phase"] == "Running"
    assert len(h.fake.of_kind("Workload")) == 1 and h.pod_names() != []
