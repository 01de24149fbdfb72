"""Gang scheduling in the apply path, for every kind and both backends, with the
fake at the kube/ boundary: the PodGroup comes before the pods, the pods join
it, it follows the spec, and it goes when the job finishes or pauses; without a
gang scheduler a job that asks for one is told (and held, if so configured)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from t9k_operator.builders import scheduling
from t9k_operator.integrations.gang import build as gang
from t9k_operator.integrations.gang.integration import GangScheduling
from tests.kinds import kind_table
from tests.unit.reconcilers.test_job_reconciler import JOBS, KINDS, Harness

MIN_MEMBER: dict[str, int] = kind_table("GANG_MIN_MEMBER")
"""kind -> its PodGroup's minMember (its ``GANG_MIN_MEMBER``)."""
VOLCANO = GangScheduling(gang.backend("volcano"))
COSCHEDULING = GangScheduling(gang.backend("coscheduling", "my-coscheduler"))
GROUP = "j-uid-1"
"""The PodGroup of job ``j`` (uid ``uid-1``): its name and the start of its uid."""


def asking(kind: str, queue: str = "research", priority: int = 50) -> dict[str, Any]:
    """The kind's job, asking for gang scheduling in ``queue`` with ``priority``."""
    job = copy.deepcopy(JOBS[kind][1])
    if kind == "MSJob":
        policy = {"queue": queue, "priorityClass": f"t9k-priority-{priority}"}
        job["spec"]["runPolicy"] = {"schedulingPolicy": policy}
    else:
        job["spec"]["scheduler"] = {"t9kScheduler": {"queue": queue, "priority": priority}}
    return job


def group_of(h: Harness) -> dict[str, Any]:
    (group,) = h.fake.of_kind("PodGroup")
    return group


def set_pods(h: Harness, phase: str) -> None:
    for (kind, _, _), obj in h.fake.objects.items():
        if kind == "Pod":
            obj["status"] = {"phase": phase}
    h.sync()


@pytest.mark.parametrize("backend", gang.BACKENDS)
@pytest.mark.parametrize("kind", KINDS)
def test_the_group_comes_before_the_pods_and_the_pods_join_it(kind: str, backend: str) -> None:
    """Every gang scheduler the operator knows, its pods' scheduler named by the flag."""
    config = GangScheduling(gang.backend(backend, f"my-{backend}"))
    h = Harness(kind, asking(kind), gang=config)
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    be = config.backend
    assert be is not None
    group = group_of(h)
    assert group["apiVersion"] == be.api_version and group["metadata"]["name"] == GROUP
    assert group["spec"]["minMember"] == MIN_MEMBER[kind]
    assert group["metadata"]["ownerReferences"][0]["kind"] == kind
    assert be.scheduler_name == f"my-{backend}"
    if be.queues:
        assert group["spec"]["queue"] == "research"
    else:
        assert "queue" not in group["spec"]
    if be.priority_in_group:
        assert group["spec"]["priorityClassName"] == "t9k-priority-50"
    else:
        assert "priorityClassName" not in group["spec"]
    creates = [(k, n) for verb, k, n in h.fake.writes if verb == "create"]
    assert creates.index(("PodGroup", GROUP)) < min(
        i for i, (k, _) in enumerate(creates) if k == "Pod"
    )
    for pod in h.fake.of_kind("Pod"):
        assert pod["spec"]["schedulerName"] == be.scheduler_name
        where = "labels" if be.member_in_labels else "annotations"
        assert pod["metadata"][where][be.member_key] == GROUP
        assert pod["spec"]["priorityClassName"] == "t9k-priority-50"
    warned = "QueueNotSupported" in h.recorder.reasons()
    assert warned == (not be.queues), "coscheduling has no queues: the job is told"


@pytest.mark.parametrize("kind", KINDS)
def test_a_finished_job_holds_no_group(kind: str) -> None:
    h = Harness(kind, gang=VOLCANO)
    h.run()
    assert group_of(h)["spec"]["queue"] == "default", "Volcano's default queue, named"
    set_pods(h, "Succeeded")
    h.run()
    assert h.job()["status"]["phase"] == "Succeeded"
    assert h.fake.of_kind("PodGroup") == []
    assert h.job()["status"]["podGroup"]["name"] == GROUP


def test_pause_deletes_the_group_and_resume_makes_it_again() -> None:
    h = Harness("PyTorchTrainingJob", gang=VOLCANO)
    h.run()
    first_uid = group_of(h)["metadata"]["uid"]
    job = h.job()
    job["spec"]["runMode"] = {"pause": {"enabled": True}}
    h.fake.put(h.reconciler.resource, job)
    h.sync()
    h.run()
    assert h.job()["status"]["phase"] == "Paused"
    assert h.pod_names() == [] and h.fake.of_kind("PodGroup") == []
    job = h.job()
    job["spec"]["runMode"] = {"pause": {"enabled": False}}
    h.fake.put(h.reconciler.resource, job)
    h.sync()
    h.run()
    assert group_of(h)["metadata"]["uid"] != first_uid
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]


