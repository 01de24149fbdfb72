"""runPolicy.checkpoint (the T9k kinds that share RunPolicy, and GenericJob):
its bounds in the models and in the generated CRDs, and the kinds that do
not have it. status.checkpoint is the checkpoint integration's part
(tests/unit/reconcilers/test_checkpoint_part.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t9k_operator.api.genericjob import GenericRunPolicy
from t9k_operator.api.specs import RunPolicy
from t9k_operator.kinds.asks import CheckpointOnStop
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.registry import KINDS

ROOT = Path(__file__).resolve().parents[3]
WITH = {"pytorchtrainingjobs", "deepspeedjobs", "tensorflowtrainingjobs", "xgboosttrainingjobs"}
WITH |= {"genericjobs"}
WITHOUT = {"colossalaijobs", "mpijobs", "msjobs"}


@pytest.mark.parametrize("model", [RunPolicy, GenericRunPolicy])
@pytest.mark.parametrize("grace", [0, -5, 3601])
def test_grace_seconds_out_of_bounds_is_refused(model: Any, grace: int) -> None:
    with pytest.raises(ValidationError, match="graceSeconds"):
        model.model_validate({"checkpoint": {"graceSeconds": grace}})


@pytest.mark.parametrize("model", [RunPolicy, GenericRunPolicy])
def test_grace_seconds_is_required_within_the_field(model: Any) -> None:
    assert model.model_validate({}).checkpoint is None
    assert model.model_validate({"checkpoint": {"graceSeconds": 1}}).checkpoint.grace_seconds == 1
    with pytest.raises(ValidationError, match="graceSeconds"):
        model.model_validate({"checkpoint": {}})


def _schemas(plural: str) -> list[dict[str, Any]]:
    (path,) = (ROOT / "manifests" / "crds").glob(f"*_{plural}.yaml")
    crd = yaml.safe_load(path.read_text())
    return [v["schema"]["openAPIV3Schema"]["properties"] for v in crd["spec"]["versions"]]


@pytest.mark.parametrize("plural", sorted(WITH))
def test_the_crds_bound_grace_seconds_at_admission(plural: str) -> None:
    for schema in _schemas(plural):
        policy = schema["spec"]["properties"]["runPolicy"]["properties"]["checkpoint"]
        grace = policy["properties"]["graceSeconds"]
        assert (grace["minimum"], grace["maximum"]) == (1, 3600)
        assert policy["required"] == ["graceSeconds"]


@pytest.mark.parametrize("plural", sorted(WITHOUT))
def test_kinds_with_a_run_policy_of_their_own_do_not_take_the_field(plural: str) -> None:
    for schema in _schemas(plural):
        policy = schema["spec"]["properties"]["runPolicy"]["properties"]
        assert "checkpoint" not in policy


def test_the_view_asks_for_it_only_when_set() -> None:
    (kind,) = [k for k in KINDS if k.crd.plural == "pytorchtrainingjobs"]
    body: dict[str, Any] = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": {
            "replicaSpecs": [
                {
                    "type": "master",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "pytorch", "image": "i"}]}},
                }
            ]
        },
    }
    assert read(kind, body).view.ask(CheckpointOnStop) is None
    body["spec"]["runPolicy"] = {"checkpoint": {"graceSeconds": 90}}
    assert read(kind, body).view.ask(CheckpointOnStop) == CheckpointOnStop(90)
