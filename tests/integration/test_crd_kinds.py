"""What every kind's CRD does at admission, by one parametrised suite.

Each kind's data (its examples, its invalid specs and the fragments its
refusal must name, its paused example, the job its samples create) stays in
its own module (tests/integration/test_crd_<kind>.py), gathered into its case
by tests/kinds/<kind>.py (``crd_case``); the tests themselves
are written once here, for every kind of the registry: every example of the
product document and of users' files applies as written and is stored
unpruned, parsing with the operator's model; a bad spec is refused naming the field,
a paused job's resumeSpecs are fixed once set, the short names and categories
list the job, the printer columns are the documented ones, and the status
subresource takes the kind's status without touching the spec.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from t9k_operator.api.specs import RESUME_SPECS_IMMUTABLE, RESUME_SPECS_PERMANENT
from tests.integration.cluster import Cluster
from tests.integration.crd_helpers import (
    DOC_FRAGMENTS,
    applied,
    assert_stored_as_sent,
    install_crd,
    nameless_container_refused,
    refused,
    stored_object,
)
from tests.kinds import KIND_NAMES, by_kind, kind_entry, kind_table, per_kind, spec_fields
from tests.kinds.common import CrdCase as Case
from tests.unit.api.helpers import is_subset, load

CASES: dict[str, Callable[[], Case]] = kind_table("crd_case")
"""kind -> its case, built when its tests run (its ``crd_case`` in tests/kinds/<kind>.py)."""


def test_every_registered_kind_has_a_case() -> None:
    per_kind(CASES, f"{__name__}.CASES")


_INSTALLED: set[str] = set()


def installed(cluster: Cluster, kind: str) -> Case:
    """The kind's case, its CRD installed (once per session)."""
    built = kind_entry(CASES, f"{__name__}.CASES", kind)()
    if kind not in _INSTALLED:
        install_crd(cluster, built.crd)
        _INSTALLED.add(kind)
    return built


@pytest.fixture(params=KIND_NAMES)
def case(request: pytest.FixtureRequest, cluster: Cluster) -> Case:
    return installed(cluster, str(request.param))


def _each(field: str) -> list[Any]:
    """(kind, name) of every entry of the cases' ``field`` (examples, invalid), all kinds;
    a kind without a case gets one entry, whose test fails saying so."""
    return [
        pytest.param(kind, name, id=f"{kind}-{name}")
        for kind in KIND_NAMES
        for name in (getattr(CASES[kind](), field) if kind in CASES else ["no-case"])
    ]


@pytest.mark.parametrize(("kind", "name"), _each("examples"))
def test_every_example_applies_and_is_stored_unpruned(
    cluster: Cluster, namespace: str, kind: str, name: str
) -> None:
    case = installed(cluster, kind)
    text = case.examples[name]
    if name in DOC_FRAGMENTS:
        text = nameless_container_refused(cluster, namespace, text)
    applied(cluster, namespace, text)
    obj = stored_object(cluster, case.crd, namespace, case.job)
    assert_stored_as_sent(load(text), obj)
    # What the API server stores parses with the operator's model ...
    assert by_kind(kind).model.from_dict(obj).name == case.job
    applied(cluster, namespace, text)  # ... and applying it again is a no-op, not a conflict


@pytest.mark.parametrize(("kind", "name"), _each("invalid"))
def test_an_invalid_spec_is_refused_naming_the_field(
    cluster: Cluster, namespace: str, kind: str, name: str
) -> None:
    text, fragments = installed(cluster, kind).invalid[name]
    stderr = refused(cluster, namespace, text)
    for fragment in fragments:
        assert fragment in stderr, stderr


