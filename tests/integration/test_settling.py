"""Every job settles: a spec the operator cannot act on, or a pod the API
server refuses, ends in a condition and an Event naming the cause, never in a
silent retry loop; counts and durations too large for any cluster are refused
at admission."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from t9k_operator.kube import BadRequest, Invalid, KubeClient, NotFound, Resource
from t9k_operator.resources import NAMESPACES
from tests.integration.cluster import wait_for
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job
from tests.integration.test_deepspeed_job import DEEPSPEED, ds_job

pytestmark = pytest.mark.usefixtures("operator")

QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def failed_with(jobs: Jobs, name: str, reason: str, *texts: str) -> dict[str, Any]:
    status = jobs.wait_phase(name, "Failed", 30)
    cond = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert cond["reason"] == reason, cond
    for text in texts:
        assert text in cond["message"], cond["message"]
    event = jobs.wait_event(name, reason)
    assert event[0] == "Warning"
    for text in texts:
        assert text in event[2], event
    return status


# -- 1 and 4: bounds at admission ------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda j: j["spec"]["replicaSpecs"][0].update(replicas=9223372036854775807),
            "spec.replicaSpecs[0].replicas",
        ),
        (
            lambda j: j["spec"]["replicaSpecs"].extend(
                copy.deepcopy(j["spec"]["replicaSpecs"][0]) | {"type": f"t{i}", "replicas": 2000}
                for i in range(3)
            ),
            "spec.replicaSpecs",
        ),
        (
            lambda j: j["spec"].update(runPolicy={"activeDeadlineSeconds": 9223372036854775807}),
            "spec.runPolicy.activeDeadlineSeconds",
        ),
    ],
    ids=["replicas", "replicas-in-all", "deadline"],
)
def test_counts_and_durations_beyond_any_cluster_are_refused(
    jobs: Jobs, change: Any, field: str
) -> None:
    job = pytorch_job("big", [("worker", 1, "Never")])
    change(job)
    with pytest.raises(Invalid) as refusal:
        jobs.create(job)
    assert field in refusal.value.message, refusal.value.message


# -- 2: refusals of pod creates ----------------------------------------------------------


def test_a_pod_the_api_server_cannot_decode_fails_the_job_naming_the_replica(jobs: Jobs) -> None:
    """The Pod API cannot decode a probe's port beyond int32 (400), which the CRD
    lets through: the port is an int-or-string, a node that takes no bounds (and
    CEL on every such port would cost more of the rule budget than the case is
    worth). An integer typed int32 is refused at admission
    (test_a_template_of_the_wrong_shape_is_refused_naming_the_field), and so is a
    malformed quantity (test_fuzz_specs)."""
    job = pytorch_job("badport", [("worker", 1, "Never")])
    container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["livenessProbe"] = {"httpGet": {"port": 4294967296}}
    jobs.create(job)
    failed_with(
        jobs,
        "badport",
        "InvalidSpec",
        "replica worker-0",
        "cannot unmarshal number 4294967296",
    )


def test_pod_security_admission_refusal_fails_the_job_quoting_it(
    jobs: Jobs, admin: KubeClient, namespace: str
) -> None:
    admin.patch(
        NAMESPACES,
        namespace,
        {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
    )
    jobs.create(pytorch_job("psa", [("worker", 1, "Never")]))
    failed_with(jobs, "psa", "Forbidden", "replica worker-0", 'violates PodSecurity "restricted')


def test_exceeded_quota_keeps_the_job_pending_and_saying_why_until_it_passes(
    jobs: Jobs, admin: KubeClient, namespace: str
) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "nopods"},
        "spec": {"hard": {"pods": "0"}},
    }
    admin.create(QUOTAS, quota, namespace)
    wait_for(
        lambda: (admin.get(QUOTAS, "nopods", namespace).get("status") or {}).get("hard"),
        20,
        "the quota's status",
    )
    jobs.create(pytorch_job("quota", [("worker", 1, "Never")]))

    def waiting() -> dict[str, Any] | None:
        cond = jobs.condition("quota", "Initialized")
        return cond if cond and cond["reason"] == "FailedCreate" else None

    cond = wait_for(waiting, 30, "the Initialized condition saying what the job waits for")
    assert cond["status"] == "False"
    assert "exceeded quota: nopods" in cond["message"] and "replica worker-0" in cond["message"]
    assert jobs.status("quota")["phase"] == "Pending"
    assert "exceeded quota" in jobs.wait_event("quota", "FailedCreate")[2]
    admin.delete(QUOTAS, "nopods", namespace)
    jobs.wait_pods("quota", ["quota-worker-0"], timeout=60)
    wait_for(
        lambda: (jobs.condition("quota", "Initialized") or {}).get("status") == "True",
        30,
        "Initialized once the pod exists",
    )


# -- 3: shapes no pod can have ----------------------------------------------------------


@pytest.mark.parametrize(
    ("template_change", "field"),
    [
        (
            lambda t: t.setdefault("metadata", {}).update(labels=["a", "b"]),
            "spec.replicaSpecs[0].template.metadata.labels",
        ),
        (
            lambda t: t.setdefault("metadata", {}).update(annotations="x=y"),
            "spec.replicaSpecs[0].template.metadata.annotations",
        ),
        (
            lambda t: t["spec"]["containers"][0].update(ports="8080"),
            "spec.replicaSpecs[0].template.spec.containers[0].ports",
        ),
        (
            lambda t: t["spec"]["containers"][0].update(ports=[{"containerPort": 4294967296}]),
            "spec.replicaSpecs[0].template.spec.containers[0].ports[0].containerPort",
        ),
        (
            lambda t: t["spec"].update(activeDeadlineSeconds=2**63),
            "spec.replicaSpecs[0].template.spec.activeDeadlineSeconds",
        ),
    ],
    ids=["labels-list", "annotations-string", "ports-string", "port-beyond-int32", "beyond-int64"],
)
def test_a_template_of_the_wrong_shape_is_refused_naming_the_field(
    jobs: Jobs, template_change: Any, field: str
) -> None:
    """The pod template schema refuses it at admission (an object stored before
    that schema still meets the operator's own shape check: tests/unit/api). An
    integer the Pod API holds in an int32 is bounded to int32's range: the API
    server does not check a custom resource's integer format, and the pod could
    not be decoded (400) when made."""
    job = pytorch_job("shape", [("worker", 1, "Never")])
    template_change(job["spec"]["replicaSpecs"][0]["template"])
    with pytest.raises(Invalid) as refused:
        jobs.create(job)
    assert field in refused.value.message, refused.value.message


def test_integers_at_the_ends_of_their_range_are_accepted(jobs: Jobs) -> None:
    """The bounds are int32's own, and an int64 takes none: the API server reads a
    bound as a float64, and int64's maximum would become 2**63, compared with an
    integer as -2**63, refusing every value."""
    job = pytorch_job("ends", [("worker", 1, "Never")])
    template = job["spec"]["replicaSpecs"][0]["template"]
    template["spec"]["activeDeadlineSeconds"] = 2**63 - 1
    template["spec"]["terminationGracePeriodSeconds"] = -(2**63)
    template["spec"]["containers"][0]["ports"] = [
        {"containerPort": 2**31 - 1, "hostPort": -(2**31)}
    ]
    jobs.create(job)
    stored = jobs.get("ends")["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert stored["activeDeadlineSeconds"] == 2**63 - 1
    assert stored["containers"][0]["ports"][0]["containerPort"] == 2**31 - 1


# -- 5: two jobs of different kinds with one name ---------------------------------------


def test_a_name_clash_between_kinds_fails_the_second_job_naming_the_first(
    jobs: Jobs, admin: KubeClient, namespace: str
) -> None:
    jobs.create(pytorch_job("same", [("worker", 1, "Never")]))
    jobs.wait_pods("same", ["same-worker-0"])
    ds = Jobs(admin, namespace, DEEPSPEED)
    ds.create(ds_job("same", 1))
    failed_with(ds, "same", "NameConflict", "belongs to PyTorchTrainingJob same")
    assert jobs.status("same")["phase"] in ("Pending", "Running")


def test_a_field_stored_but_not_acted_on_is_said_in_a_warning(jobs: Jobs) -> None:
    job = pytorch_job("weighted", [("worker", 1, "Never")])
    job["spec"]["replicaSpecs"][0]["scalingWeight"] = 2
    jobs.create(job)
    event = jobs.wait_event("weighted", "FieldNotActedOn")
    assert event[0] == "Warning"
    assert event[2].startswith("spec.replicaSpecs[].scalingWeight: stored as")


def test_gang_scheduling_asked_of_an_operator_without_it_is_said_in_a_warning(
    jobs: Jobs,
) -> None:
    """The operator runs with --gang-scheduler=none (the default): the job runs
    with the default scheduler, and is told so (docs/scheduling.md)."""
    job = pytorch_job(
        "sched",
        [("worker", 1, "Never")],
        scheduler={"t9kScheduler": {"queue": "default", "priority": 50}},
    )
    jobs.create(job)
    event = jobs.wait_event("sched", "GangSchedulerUnavailable")
    assert event[0] == "Warning"
    assert event[2].startswith("spec.scheduler.t9kScheduler asks for gang scheduling")
    assert "runs with the default scheduler" in event[2]
    pods = jobs.wait_pods("sched", ["sched-worker-0"])
    assert "schedulerName" not in pods["sched-worker-0"]["spec"] or (
        pods["sched-worker-0"]["spec"]["schedulerName"] == "default-scheduler"
    )


def test_a_typo_in_a_template_is_refused_not_dropped(
    admin: KubeClient, namespace: str, jobs: Jobs
) -> None:
    """Refused at admission under strict field validation (kubectl's default); a
    client that asks for none gets the field pruned and a warning, as from any
    API, and the pods are made from what was stored."""
    job = pytorch_job("typo", [("worker", 1, "Never")])
    container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["comand"] = container.pop("command")
    with pytest.raises(BadRequest) as refused:
        admin.create(PYTORCH, job, namespace, field_validation="Strict")
    assert 'unknown field "spec.replicaSpecs[0].template.spec.containers[0].comand"' in (
        refused.value.message
    )
    with pytest.raises(NotFound):
        jobs.get("typo")


@pytest.mark.parametrize("run", [{}, {"python": []}, {"module": ""}], ids=["empty", "[]", "''"])
def test_an_empty_run_outside_debug_mode_fails_saying_a_script_is_needed(
    admin: KubeClient, namespace: str, run: dict[str, Any]
) -> None:
    """Admission lets an empty run through (a debug job may have one, and CEL
    cannot see the untyped command); the operator fails it, saying why."""
    ds = Jobs(admin, namespace, DEEPSPEED)
    ds.create(ds_job("norun", 1, config={"run": run}))
    failed_with(ds, "norun", "InvalidSpec", "spec.config.run needs what to train")
