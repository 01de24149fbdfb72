"""A T9k job's TensorBoard in the apply path, for the three T9k kinds, with the fake
at the kube/ boundary: created with the job and owned by it, reflected in
status.tensorboard, kept while paused and after the job finished, kept equal to
tensorboardSpec and deleted with the field; a TensorBoard that cannot be had
never fails the job."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.kube import Forbidden, ServerError
from t9k_operator.runtime.controller import Result
from tests.unit.reconcilers.test_job_reconciler import JOBS, NS, Harness

T9K_KINDS = ["ColossalAIJob", "DeepSpeedJob", "PyTorchTrainingJob"]
SPEC = {"image": "tensorflow/tensorflow:2.14.0", "trainingLogFilesets": ["t9k://pvc/logs/j"]}


def with_tensorboard(kind: str, **spec: Any) -> dict[str, Any]:
    job = copy.deepcopy(JOBS[kind][1])
    job["spec"]["tensorboardSpec"] = copy.deepcopy(SPEC)
    job["spec"].update(spec)
    return job


def tensorboards(h: Harness) -> list[dict[str, Any]]:
    return h.fake.of_kind("TensorBoard")


def serve(h: Harness, ready: bool = True, reason: str = "Ready", message: str = "") -> None:
    """The TensorBoard's controller reports on it (tested on its own elsewhere)."""
    tb = h.fake.objects[("TensorBoard", NS, "j")]
    condition = {"type": "Ready", "status": "True" if ready else "False", "reason": reason}
    tb["status"] = {"conditions": [{**condition, "message": message}]}
    h.sync()


def set_pods(h: Harness, phase: str) -> None:
    for (kind, _, _), obj in h.fake.objects.items():
        if kind == "Pod":
            obj["status"] = {"phase": phase}
    h.sync()


@pytest.mark.parametrize("kind", T9K_KINDS)
def test_the_job_owns_its_tensorboard_and_reports_it_as_the_seed_shows(kind: str) -> None:
    h = Harness(kind, with_tensorboard(kind))
    h.reconcile()
    assert h.job()["status"]["tensorboard"]["action"] == "Create"
    assert h.job()["status"]["tensorboard"]["reason"] == "DependentCreating"
    h.run()
    (tb,) = tensorboards(h)
    job = h.job()
    assert tb["metadata"]["name"] == "j" and tb["spec"] == SPEC
    (owner,) = tb["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        kind,
        job["metadata"]["uid"],
        True,
    )
    assert h.pod_names() == JOBS[kind][2], "its pods are the job's own, as without it"
    serve(h)
    h.run()
    assert h.job()["status"]["tensorboard"] == {
        "action": "NOP",
        "dependent": {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "name": "j",
            "namespace": NS,
            "uid": tb["metadata"]["uid"],
        },
        "note": "TensorBoard [j] is ready",
        "ready": True,
        "reason": "DependentReady",
        "type": "Normal",
    }
    assert "TensorBoardReady" in h.recorder.reasons()
    assert "FieldNotActedOn" not in h.recorder.reasons()


@pytest.mark.parametrize("kind", T9K_KINDS)
def test_it_is_kept_after_the_job_has_finished(kind: str) -> None:
    h = Harness(kind, with_tensorboard(kind, runPolicy={"cleanUpPolicy": "All"}))
    h.run()
    serve(h)
    set_pods(h, "Succeeded")
    h.run()
    assert h.job()["status"]["phase"] == "Succeeded"
    assert [tb["metadata"]["name"] for tb in tensorboards(h)] == ["j"]
    assert h.job()["status"]["tensorboard"]["ready"] is True
    # Deleted by hand after the job finished: it comes back, as long as the job asks.
    del h.fake.objects[("TensorBoard", NS, "j")]
    h.sync()
    h.run()
    assert [tb["metadata"]["name"] for tb in tensorboards(h)] == ["j"]


@pytest.mark.parametrize("kind", T9K_KINDS)
def test_it_keeps_running_while_the_job_is_paused(kind: str) -> None:
    h = Harness(kind, with_tensorboard(kind))
    h.run()
    serve(h)
    job = h.fake.objects[(h.kind.crd.kind, NS, "j")]
    job["spec"]["runMode"] = {"pause": {"enabled": True}}
    h.sync()
    h.run()
    assert h.job()["status"]["phase"] == "Paused" and h.pod_names() == []
    assert len(tensorboards(h)) == 1
    assert h.job()["status"]["tensorboard"]["ready"] is True
    paused_from_the_start = Harness(
        kind, with_tensorboard(kind, runMode={"pause": {"enabled": True}})
    )
    paused_from_the_start.run()
    assert len(tensorboards(paused_from_the_start)) == 1


