"""The workdir integration through the apply path, for every kind: a job
whose workdir ConfigMap is missing gets no pod and says why; once it exists,
every pod gets the unpacked tree at /t9k/workdir; it fails, naming the
annotation, when the ConfigMap never comes or cannot serve."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from t9k_operator import registry
from t9k_operator.__main__ import parse_args
from t9k_operator.builders.common import job_labels
from t9k_operator.integrations.gang.integration import GangScheduling
from t9k_operator.integrations.tensorboard.integration import JobTensorBoard
from t9k_operator.integrations.workdir.integration import Workdir
from t9k_operator.objects import format_time
from t9k_operator.reconcilers.pipeline.job import CHILD_WAIT
from t9k_operator.resources import CONFIGMAPS
from tests.kinds import KIND_NAMES
from tests.unit.reconcilers.test_job_reconciler import JOBS, NS, Harness

ANNOTATION = "batch.tensorstack.dev/workdir"


def harness(kind: str, annotation: str = "j-workdir", age: float = 0.0) -> Harness:
    h = Harness(kind, integrations=(GangScheduling(), JobTensorBoard(), Workdir(600.0)))
    job = h.job()
    created = datetime.now(UTC) - timedelta(seconds=age)
    job["metadata"]["annotations"] = {ANNOTATION: annotation}
    job["metadata"]["creationTimestamp"] = format_time(created)
    h.fake.put(h.reconciler.resource, job)
    h.sync()
    return h


def put_config_map(h: Harness, kind: str, data: dict[str, Any] | None = None) -> None:
    uid = h.job()["metadata"]["uid"]
    h.fake.put(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "j-workdir",
                "namespace": NS,
                "labels": job_labels(kind, "j"),
                "ownerReferences": [{"kind": kind, "name": "j", "uid": uid, "controller": True}],
            },
            "binaryData": data
            if data is not None
            else {"workdir.tar.gz": base64.b64encode(b"x").decode()},
        },
    )


def conditions(h: Harness) -> dict[str, Any]:
    status = h.job()["status"]
    return {c["type"]: c for c in status.get("t9kConditions") or status["conditions"]}


def test_the_integration_is_on_by_default() -> None:
    assert Workdir in [type(i) for i in registry.configure(parse_args([]))]


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_pods_wait_for_the_config_map_then_each_gets_the_workdir(kind: str) -> None:
    h = harness(kind)
    h.run()
    assert h.pod_names() == [], "no pod before its workdir exists"
    initialized = conditions(h)["Initialized"]
    assert initialized["reason"] == "WaitingForWorkdir"
    assert initialized["message"] == (
        f"waiting for ConfigMap j-workdir, the job's workdir (annotation {ANNOTATION})"
    )
    assert h.job()["status"]["phase"] not in ("Failed", "Succeeded")
    assert "FailedCreate" not in h.recorder.reasons(), "a young job waits without a warning"
    assert h.reconcile().requeue_after == CHILD_WAIT, "and looks again shortly"

    put_config_map(h, kind)
    h.sync()
    h.run()
    assert h.pod_names() == JOBS[kind][2]
    for pod in h.fake.of_kind("Pod"):
        spec = pod["spec"]
        assert spec["initContainers"][0]["name"] == "t9k-workdir"
        assert {"name": "t9k-workdir-archive", "configMap": {"name": "j-workdir"}} in spec[
            "volumes"
        ]
        for c in spec["containers"]:
            assert {"name": "t9k-workdir", "mountPath": "/t9k/workdir"} in c["volumeMounts"]
            assert c.get("workingDir") == "/t9k/workdir", (kind, c)


def test_a_workdir_late_is_warned_about_and_retried_with_backoff() -> None:
    h = harness("PyTorchTrainingJob", age=30)
    h.run()
    assert h.pod_names() == []
    initialized = conditions(h)["Initialized"]
    assert initialized["reason"] == "FailedCreate"
    assert initialized["message"] == (
        "waiting to create its pods (ConfigMap j-workdir: the job's workdir "
        f"(annotation {ANNOTATION}) does not exist yet); retrying"
    )
    assert "FailedCreate" in h.recorder.reasons()
    result = h.reconcile()
    assert result.requeue and result.requeue_after is None, "rate-limited, not every 0.5 s"
    put_config_map(h, "PyTorchTrainingJob")
    h.sync()
    h.run()
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]


@pytest.mark.parametrize("kind", ["PyTorchTrainingJob", "MSJob"])
def test_a_workdir_that_never_comes_fails_the_job_naming_the_annotation(kind: str) -> None:
    h = harness(kind, age=601)
    h.run()
    assert h.pod_names() == []
    status = h.job()["status"]
    assert status["phase"] == "Failed"
    failed = next(c for c in conditions(h).values() if c.get("reason") == "WorkdirMissing")
    assert "ConfigMap j-workdir" in failed["message"] and ANNOTATION in failed["message"]
    assert "did not appear within the job's pod start timeout" in failed["message"]


def test_a_running_job_whose_config_map_went_keeps_its_pods() -> None:
    h = harness("PyTorchTrainingJob", age=601)
    put_config_map(h, "PyTorchTrainingJob")
    h.sync()
    h.run()
    for (k, _, _), obj in h.fake.objects.items():
        if k == "Pod":
            obj["status"] = {"phase": "Running"}
    h.sync()
    h.run()
    assert h.job()["status"]["phase"] == "Running"
    del h.fake.objects[("ConfigMap", NS, "j-workdir")]
    h.sync()
    h.run()
    assert h.job()["status"]["phase"] == "Running"
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]


def test_a_config_map_without_the_archive_fails_the_job() -> None:
    h = harness("PyTorchTrainingJob")
    put_config_map(h, "PyTorchTrainingJob", data={})
    h.sync()
    h.run()
    assert h.pod_names() == []
    assert h.job()["status"]["phase"] == "Failed"
    assert "has no binaryData key workdir.tar.gz" in conditions(h)["Failed"]["message"]


def test_an_annotation_that_names_no_config_map_fails_the_job() -> None:
    h = harness("GenericJob", annotation="Not_A Name")
    h.run()
    assert h.job()["status"]["phase"] == "Failed"
    message = conditions(h)["Failed"]["message"]
    assert f"the annotation {ANNOTATION} is 'Not_A Name', not the name of a ConfigMap" in message


def test_a_job_without_the_annotation_is_untouched() -> None:
    h = Harness("PyTorchTrainingJob", integrations=(GangScheduling(), Workdir()))
    h.run()
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]
    assert all(
        "t9k-workdir" not in str(p["spec"].get("initContainers")) for p in h.fake.of_kind("Pod")
    )
