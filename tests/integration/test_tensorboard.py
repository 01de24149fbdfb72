"""TensorBoards on the local cluster, the operator as its ServiceAccount: one on
its own, and a T9k job's (status.tensorboard becoming ready, the TensorBoard
outliving the job's run and going with the job); a missing claim leaves it
Unschedulable (the real scheduler's word) with a Warning and never fails the
job; admission refuses what is not served.

Claims: the local cluster has no storage provisioner, so a test that needs a
bound claim provides a statically bound PV and PVC, as an administrator would
(``jobs.provide_claims``); a claim that does not exist is left for the
scheduler to find out. The KWOK nodes run no containers: a pod "runs" as
hack/third_party/kwok/stages.yaml says, and the TensorBoard's pod (restartPolicy Always)
keeps running as under a kubelet. What TensorBoard itself does with the pod is
tested in test_tensorboard_program.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from t9k_operator.api import tensorboard as api
from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.kube import Invalid, KubeClient, NotFound, Resource
from t9k_operator.resources import PODS, SERVICES
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs, provide_claims, pytorch_job
from tests.integration.test_deepspeed_job import DEEPSPEED, ds_job
from tests.kinds import KIND_NAMES, kind_entry, kind_resource, kind_table, per_kind, spec_fields

IMAGE = "tensorflow/tensorflow:2.14.0"


def provide(jobs: Jobs, *claims: str) -> None:
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    provide_claims(jobs, {"spec": {"volumes": volumes}})


def tensorboard(name: str, *filesets: str) -> dict[str, Any]:
    return {
        "apiVersion": "tensorstack.dev/v1beta1",
        "kind": "TensorBoard",
        "metadata": {"name": name},
        "spec": {"image": IMAGE, "trainingLogFilesets": list(filesets)},
    }


def tb_status(admin: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    try:
        return dict(admin.get(TENSORBOARDS, name, namespace).get("status") or {})
    except NotFound:
        return {}


def ready_condition(status: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), {})


def wait_ready(
    admin: KubeClient, namespace: str, name: str, status: str, timeout: float = 30
) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        cond = ready_condition(tb_status(admin, namespace, name))
        return cond if cond.get("status") == status else None

    try:
        found: dict[str, Any] = wait_for(reached, timeout, f"TensorBoard {name} Ready={status}")
        return found
    except AssertionError as exc:
        raise AssertionError(f"{exc}; status is {tb_status(admin, namespace, name)}") from None


# -- on its own -----------------------------------------------------------------------


@pytest.mark.usefixtures("operator")
def test_a_tensorboard_on_its_own_serves_and_says_how_to_reach_it(
    admin: KubeClient, cluster: Cluster, namespace: str
) -> None:
    jobs = Jobs(admin, namespace)
    provide(jobs, "logs", "yolov5")
    admin.create(
        TENSORBOARDS,
        tensorboard("mnist", "t9k://pvc/logs/mnist", "t9k://pvc/yolov5/yolov5_pytorch/run/train/"),
        namespace,
    )
    cond = wait_ready(admin, namespace, "mnist", "True")
    assert cond["reason"] == "Ready"
    status = tb_status(admin, namespace, "mnist")
    forward = f"kubectl -n {namespace} port-forward service/mnist-tensorboard 6006:6006"
    assert status["portForward"] == forward
    assert [r["name"] for r in status["runs"]] == ["logs/mnist", "yolov5/yolov5_pytorch/run/train"]
    pod = admin.get(PODS, "mnist-tensorboard", namespace)
    assert [
        v["persistentVolumeClaim"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v
    ] == [
        {"claimName": "logs", "readOnly": True},
        {"claimName": "yolov5", "readOnly": True},
    ]
    svc = admin.get(SERVICES, "mnist-tensorboard", namespace)
    assert svc["spec"]["ports"][0]["port"] == 6006
    assert svc["spec"]["selector"] == pod["metadata"]["labels"]
    # kubectl get shows whether it serves and how to reach it.
    table = cluster.kubectl("get", "tensorboards", "-n", namespace).stdout
    assert "PORT-FORWARD" in table and forward in table and "True" in table
    assert "mnist" in cluster.kubectl("get", "tb", "-n", namespace).stdout
    # A server: its pod keeps running past the KWOK stages' 3 s of a job's pod.
    time.sleep(5)
    assert admin.get(PODS, "mnist-tensorboard", namespace)["status"]["phase"] == "Running"
    assert ready_condition(tb_status(admin, namespace, "mnist"))["status"] == "True"


@pytest.mark.usefixtures("operator")
def test_a_missing_claim_leaves_it_unschedulable_with_a_warning(
    admin: KubeClient, namespace: str
) -> None:
    admin.create(TENSORBOARDS, tensorboard("lost", "t9k://pvc/nowhere/logs"), namespace)
    cond = wait_ready(admin, namespace, "lost", "False")

    def unschedulable() -> dict[str, Any] | None:
        c = ready_condition(tb_status(admin, namespace, "lost"))
        return c if c.get("reason") == "Unschedulable" else None

    cond = wait_for(unschedulable, 30, "the scheduler's word on the missing claim")
    assert 'persistentvolumeclaim "nowhere" not found' in cond["message"], cond
    jobs = Jobs(admin, namespace)
    event = jobs.wait_event("lost", "Unschedulable")
    assert event[0] == "Warning" and "nowhere" in event[2]


# -- a job's ------------------------------------------------------------------------------

SPEC = {"image": IMAGE, "trainingLogFilesets": ["t9k://pvc/training/yolov5_pytorch/run/train/"]}


TENSORBOARD_KINDS = [kind for kind in KIND_NAMES if "tensorboardSpec" in spec_fields(kind)]
JOBS: dict[str, Callable[..., dict[str, Any]]] = kind_table("tensorboard_job")
"""kind with a tensorboardSpec -> a job of it named `name`, with one worker that
runs to its end, and the given spec fields (its ``tensorboard_job`` in
tests/kinds/<kind>.py)."""


def test_every_kind_with_a_tensorboard_spec_has_a_job() -> None:
    per_kind(JOBS, f"{__name__}.JOBS", TENSORBOARD_KINDS)


def job_of(kind: str, name: str, **spec: Any) -> tuple[dict[str, Any], Resource]:
    make = kind_entry(JOBS, f"{__name__}.JOBS", kind)
    return make(name, **spec), kind_resource(kind)


@pytest.mark.usefixtures("operator")
@pytest.mark.parametrize("kind", TENSORBOARD_KINDS)
def test_a_jobs_tensorboard_becomes_ready_outlives_the_run_and_goes_with_the_job(
    admin: KubeClient, namespace: str, kind: str
) -> None:
    body, resource = job_of(kind, "train", tensorboardSpec=SPEC)
    jobs = Jobs(admin, namespace, resource)
    provide(jobs, "training")
    jobs.create(body)

    def ready() -> dict[str, Any] | None:
        seen = jobs.status("train").get("tensorboard") or {}
        return seen if seen.get("ready") else None

    seen = wait_for(ready, 60, "status.tensorboard ready")
    tb = admin.get(TENSORBOARDS, "train", namespace)
    assert seen == {
        "action": "NOP",
        "dependent": {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "name": "train",
            "namespace": namespace,
            "uid": tb["metadata"]["uid"],
        },
        "note": "TensorBoard [train] is ready",
        "ready": True,
        "reason": "DependentReady",
        "type": "Normal",
    }
    (owner,) = tb["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == (kind, "train", True)
    assert tb["spec"] == SPEC
    # Its pod is the TensorBoard's, not one of the job's replicas (nor in its selector).
    assert "train-tensorboard" not in jobs.pods("train")
    assert (
        admin.get(PODS, "train-tensorboard", namespace)["metadata"]["ownerReferences"][0]["uid"]
        == tb["metadata"]["uid"]
    )
    # The job runs to its end; the TensorBoard stays, ready, to read its results.
    jobs.wait_phase("train", "Succeeded", timeout=60)
    time.sleep(2)
    assert ready_condition(tb_status(admin, namespace, "train"))["status"] == "True"
    assert jobs.status("train")["tensorboard"]["ready"] is True
    assert "FieldNotActedOn" not in [e[1] for e in jobs.events("train")]
    # Deleting the job deletes it (garbage collection through its ownerReference).
    admin.delete(jobs.resource, "train", namespace)

    def gone() -> bool:
        try:
            admin.get(TENSORBOARDS, "train", namespace)
        except NotFound:
            return True
        return False

    wait_for(gone, 60, "the job's TensorBoard to go with it")


@pytest.mark.usefixtures("operator")
def test_a_tensorboard_that_cannot_start_never_fails_the_job(
    admin: KubeClient, namespace: str
) -> None:
    spec = {"image": IMAGE, "trainingLogFilesets": ["t9k://pvc/missing/logs"]}
    jobs = Jobs(admin, namespace, DEEPSPEED)
    jobs.create(ds_job("lonely", 1, manual=False, tensorboardSpec=spec))
    status = jobs.wait_phase("lonely", "Succeeded", timeout=60)

    def warned() -> dict[str, Any] | None:
        seen = jobs.status("lonely").get("tensorboard") or {}
        return seen if seen.get("type") == "Warning" else None

    seen = wait_for(warned, 30, "status.tensorboard to say why it is not ready")
    assert seen["ready"] is False and seen["reason"] == "DependentNotReady"
    assert 'persistentvolumeclaim "missing" not found' in seen["note"]
    event = jobs.wait_event("lonely", "TensorBoardNotReady")
    assert event[0] == "Warning" and "missing" in event[2]
    assert status["phase"] == "Succeeded"
    failed = next(c for c in jobs.status("lonely")["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "False"


# -- admission ----------------------------------------------------------------------------


@pytest.mark.usefixtures("crds_installed")
@pytest.mark.parametrize(
    ("fileset", "message"),
    [
        ("s3://bucket/logs", api.MSG_FILESET_FORM),
        ("/data/logs", api.MSG_FILESET_FORM),
        ("t9k://pvc/logs/a,b", api.MSG_FILESET_COMMA),
        ("t9k://pvc/logs/../etc", api.MSG_FILESET_PARENT),
    ],
)
def test_admission_refuses_a_fileset_not_served_saying_which_form_is(
    admin: KubeClient, namespace: str, fileset: str, message: str
) -> None:
    with pytest.raises(Invalid) as refused:
        admin.create(TENSORBOARDS, tensorboard("bad", fileset), namespace)
    assert message in refused.value.message
    assert "spec.trainingLogFilesets[0]" in refused.value.message
    if message == api.MSG_FILESET_FORM:
        assert api.MSG_CLAIM_TOO_LONG not in refused.value.message, (
            "one message, the one that helps"
        )
    with pytest.raises(Invalid) as refused_job:
        Jobs(admin, namespace).create(
            pytorch_job(
                "bad", [("worker", 1, "Never")], tensorboardSpec=tensorboard("x", fileset)["spec"]
            )
        )
    assert message in refused_job.value.message
    assert "spec.tensorboardSpec.trainingLogFilesets[0]" in refused_job.value.message


@pytest.mark.usefixtures("crds_installed")
def test_admission_refuses_duplicates_and_names_too_long_for_the_service(
    admin: KubeClient, namespace: str
) -> None:
    with pytest.raises(Invalid, match="Duplicate value"):
        admin.create(TENSORBOARDS, tensorboard("dup", "t9k://pvc/a/x", "t9k://pvc/a/x"), namespace)
    long = "a" * (api.MAX_NAME + 1)
    with pytest.raises(Invalid) as refused:
        admin.create(TENSORBOARDS, tensorboard(long, "t9k://pvc/a/x"), namespace)
    assert api.MSG_NAME_LENGTH in refused.value.message
    with pytest.raises(Invalid) as refused_job:
        Jobs(admin, namespace).create(
            pytorch_job(long, [("worker", 1, "Never")], tensorboardSpec=SPEC)
        )
    assert api.MSG_JOB_NAME_LENGTH in refused_job.value.message
    # Without a TensorBoard that name is fine (the pods' names still fit).
    Jobs(admin, namespace).create(pytorch_job(long, [("worker", 1, "Never")]))


@pytest.mark.usefixtures("crds_installed")
def test_kubectl_explain_describes_it(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "tensorboards.spec.trainingLogFilesets").stdout
    assert "t9k://pvc/<claim>/<path>" in out and "read-only" in out
    out = cluster.kubectl("explain", "deepspeedjobs.spec.tensorboardSpec").stdout
    assert "status.tensorboard" in out and "not acted on" not in out
    out = cluster.kubectl("explain", "pytorchtrainingjobs.status.tensorboard.reason").stdout
    assert "DependentReady" in out