def test_the_group_follows_the_elastic_minimum() -> None:
    job = copy.deepcopy(JOBS["PyTorchTrainingJob"][1])
    job["spec"]["torchrunConfig"] = {"enabled": True}
    job["spec"]["elastic"] = {
        "enabled": True,
        "minReplicas": 2,
        "maxReplicas": 4,
        "expectedReplicas": 3,
    }
    h = Harness("PyTorchTrainingJob", job, gang=VOLCANO)
    h.run()
    assert len(h.pod_names()) == 3 and group_of(h)["spec"]["minMember"] == 2
    stored = h.job()
    stored["spec"]["elastic"]["minReplicas"] = 3
    h.fake.put(h.reconciler.resource, stored)
    h.sync()
    h.run()
    assert group_of(h)["spec"]["minMember"] == 3


def test_a_waiting_group_shows_in_the_job_status() -> None:
    h = Harness("DeepSpeedJob", asking("DeepSpeedJob"), gang=VOLCANO)
    h.run()
    group = h.fake.objects[("PodGroup", "ns", GROUP)]
    group["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": "2/2 tasks in gang unschedulable: pod group is not ready",
            }
        ],
    }
    h.sync()
    h.run()
    status = h.job()["status"]
    assert status["phase"] == "Pending"
    assert status["podGroup"]["phase"] == "Pending"
    assert status["podGroup"]["queue"] == "research"
    running = next(c for c in status["conditions"] if c["type"] == "Running")
    assert running["reason"] == "WaitingForGangScheduler"
    assert "2/2 tasks in gang unschedulable" in running["message"]
    assert h.recorder.reasons().count("WaitingForGangScheduler") == 1


@pytest.mark.parametrize("kind", KINDS)
def test_without_a_gang_scheduler_a_job_that_asks_for_one_is_told_and_runs(kind: str) -> None:
    h = Harness(kind, asking(kind))
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    assert h.recorder.reasons().count("GangSchedulerUnavailable") == 1
    for pod in h.fake.of_kind("Pod"):
        assert "schedulerName" not in pod["spec"]
    plain = Harness(kind)
    plain.run()
    assert "GangSchedulerUnavailable" not in plain.recorder.reasons()


@pytest.mark.parametrize("kind", KINDS)
def test_held_without_a_gang_scheduler(kind: str) -> None:
    h = Harness(kind, asking(kind), gang=GangScheduling(hold=True))
    h.run()
    assert h.pod_names() == []
    status = h.job()["status"]
    assert status["phase"] == "Pending"
    engine_conditions = status.get("t9kConditions") or status["conditions"]  # MSJob: Kubeflow's
    init = next(c for c in engine_conditions if c["type"] == "Initialized")
    assert init["reason"] == "GangSchedulerUnavailable"
    assert "--gang-unavailable=hold" in init["message"]
    assert h.recorder.reasons().count("GangSchedulerUnavailable") == 1
    plain = Harness(kind, gang=GangScheduling(hold=True))
    plain.run()
    assert plain.pod_names() == JOBS[kind][2], "a job that does not ask is not held"


def test_msjob_scheduling_policy_sets_the_group() -> None:
    job = asking("MSJob")
    job["spec"]["runPolicy"]["schedulingPolicy"].update(
        minAvailable=2, scheduleTimeoutSeconds=600, minResources={"nvidia.com/gpu": 16}
    )
    h = Harness("MSJob", job, gang=COSCHEDULING)
    h.run()
    spec = group_of(h)["spec"]
    assert spec == {
        "minMember": 2,
        "minResources": {"nvidia.com/gpu": 16},
        "scheduleTimeoutSeconds": 600,
    }
    h = Harness("MSJob", job, gang=VOLCANO)
    h.run()
    spec = group_of(h)["spec"]
    assert (spec["minMember"], spec["queue"], spec["priorityClassName"]) == (
        2,
        "research",
        "t9k-priority-50",
    )


def test_a_group_is_named_after_its_job_and_uid_within_a_label_value() -> None:
    """Same-named jobs (two namespaces, or one recreated) never share a group
    name: Coscheduling's controller counts a group's pods by label in every
    namespace. The name is a label value, so at most 63 characters."""
    uid_a, uid_b = "0f1e2d3c-aaaa-bbbb-cccc-000000000001", "9a8b7c6d-aaaa-bbbb-cccc-000000000001"
    assert scheduling.group_name("train", uid_a) == "train-0f1e2d3c"
    assert scheduling.group_name("train", uid_a) != scheduling.group_name("train", uid_b)
    long = "a" * 63
    assert len(scheduling.group_name(long, uid_a)) == 63
    assert scheduling.group_name(long, uid_a).endswith("-0f1e2d3c")
