"""Everything that lists the job kinds derives from the one registry: the
controllers, the CRDs, the ClusterRole, the samples and the thread pool.

What the registry yields is checked against what does not come from it: the
API modules that declare a CRD, the committed CRD files in manifests/crds/ and
the samples in manifests/samples/; and its names against Kubernetes' rules."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

import t9k_operator.api
from t9k_operator.api import tensorboard
from t9k_operator.api.crd import CrdInfo
from tests import hack_scripts
from tests.kinds import ALL, KIND_NAMES, KINDS, kind_table, per_kind, registry

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "manifests" / "crds"

KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
LOWER = re.compile(r"^[a-z][a-z0-9]*$")  # a plural, singular or short name
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$")
VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")


def declared_crds() -> dict[str, CrdInfo]:
    """The ``CRD`` of every module of t9k_operator.api that declares one, by module."""
    found = {}
    for info in pkgutil.walk_packages(t9k_operator.api.__path__, "t9k_operator.api."):
        crd = getattr(importlib.import_module(info.name), "CRD", None)
        if isinstance(crd, CrdInfo):
            found[info.name] = crd
    return found


def test_each_kind_declares_its_identity_in_its_api_module() -> None:
    elsewhere = {
        kind.crd.kind: kind.model.__module__
        for kind in KINDS
        if not kind.model.__module__.startswith("t9k_operator.api.")
        or getattr(importlib.import_module(kind.model.__module__), "CRD", None) is not kind.crd
    }
    assert elsewhere == {}, "a kind's CRD is not the CRD of its model's API module"
    assert registry.crds() == [kind.crd for kind in KINDS]
    assert list(KIND_NAMES) == [info.kind for info in registry.crds()]
    assert len({info.kind for info in registry.crds()}) == len(KINDS)
    for kind in KINDS:
        assert registry.by_kind(kind.crd.kind) is kind
    with pytest.raises(KeyError):
        registry.by_kind("NoSuchJob")


def test_every_crd_the_api_declares_is_served_and_only_those() -> None:
    declared = declared_crds()
    served = registry.served_crds()
    assert {info.kind for info in declared.values()} == {info.kind for info in served}
    assert len(declared) == len(served)
    for info in served:
        assert any(info is crd for crd in declared.values()), info.kind
    assert declared["t9k_operator.api.tensorboard"] is tensorboard.CRD


def test_every_committed_crd_file_is_a_served_kind_and_every_served_kind_has_one() -> None:
    files = {p.name: yaml.safe_load(p.read_text()) for p in CRD_DIR.glob("*.yaml")}
    served = {f"{info.group}_{info.plural}.yaml": info for info in registry.served_crds()}
    assert set(files) == set(served)
    for file, info in served.items():
        doc = files[file]
        assert doc["kind"] == "CustomResourceDefinition", file
        assert doc["metadata"]["name"] == info.name, file
        assert doc["spec"]["group"] == info.group, file
        assert doc["spec"]["scope"] == ("Namespaced" if info.namespaced else "Cluster"), file
        names = doc["spec"]["names"]
        assert (names["kind"], names["plural"], names["singular"]) == (
            info.kind,
            info.plural,
            info.singular,
        ), file
        assert names.get("shortNames", []) == list(info.short_names), file
        assert names.get("categories", []) == list(info.categories), file
        storage = [v["name"] for v in doc["spec"]["versions"] if v.get("storage")]
        assert storage == [info.version], file


@pytest.mark.parametrize("info", registry.served_crds(), ids=lambda info: info.kind)
def test_the_names_are_well_formed(info: CrdInfo) -> None:
    assert KIND.match(info.kind), info.kind
    assert info.singular == info.kind.lower()
    assert info.plural != info.singular
    for name in (info.plural, info.singular, *info.short_names):
        assert LOWER.match(name) and len(name) <= 63, name
    assert DNS_SUBDOMAIN.match(info.group) and len(info.group) <= 253, info.group
    assert VERSION.match(info.version), info.version
    assert info.name == f"{info.plural}.{info.group}"
    assert info.api_version == f"{info.group}/{info.version}"


def test_the_names_are_unique() -> None:
    """Any of a kind's names finds it with kubectl: none may be another's."""
    served = registry.served_crds()
    assert len(served) == len(KINDS) + len(registry.OTHER_CRDS)
    for attr in ("kind", "plural", "singular", "name"):
        counts = Counter(getattr(info, attr) for info in served)
        assert [n for n, c in counts.items() if c > 1] == [], attr
    names = Counter(
        name for info in served for name in (info.plural, info.singular, *info.short_names)
    )
    assert [n for n, c in names.items() if c > 1] == []


def test_the_crd_generator_makes_one_crd_per_served_kind() -> None:
    gen = hack_scripts.load("generate.crds")
    assert registry.served_crds() == gen.KINDS == [*registry.crds(), tensorboard.CRD]
    names = {yaml.safe_load(p.read_text())["spec"]["names"]["kind"] for p in CRD_DIR.glob("*.yaml")}
    assert names == {info.kind for info in registry.served_crds()}


def test_the_tensorboard_is_served_but_is_not_a_job_kind() -> None:
    assert tensorboard.CRD not in registry.crds()
    assert tensorboard.CRD.kind not in KIND_NAMES
    assert tensorboard.CRD in registry.OTHER_CRDS


def test_the_committed_cluster_role_is_what_the_registry_makes() -> None:
    gen = hack_scripts.load("generate.rbac")
    assert gen.TARGET.read_text() == gen.render(), "stale: run `make manifests` and commit"
    role = yaml.safe_load(gen.TARGET.read_text())
    granted = {
        (group, res)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for res in rule["resources"]
    }
    for info in registry.crds():
        for suffix in ("", "/status", "/finalizers"):
            assert (info.group, info.plural + suffix) in granted


def test_the_committed_priority_classes_are_what_the_code_makes() -> None:
    gen = hack_scripts.load("generate.rbac")
    text = gen.PRIORITY_CLASSES.read_text()
    assert text == gen.render_priority_classes(), "stale: run `make manifests` and commit"
    classes = list(yaml.safe_load_all(text))
    assert [c["value"] for c in classes] == list(range(101))
    # As the T9k docs say, a job of higher priority may evict lower ones to get room.
    assert {c["preemptionPolicy"] for c in classes} == {"PreemptLowerPriority"}
    assert classes[50]["metadata"]["name"] == "t9k-priority-50"


def test_the_operator_may_manage_the_podgroups_of_every_gang_scheduler() -> None:
    role = yaml.safe_load(hack_scripts.load("generate.rbac").TARGET.read_text())
    granted = {
        (group, res, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for res in rule["resources"]
        for verb in rule["verbs"]
    }
    for group in ("scheduling.volcano.sh", "scheduling.x-k8s.io"):
        for verb in ("list", "watch", "create", "update", "delete"):
            assert (group, "podgroups", verb) in granted


def test_the_operator_may_serve_tensorboards_and_own_them_for_jobs() -> None:
    role = yaml.safe_load(hack_scripts.load("generate.rbac").TARGET.read_text())
    granted = {
        (group, res, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for res in rule["resources"]
        for verb in rule["verbs"]
    }
    for verb in ("get", "list", "watch", "create", "update", "delete"):
        assert ("tensorstack.dev", "tensorboards", verb) in granted
    for sub in ("tensorboards/status", "tensorboards/finalizers"):
        assert ("tensorstack.dev", sub, "update") in granted
    # Its pod and Service: the children's rules (a pod, not a Deployment).
    for res, verbs in (("pods", ("create", "delete", "watch")), ("services", ("create", "get"))):
        assert all(("", res, verb) in granted for verb in verbs)
    assert not any(res == "deployments" for _, res, _ in granted)


def test_a_new_kind_gets_its_rules() -> None:
    gen = hack_scripts.load("generate.rbac")
    extra = replace(KINDS[0].crd, plural="newjobs", kind="NewJob")
    role = yaml.safe_load(gen.render([*registry.crds(), extra]))
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert {"newjobs", "newjobs/status", "newjobs/finalizers"} <= resources


def test_a_kind_whose_finished_jobs_are_deleted_gets_delete_on_its_jobs() -> None:
    """The delete rule of ttlSecondsAfterFinished follows the CRD's ``deletes_finished``:
    a toy kind with it gets delete on its jobs, one without does not."""
    gen = hack_scripts.load("generate.rbac")
    kept = replace(KINDS[0].crd, group="toy.example", plural="keptjobs", kind="KeptJob")
    deleted = replace(kept, plural="ttljobs", kind="TtlJob", deletes_finished=True)
    assert not kept.deletes_finished
    assert gen.ttl_rules([kept]) == ""
    assert gen.ttl_rules([kept, deleted]) == (
        "# A finished TtlJob is deleted ttlSecondsAfterFinished after it finished, as\n"
        "# Kubeflow's controllers do (its children go by garbage collection).\n"
        '- apiGroups: ["toy.example"]\n'
        '  resources: ["ttljobs"]\n'
        '  verbs: ["delete"]\n'
    )
    role = yaml.safe_load(gen.render([kept, deleted], rules={}))
    toy_deletes = [
        rule
        for rule in role["rules"]
        if rule["apiGroups"] == ["toy.example"] and "delete" in rule["verbs"]
    ]
    assert toy_deletes == [
        {"apiGroups": ["toy.example"], "resources": ["ttljobs"], "verbs": ["delete"]}
    ]
    without = yaml.safe_load(gen.render([kept], rules={}))
    assert not any(
        rule["apiGroups"] == ["toy.example"] and "delete" in rule["verbs"]
        for rule in without["rules"]
    )


def _declares(schema: Any, field: str) -> bool:
    """Whether a JSON schema (its $defs too) has a property named ``field``."""
    if isinstance(schema, dict):
        if field in (schema.get("properties") or {}):
            return True
        return any(_declares(value, field) for value in schema.values())
    if isinstance(schema, list):
        return any(_declares(item, field) for item in schema)
    return False


@pytest.mark.parametrize("kind", registry.KINDS, ids=lambda kind: kind.crd.kind)
def test_a_kind_says_it_deletes_finished_jobs_when_its_spec_has_a_ttl(kind: Any) -> None:
    """``deletes_finished`` (behind the ClusterRole's delete on a kind's jobs) is
    declared by exactly the kinds whose spec has ttlSecondsAfterFinished."""
    schema = kind.crd.spec_model.model_json_schema(by_alias=True)
    assert kind.crd.deletes_finished == _declares(schema, "ttlSecondsAfterFinished")


EVERY_KINDS_TEST_DATA = (
    "SAMPLE",
    "LOCAL_PROCESSES",
    "API_MODELS",
    "RULES",
    "RECONCILED",
    "HOOKS",
    "NEVER_RESTARTS",
    "KUEUE_POD_SETS",
    "GANG_MIN_MEMBER",
    "crd_case",
    "FUZZ_BASE_SPEC",
    "fuzz_templates",
    "FUZZ_TEMPLATE_PATH",
    "FUZZ_OWN_QUANTITY_SPOTS",
    "FUZZ_RESUMES",
    "gang_gpu_spec",
    "GANG_RESTARTING",
    "schema_template",
    "SCHEMA_EXPLAIN",
)
"""The entries of tests/kinds/<kind>.py that every kind gives (the others are for
the kinds with some field or property; their tests check those)."""


def test_every_registered_kind_has_its_test_data_module() -> None:
    """One module of tests/kinds/ per registered kind, in the registry's order, each
    with its entry in every table that covers every kind: a new kind's test data is
    its module and its line in ``ALL``, checked here without a cluster."""
    assert [data.KIND for data in ALL] == list(KIND_NAMES)
    for name in EVERY_KINDS_TEST_DATA:
        per_kind(kind_table(name), f"tests.kinds: {name} of each kind's module")


def test_there_is_a_sample_of_every_kind() -> None:
    kinds = {
        yaml.safe_load(p.read_text())["kind"]
        for p in (ROOT / "manifests" / "samples").glob("*.yaml")
    }
    assert kinds == set(KIND_NAMES)


@pytest.mark.parametrize("kind", registry.KINDS, ids=lambda kind: kind.crd.kind)
def test_every_job_kind_is_in_the_t9k_category(kind: Any) -> None:
    """`kubectl get t9k` lists every job kind the operator serves, MSJob too."""
    assert "t9k" in kind.crd.categories
