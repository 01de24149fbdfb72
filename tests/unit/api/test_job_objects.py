"""What every kind's API model does, by one parametrised suite.

Each kind's examples stay in its own module (tests/unit/api/test_<kind>_models.py),
its entry here (its model, those examples) in tests/kinds/<kind>.py; the
behaviour every kind's ``JobObject`` shares is tested once here, for every kind
of the registry: the examples parse and round-trip with their pod templates
kept whole, status examples round-trip, unknown fields are ignored
(an operator meeting a newer object must not crash), the accessors read the
metadata, and the generated CRD is structural and described.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.kinds.registry import crds
from tests.kinds import kind_table
from tests.kinds.common import ModelCase
from tests.unit.api.helpers import (
    assert_described,
    assert_structural,
    committed_crd,
    is_subset,
    load,
    schema_of,
)

KINDS: dict[str, ModelCase] = kind_table("API_MODELS")
"""Each kind's API model and examples (its ``API_MODELS`` in tests/kinds/<kind>.py)."""
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


@pytest.mark.parametrize("kind", NAMES)
def test_managed_by_takes_multikueue_alone_and_is_fixed_at_creation(kind: str) -> None:
    case = KINDS[kind]
    obj = load(next(iter(case.examples.values())))
    obj["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert case.model.from_dict(obj).spec.managed_by == "kueue.x-k8s.io/multikueue"
    obj["spec"]["managedBy"] = "example.com/other"
    with pytest.raises(ValueError, match=r"kueue\.x-k8s\.io/multikueue"):
        case.model.from_dict(obj)
    schema = schema_of(committed_crd(case.crd))
    assert schema["properties"]["spec"]["properties"]["managedBy"]["enum"] == [
        "kueue.x-k8s.io/multikueue"
    ]
    (rule,) = [r for r in schema["x-kubernetes-validations"] if "managedBy" in r["rule"]]
    assert rule["fieldPath"] == ".spec.managedBy" and "oldSelf.spec.managedBy" in rule["rule"]
