"""Everything that lists the job kinds derives from the one registry: the
controllers, the CRDs, the ClusterRole, the samples and the thread pool."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from t9k_operator.api import colossalai, deepspeed, msjob, pytorch, tensorboard
from t9k_operator.reconcilers.registry import KINDS, by_kind, crds, served_crds
from tests import hack_scripts

ROOT = Path(__file__).resolve().parents[2]


def test_each_kind_declares_its_identity_in_its_api_module() -> None:
    assert crds() == [pytorch.CRD, deepspeed.CRD, colossalai.CRD, msjob.CRD]
    assert len({info.kind for info in crds()}) == len(KINDS)
    assert by_kind("MSJob").crd is msjob.CRD


def test_the_crd_generator_makes_one_crd_per_served_kind() -> None:
    gen = hack_scripts.load("gen_crds")
    assert served_crds() == gen.KINDS == [*crds(), tensorboard.CRD]
    names = {
        yaml.safe_load(p.read_text())["spec"]["names"]["kind"]
        for p in (ROOT / "manifests" / "crds").glob("*.yaml")
    }
    assert names == {info.kind for info in served_crds()}


def test_the_tensorboard_is_served_but_is_not_a_job_kind() -> None:
    assert tensorboard.CRD not in crds()
    assert tensorboard.CRD.kind not in {kind.crd.kind for kind in KINDS}


def test_the_committed_cluster_role_is_what_the_registry_makes() -> None:
    gen = hack_scripts.load("gen_rbac")
    assert gen.TARGET.read_text() == gen.render(), "stale: run `make manifests` and commit"
    role = yaml.safe_load(gen.TARGET.read_text())
    granted = {
        (group, res)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for res in rule["resources"]
    }
    for info in crds():
        for suffix in ("", "/status", "/finalizers"):
            assert (info.group, info.plural + suffix) in granted


def test_the_committed_priority_classes_are_what_the_code_makes() -> None:
    gen = hack_scripts.load("gen_rbac")
    text = gen.PRIORITY_CLASSES.read_text()
    assert text == gen.render_priority_classes(), "stale: run `make manifests` and commit"
    classes = list(yaml.safe_load_all(text))
    assert [c["value"] for c in classes] == list(range(101))
    assert {c["preemptionPolicy"] for c in classes} == {"Never"}
    assert classes[50]["metadata"]["name"] == "t9k-priority-50"


def test_the_operator_may_manage_the_podgroups_of_every_gang_scheduler() -> None:
    role = yaml.safe_load(hack_scripts.load("gen_rbac").TARGET.read_text())
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
    role = yaml.safe_load(hack_scripts.load("gen_rbac").TARGET.read_text())
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
    gen = hack_scripts.load("gen_rbac")
    extra = replace(pytorch.CRD, plural="newjobs", kind="NewJob")
    role = yaml.safe_load(gen.render([*crds(), extra]))
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert {"newjobs", "newjobs/status", "newjobs/finalizers"} <= resources


def test_there_is_a_sample_of_every_kind() -> None:
    kinds = {
        yaml.safe_load(p.read_text())["kind"]
        for p in (ROOT / "manifests" / "samples").glob("*.yaml")
    }
    assert kinds == {info.kind for info in crds()}
