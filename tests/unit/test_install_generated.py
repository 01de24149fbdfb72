"""The chart, kustomize's overlays and deploy/install.yaml are generated from
manifests/ (hack/generate/install.py) and committed: they are fresh, and what
the generator derives (the namespaced Role, the PrometheusRule, the chart's
values and its stored CRDs) is right. Rendering them with the real Helm and
kustomize is tests/integration/test_install.py's."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import hack_scripts

ROOT = Path(__file__).resolve().parents[2]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where there


def load(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=LOADER)


gen = hack_scripts.load("generate.install")


def test_regenerating_changes_nothing() -> None:
    assert gen.main(["--check"]) == 0, (
        "stale: run `python -m hack.generate.install` (part of `make manifests`) and commit"
    )


def test_the_prometheus_rule_carries_rules_yaml_unchanged() -> None:
    rules = (ROOT / "manifests" / "monitoring" / "rules.yaml").read_text()
    rule = yaml.safe_load((ROOT / "deploy" / "monitoring" / "prometheus-rule.yaml").read_text())
    assert rule["spec"]["groups"] == yaml.safe_load(rules)["groups"]
    assert (ROOT / "charts" / "t9k-operator" / "files" / "rules.yaml").read_text() == rules


def test_the_namespaced_role_is_the_cluster_roles_namespaced_rules() -> None:
    cluster_role = yaml.safe_load(
        (ROOT / "manifests" / "rbac" / "20-cluster-role.yaml").read_text()
    )
    role, binding = yaml.safe_load_all((ROOT / "deploy" / "namespaced" / "role.yaml").read_text())
    assert role["kind"] == "Role" and binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "t9k-operator",
    }

    def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
        return {
            (g, r, v)
            for rule in rules
            for g in rule["apiGroups"]
            for r in rule["resources"]
            for v in rule["verbs"]
        }

    left_out = grants(cluster_role["rules"]) - grants(role["rules"])
    assert {(g, r) for g, r, _ in left_out} == gen.CLUSTER_SCOPED  # only cluster-scoped ones
    # Read from caches, but for the progress endpoint's token reviews and the
    # start estimates' reads of a ClusterQueue and its pending workloads.
    reviews = {("authentication.k8s.io", "tokenreviews", "create")}
    queues = {
        ("kueue.x-k8s.io", "clusterqueues", "get"),
        ("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads", "get"),
    }
    assert {v for g, r, v in left_out - reviews - queues} == {"list", "watch"}
    assert reviews <= left_out and queues <= left_out
    assert grants(role["rules"]) < grants(cluster_role["rules"])


def test_the_charts_stored_crds_put_back_are_manifests_crds() -> None:
    """The chart keeps repeated subtrees once (files/crds/shared.yaml); putting
    them back as its template does gives manifests/crds/ exactly."""
    files = ROOT / "charts" / "t9k-operator" / "files" / "crds"
    shared = load(files / "shared.yaml")
    trees = copy.deepcopy(shared["trees"])

    def place(root: Any, path: list[Any], value: Any) -> None:
        for seg in path[:-1]:
            root = root[seg]
        root[path[-1]] = value

    for tid in shared["order"]:
        for ref in shared["refs"].get(tid, []):
            place(trees[tid], ref["path"], trees[ref["id"]])
    crds = sorted((ROOT / "manifests" / "crds").glob("*.yaml"))
    assert shared["files"] == [p.name for p in crds]
    for path in crds:
        doc = load(files / path.name)
        for ref in shared["refs"].get(path.name, []):
            place(doc, ref["path"], trees[ref["id"]])
        assert doc == load(path), path.name
    stored = sum(len(p.read_bytes()) for p in files.iterdir())
    assert stored < sum(len(p.read_bytes()) for p in crds) / 3


def test_the_charts_values_are_the_deployments_settings() -> None:
    dep = next(
        d
        for d in yaml.safe_load_all(
            (ROOT / "manifests" / "manager" / "deployment.yaml").read_text()
        )
        if d["kind"] == "Deployment"
    )
    values, tag = gen.chart_values(dep)
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert f"{values['image']['repository']}:{tag}" == container["image"]
    assert values["replicas"] == dep["spec"]["replicas"]
    assert values["resources"] == container["resources"]
    assert values["leaderElection"] == {"enabled": True}
    # Unset: the operator picks its limit by the API server (README, --kube-api-qps).
    assert values["kubeAPI"] == {"qps": None, "burst": None}
    assert not any(a.startswith("--kube-api-") for a in container["args"])
    assert yaml.safe_load((ROOT / "charts" / "t9k-operator" / "values.yaml").read_text()) == values
    # A flag the generator does not know is refused, not dropped from the chart.
    changed = copy.deepcopy(dep)
    changed["spec"]["template"]["spec"]["containers"][0]["args"].append("--new-flag=1")
    with pytest.raises(SystemExit, match="--new-flag"):
        gen.chart_values(changed)


@pytest.mark.parametrize(
    ("image", "entry"),
    [
        ("ghcr.io/me/op:dev", {"newName": "ghcr.io/me/op", "newTag": "dev"}),
        ("registry:5000/op", {"newName": "registry:5000/op", "newTag": "latest"}),
        ("registry:5000/op:1.2", {"newName": "registry:5000/op", "newTag": "1.2"}),
        ("op@sha256:abc", {"newName": "op", "digest": "sha256:abc"}),
    ],
)
def test_make_deploy_reads_img_as_kustomize_does(image: str, entry: dict[str, str]) -> None:
    deploy = hack_scripts.load("release.deploy")
    assert deploy.image_entry(image) == {"name": "ghcr.io/t9k-operator/t9k-operator", **entry}


SECRET_LIMIT = 1024 * 1024
"""The most a Secret's data may hold (the API server's limit): Helm keeps each
release, its chart and its rendered manifest, in one Secret."""


def test_a_helm_release_of_the_chart_fits_in_its_secret() -> None:
    """What Helm stores for a release, the chart's files and templates (base64 in
    the release's JSON) and the rendered manifest (each CRD as the template's
    toJson writes it), gzipped then base64-encoded as Helm does, with room to
    spare: a Secret past the limit fails ``helm install``, whatever the cluster."""
    import base64
    import gzip
    import json

    chart = ROOT / "charts" / "t9k-operator"
    stored = [
        {"name": str(p.relative_to(chart)), "data": base64.b64encode(p.read_bytes()).decode()}
        for p in sorted(chart.rglob("*"))
        if p.is_file()
    ]
    manifest = "\n---\n".join(
        json.dumps(load(p), separators=(",", ":"), sort_keys=True)
        for p in sorted((ROOT / "manifests" / "crds").glob("*.yaml"))
    )
    release = json.dumps({"chart": {"files": stored}, "manifest": manifest}).encode()
    size = len(base64.b64encode(gzip.compress(release, 9)))
    assert size < SECRET_LIMIT / 2, f"a release would take {size} bytes of {SECRET_LIMIT}"
