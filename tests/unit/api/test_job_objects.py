"""What every kind's API model does, by one parametrised suite.

Each kind's examples stay in its own module (tests/unit/api/test_<kind>_models.py);
the behaviour every kind's ``JobObject`` shares is tested once here, for every
kind of the registry: the examples parse and round-trip with their pod
templates kept whole, status examples round-trip, unknown fields are ignored
(an operator meeting a newer object must not crash), the accessors read the
metadata, and the generated CRD is structural and described.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from t9k_operator.api import colossalai, deepspeed, genericjob, msjob, pytorch, tensorflow
from t9k_operator.api.crd import CrdInfo, JobObject
from t9k_operator.kinds.registry import crds
from tests.unit.api import test_colossalai_models as colossalai_tests
from tests.unit.api import test_deepspeed_models as deepspeed_tests
from tests.unit.api import test_genericjob_models as genericjob_tests
from tests.unit.api import test_msjob_models as msjob_tests
from tests.unit.api import test_pytorch_models as pytorch_tests
from tests.unit.api import test_tensorflow_models as tensorflow_tests
from tests.unit.api.helpers import (
    assert_described,
    assert_structural,
    committed_crd,
    is_subset,
    load,
    schema_of,
)


@dataclass(frozen=True)
class Kind:
    crd: CrdInfo
    model: type[JobObject[Any, Any]]
    status: type[Any]
    examples: dict[str, str]
    statuses: dict[str, str]
    job: str
    templates: Callable[[dict[str, Any]], list[Any]]  # a raw spec's pod templates


KINDS: dict[str, Kind] = {
    "PyTorchTrainingJob": Kind(
        pytorch.CRD,
        pytorch.PyTorchTrainingJobObject,
        pytorch.PyTorchTrainingJobStatus,
        pytorch_tests.SPEC_EXAMPLES,
        pytorch_tests.STATUS_EXAMPLES,
        "pytorch-example",
        lambda spec: [rs["template"] for rs in spec["replicaSpecs"]],
    ),
    "DeepSpeedJob": Kind(
        deepspeed.CRD,
        deepspeed.DeepSpeedJobObject,
        deepspeed.DeepSpeedJobStatus,
        deepspeed_tests.ALL_EXAMPLES,
        deepspeed_tests.STATUS_EXAMPLES,
        "deepspeed-example",
        lambda spec: [spec["worker"]["template"]],
    ),
    "ColossalAIJob": Kind(
        colossalai.CRD,
        colossalai.ColossalAIJobObject,
        colossalai.ColossalAIJobStatus,
        colossalai_tests.ALL_EXAMPLES,
        colossalai_tests.STATUS_EXAMPLES,
        colossalai_tests.JOB,
        lambda spec: [spec["worker"]["template"]],
    ),
    "MSJob": Kind(
        msjob.CRD,
        msjob.MSJobObject,
        msjob.MSJobStatus,
        msjob_tests.SPEC_EXAMPLES,
        msjob_tests.STATUS_EXAMPLES,
        msjob_tests.JOB,
        lambda spec: [rs["template"] for rs in spec["msReplicaSpecs"].values()],
    ),
    "GenericJob": Kind(
        genericjob.CRD,
        genericjob.GenericJobObject,
        genericjob.GenericJobStatus,
        genericjob_tests.SPEC_EXAMPLES,
        genericjob_tests.STATUS_EXAMPLES,
        genericjob_tests.JOB,
        lambda spec: [rs["template"] for rs in spec["replicaSpecs"]],
    ),
    "TensorFlowTrainingJob": Kind(
        tensorflow.CRD,
        tensorflow.TensorFlowTrainingJobObject,
        tensorflow.TensorFlowTrainingJobStatus,
        tensorflow_tests.SPEC_EXAMPLES,
        tensorflow_tests.STATUS_EXAMPLES,
        tensorflow_tests.JOB,
        lambda spec: [rs["template"] for rs in spec["replicaSpecs"]],
    ),
}
NAMES = [info.kind for info in crds()]


def test_every_registered_kind_is_here() -> None:
    assert sorted(KINDS) == sorted(NAMES)


def _examples() -> list[Any]:
    return [pytest.param(k, e, id=f"{k}-{e}") for k in NAMES for e in KINDS[k].examples]


def _statuses() -> list[Any]:
    return [pytest.param(k, e, id=f"{k}-{e}") for k in NAMES for e in KINDS[k].statuses]


@pytest.mark.parametrize(("kind", "example"), _examples())
def test_every_example_parses_and_round_trips(kind: str, example: str) -> None:
    k = KINDS[kind]
    raw = load(k.examples[example])
    parsed = k.model.from_dict(raw)
    assert parsed.kind == kind and parsed.name == k.job
    dumped = parsed.to_dict()
    assert is_subset(raw, dumped), dumped
    # Pod templates are kept whole, as written.
    assert k.templates(dumped["spec"]) == k.templates(raw["spec"])


@pytest.mark.parametrize(("kind", "example"), _statuses())
def test_every_status_example_parses_and_round_trips(kind: str, example: str) -> None:
    k = KINDS[kind]
    raw = load(k.statuses[example])
    status = k.status.model_validate(raw)
    assert is_subset(raw, status.model_dump(by_alias=True, exclude_none=True))


@pytest.mark.parametrize("kind", NAMES)
def test_unknown_fields_are_ignored(kind: str) -> None:
    k = KINDS[kind]
    raw = load(next(iter(k.examples.values())))
    raw["spec"]["someFutureField"] = {"a": 1}
    raw["status"] = {"somethingNew": 1}
    parsed = k.model.from_dict(raw)
    assert parsed.status is not None
    assert "someFutureField" not in parsed.to_dict()["spec"]


@pytest.mark.parametrize("kind", NAMES)
def test_object_accessors(kind: str) -> None:
    k = KINDS[kind]
    raw = load(next(iter(k.examples.values())))
    raw["metadata"].update(namespace="demo", uid="u-1", generation=4)
    parsed = k.model.from_dict(raw)
    assert (parsed.name, parsed.namespace, parsed.uid, parsed.generation) == (
        k.job,
        "demo",
        "u-1",
        4,
    )
    assert parsed.api_version == k.crd.api_version


@pytest.mark.parametrize("kind", NAMES)
def test_the_crd_is_structural_and_described(kind: str) -> None:
    schema = schema_of(committed_crd(KINDS[kind].crd))
    assert_structural(schema)
    assert_described(schema)