def test_it_follows_the_spec_and_goes_with_the_field() -> None:
    h = Harness("PyTorchTrainingJob", with_tensorboard("PyTorchTrainingJob"))
    h.run()
    job = h.fake.objects[("PyTorchTrainingJob", NS, "j")]
    job["spec"]["tensorboardSpec"]["image"] = "tensorflow/tensorflow:2.15.0"
    h.sync()
    h.reconcile()
    assert h.job()["status"]["tensorboard"]["action"] == "Update"
    (tb,) = tensorboards(h)
    assert tb["spec"]["image"] == "tensorflow/tensorflow:2.15.0"
    h.sync()
    h.run()
    assert h.job()["status"]["tensorboard"]["action"] == "NOP"
    del job["spec"]["tensorboardSpec"]
    h.sync()
    h.run()
    assert tensorboards(h) == []
    assert "tensorboard" not in h.job()["status"]


def test_a_tensorboard_in_trouble_warns_once_and_never_fails_the_job() -> None:
    h = Harness("PyTorchTrainingJob", with_tensorboard("PyTorchTrainingJob"))
    h.run()
    serve(h, False, "Unschedulable", 'persistentvolumeclaim "logs" not found')
    h.run()
    status = h.job()["status"]
    assert status["tensorboard"]["type"] == "Warning"
    assert status["tensorboard"]["ready"] is False
    assert 'persistentvolumeclaim "logs" not found' in status["tensorboard"]["note"]
    assert h.recorder.reasons().count("TensorBoardNotReady") == 1
    set_pods(h, "Running")
    h.run()
    assert h.job()["status"]["phase"] == "Running"


def test_a_name_held_by_a_users_tensorboard_is_reported_not_taken() -> None:
    h = Harness("PyTorchTrainingJob", with_tensorboard("PyTorchTrainingJob"))
    theirs = {
        "apiVersion": "tensorstack.dev/v1beta1",
        "kind": "TensorBoard",
        "metadata": {"name": "j", "namespace": NS},
        "spec": {"image": "theirs", "trainingLogFilesets": ["t9k://pvc/other"]},
    }
    h.fake.put(TENSORBOARDS, theirs)
    h.sync()
    h.run()
    status = h.job()["status"]
    assert status["tensorboard"]["reason"] == "DependentFailed"
    assert "already exists and belongs to nothing" in status["tensorboard"]["note"]
    assert h.fake.get(TENSORBOARDS, "j", NS)["spec"]["image"] == "theirs", "left alone"
    assert (
        status["phase"] in ("Pending", "Running") and h.pod_names() == JOBS["PyTorchTrainingJob"][2]
    )


def test_a_refused_tensorboard_is_reported_and_retried_when_that_may_cure_it() -> None:
    h = Harness("PyTorchTrainingJob", with_tensorboard("PyTorchTrainingJob"))
    h.fake.fail_next("create", "TensorBoard", ServerError("etcd is slow"))
    assert h.reconcile() == Result(requeue=True)
    h.sync()
    assert h.reconcile() == Result(requeue=True)  # the next pass tells it, and retries
    note = h.job()["status"]["tensorboard"]["note"]
    assert "etcd is slow" in note and "retrying" in note
    h.sync()
    h.run()
    assert len(tensorboards(h)) == 1
    h2 = Harness("PyTorchTrainingJob", with_tensorboard("PyTorchTrainingJob"))
    h2.fake.fail_next("create", "TensorBoard", Forbidden("denied the request: no tensorboards"))
    assert h2.reconcile() == Result(requeue=True)
    h2.sync()
    assert h2.reconcile() == Result()  # the next pass tells it; retrying cannot help
    assert h2.job()["status"]["tensorboard"]["type"] == "Warning"
    assert h2.pod_names() == JOBS["PyTorchTrainingJob"][2], "the job trains all the same"


def test_the_msjob_never_gets_one() -> None:
    h = Harness("MSJob")
    h.run()
    assert tensorboards(h) == [] and "tensorboard" not in h.job()["status"]