@pytest.mark.parametrize("kind", [k for k in KIND_NAMES if "runMode" in spec_fields(k)])
def test_resume_specs_are_fixed_once_set(cluster: Cluster, namespace: str, kind: str) -> None:
    """(MSJob's API, the MindSpore operator's, has no pause mode: no runMode.)"""
    case = installed(cluster, kind)
    assert case.paused is not None, f"{__name__}.CASES[{kind!r}] has no paused example"
    original = case.paused
    applied(cluster, namespace, original)
    applied(cluster, namespace, original.replace("enabled: true", "enabled: false"))
    changed = original.replace('["/usr/bin/sshd"]', '["sleep", "inf"]')
    stderr = refused(cluster, namespace, changed)
    assert "spec.runMode.pause.resumeSpecs" in stderr and RESUME_SPECS_IMMUTABLE in stderr
    without = load(original)
    del without["spec"]["runMode"]["pause"]["resumeSpecs"]
    stderr = refused(cluster, namespace, yaml.safe_dump(without))
    assert "spec.runMode.pause.resumeSpecs" in stderr and RESUME_SPECS_PERMANENT in stderr
    obj = stored_object(cluster, case.crd, namespace, case.job)
    resume = obj["spec"]["runMode"]["pause"]["resumeSpecs"]
    assert resume == load(original)["spec"]["runMode"]["pause"]["resumeSpecs"]


def test_short_names_categories_and_columns(cluster: Cluster, namespace: str, case: Case) -> None:
    applied(cluster, namespace, case.example)
    for short in (case.crd.plural, case.crd.singular, *case.crd.short_names):
        assert case.job in cluster.kubectl("get", short, "-n", namespace).stdout, short
    full = f"{case.crd.plural}.{case.crd.group}"
    assert case.job in cluster.kubectl("get", full, "-n", namespace).stdout
    ref = f"{case.crd.singular}.{case.crd.group}/{case.job}"
    for category in case.crd.categories:
        listed = cluster.kubectl("get", category, "-n", namespace, "-o", "name").stdout.split()
        assert ref in listed, category
    assert "t9k" in case.crd.categories  # `kubectl get t9k` lists every kind served
    header = cluster.kubectl("get", case.crd.plural, "-n", namespace).stdout.splitlines()[0]
    assert header.split() == case.columns


def test_the_status_subresource_takes_the_status_and_leaves_the_spec(
    cluster: Cluster, namespace: str, case: Case
) -> None:
    applied(cluster, namespace, case.example)
    patch = json.dumps({"status": case.status})
    cluster.kubectl(
        "patch",
        case.crd.singular,
        case.job,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        patch,
    )
    obj = stored_object(cluster, case.crd, namespace, case.job)
    assert is_subset(case.status, obj["status"]), json.dumps(obj["status"], indent=1)
    assert is_subset(load(case.example)["spec"], obj["spec"])
    row = cluster.kubectl("get", case.crd.plural, case.job, "-n", namespace, "--no-headers")
    assert row.stdout.split()[: len(case.row)] == case.row


def test_managed_by_is_fixed_at_creation(cluster: Cluster, namespace: str, case: Case) -> None:
    """spec.managedBy takes MultiKueue's name alone, and only when the job is created."""
    text = next(iter(case.examples.values()))
    if next(iter(case.examples)) in DOC_FRAGMENTS:
        text = nameless_container_refused(cluster, namespace, text)
    plain = load(text)
    handed = load(text)
    handed["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    other = load(text)
    other["spec"]["managedBy"] = "example.com/some-controller"
    stderr = refused(cluster, namespace, yaml.safe_dump(other))
    assert "spec.managedBy" in stderr and "kueue.x-k8s.io/multikueue" in stderr, stderr
    applied(cluster, namespace, yaml.safe_dump(handed))
    assert stored_object(cluster, case.crd, namespace, case.job)["spec"]["managedBy"] == (
        "kueue.x-k8s.io/multikueue"
    )
    fixed = "spec.managedBy cannot be set, changed or removed after creation"
    stderr = refused(cluster, namespace, yaml.safe_dump(plain))
    assert fixed in stderr, stderr
    cluster.kubectl("delete", case.crd.singular, case.job, "-n", namespace, "--wait=true")
    applied(cluster, namespace, yaml.safe_dump(plain))
    stderr = refused(cluster, namespace, yaml.safe_dump(handed))
    assert fixed in stderr, stderr
    assert "managedBy" not in stored_object(cluster, case.crd, namespace, case.job)["spec"]
