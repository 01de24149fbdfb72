"""spec.logDir (T9k's 2025 layout) beside the older trainingLogFilesets: the
models take either layout, never both or neither, exactly one source kind,
and the 2025 fields (suspend, scheduler) on a TensorBoard and on a job's
tensorboardSpec alike. Each rule's CEL and Python side are compared in
test_rules.py; the API server applies them in the integration tests."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api import pytorch
from t9k_operator.api import tensorboard as tb
from t9k_operator.api import tensorboard_logdir as logdir
from tests.unit.api.helpers import committed_crd, schema_of

PVC = {"pvc": [{"name": "tutorial", "subPath": ["train/logs"]}]}
S3 = {"s3": {"secretRef": {"name": "my-s3-env"}, "uri": ["s3://folder/"]}}
HTTP = {"http": {"url": ["https://files.example/run/events.out.tfevents.1"]}}


@pytest.mark.parametrize("source", [PVC, S3, HTTP], ids=["pvc", "s3", "http"])
def test_each_source_kind_alone_is_a_tensorboard(source: dict[str, Any]) -> None:
    spec = tb.TensorBoardSpec.model_validate({"logDir": source})
    assert spec.log_dir is not None and spec.training_log_filesets is None
    assert spec.model_dump(by_alias=True, exclude_unset=True) == {"logDir": source}


@pytest.mark.parametrize(
    "log_dir", [{}, PVC | S3, S3 | HTTP, PVC | S3 | HTTP], ids=["none", "pvc+s3", "s3+http", "all"]
)
def test_logdir_takes_exactly_one_source_kind(log_dir: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=re.escape(logdir.MSG_ONE_SOURCE)):
        tb.TensorBoardSpec.model_validate({"logDir": log_dir})


@pytest.mark.parametrize(
    "spec",
    [{}, {"logDir": PVC, "trainingLogFilesets": ["t9k://pvc/tutorial/train/logs"]}],
    ids=["neither", "both"],
)
def test_a_tensorboard_says_where_its_logs_are_in_exactly_one_layout(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=re.escape(tb.MSG_ONE_LAYOUT)):
        tb.TensorBoardSpec.model_validate(spec)


@pytest.mark.parametrize(
    ("log_dir", "message"),
    [
        ({"pvc": [{"name": "t", "subPath": ["a/../.."]}]}, logdir.MSG_PARENT),
        ({"pvc": [{"name": "t", "subPath": ["a,b"]}]}, logdir.MSG_COMMA),
        ({"pvc": [{"name": "My_Claim"}]}, logdir.MSG_NAME),
        ({"s3": {"secretRef": {"name": "s"}, "uri": ["folder/logs"]}}, logdir.MSG_S3_URI),
        ({"s3": {"secretRef": {"name": "s"}, "uri": ["s3://bucket/a,b"]}}, logdir.MSG_COMMA),
        ({"s3": {"secretRef": {"name": "S"}, "uri": ["s3://bucket/"]}}, logdir.MSG_NAME),
        ({"http": {"url": ["s3://bucket/x"]}}, logdir.MSG_HTTP_URL),
        ({"http": {"url": ["http://host"]}}, logdir.MSG_HTTP_URL),
    ],
)
def test_a_bad_place_is_refused_saying_why(log_dir: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        tb.TensorBoardSpec.model_validate({"logDir": log_dir})


def test_a_source_kind_needs_its_places() -> None:
    for empty in ({"pvc": []}, {"s3": {"secretRef": {"name": "s"}, "uri": []}}, {"http": {}}):
        with pytest.raises(ValidationError):
            tb.TensorBoardSpec.model_validate({"logDir": empty})
    with pytest.raises(ValidationError, match="secretRef"):
        tb.TensorBoardSpec.model_validate({"logDir": {"s3": {"uri": ["s3://bucket/"]}}})


def test_suspend_and_the_scheduler_are_read() -> None:
    spec = tb.TensorBoardSpec.model_validate(
        {"logDir": PVC, "suspend": True, "scheduler": {"t9kScheduler": {"queue": "default"}}}
    )
    assert spec.suspend is True
    assert spec.scheduler is not None and spec.scheduler.t9k_scheduler is not None
    assert spec.scheduler.t9k_scheduler.queue == "default"
    assert tb.TensorBoardSpec.model_validate({"logDir": PVC}).suspend is False


def test_a_jobs_tensorboard_spec_is_the_same_type() -> None:
    raw = {"logDir": S3, "suspend": True, "image": "t9k/tensorboard:s3"}
    job = pytorch.PyTorchTrainingJobObject.model_validate(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "PyTorchTrainingJob",
            "metadata": {"name": "train", "namespace": "demo"},
            "spec": {
                "tensorboardSpec": raw,
                "replicaSpecs": [
                    {"type": "worker", "template": {"spec": {"containers": [{"name": "w"}]}}}
                ],
            },
        }
    )
    assert job.spec.tensorboard_spec == tb.TensorBoardSpec.model_validate(raw)
    crd = schema_of(committed_crd(pytorch.CRD))["properties"]["spec"]["properties"]
    own = schema_of(committed_crd(tb.CRD))["properties"]["spec"]
    assert crd["tensorboardSpec"]["properties"] == own["properties"]
    assert crd["tensorboardSpec"]["x-kubernetes-validations"] == own["x-kubernetes-validations"]


def test_the_crd_has_both_layouts_and_the_2025_fields() -> None:
    spec = schema_of(committed_crd(tb.CRD))["properties"]["spec"]
    assert set(spec["properties"]) == {
        "logDir",
        "trainingLogFilesets",
        "image",
        "suspend",
        "scheduler",
        "resources",
    }
    log_dir = spec["properties"]["logDir"]["properties"]
    assert set(log_dir) == {"pvc", "s3", "http"}
    assert set(log_dir["pvc"]["items"]["properties"]) == {"name", "subPath"}
    assert set(log_dir["s3"]["properties"]) == {"secretRef", "uri"}
    assert set(log_dir["http"]["properties"]) == {"url"}
    assert "required" not in spec, "either layout: the rule, not required, says which"
    assert "default" not in spec["properties"]["suspend"], "unset is false; nothing is added"
