"""Helpers shared by tests/integration/test_crd_*.py: install a CRD, apply objects."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import yaml

from t9k_operator.api.crd import CrdInfo
from t9k_operator.kube import Invalid
from tests.integration.cluster import ROOT, Cluster, wait_for
from tests.unit.api.helpers import is_subset


def install_crd(cluster: Cluster, info: CrdInfo) -> None:
    """Apply the committed CRD of ``info`` and wait until the resource is served."""
    crd_file = ROOT / "manifests" / "crds" / f"{info.group}_{info.plural}.yaml"
    cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=t9k-test",
        "-f",
        str(crd_file),
    )
    # Polled, not `kubectl wait`: right after an apply the CRD may have no
    # conditions yet, which `kubectl wait` reports as an error instead of waiting.
    established = '{.status.conditions[?(@.type=="Established")].status}'
    wait_for(
        lambda: (
            cluster.kubectl(
                "get", f"crd/{info.name}", "-o", f"jsonpath={established}", check=False
            ).stdout
            == "True"
        ),
        60,
        f"CRD {info.name} Established",
    )
    wait_for(
        lambda: cluster.kubectl("get", info.short_names[0], "-A", check=False).returncode == 0,
        30,
        f"the {info.kind} resource in discovery",
    )


def apply(cluster: Cluster, namespace: str, text: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=t9k-test",
        "-n",
        namespace,
        "-f",
        "-",
        input_=text,
        check=False,
    )


def applied(cluster: Cluster, namespace: str, text: str) -> None:
    proc = apply(cluster, namespace, text)
    assert proc.returncode == 0, proc.stderr
    assert "unknown field" not in proc.stderr, proc.stderr


def refused(cluster: Cluster, namespace: str, text: str) -> str:
    proc = apply(cluster, namespace, text)
    assert proc.returncode != 0, f"accepted:\n{text}"
    return proc.stderr


def stored_object(cluster: Cluster, info: CrdInfo, namespace: str, name: str) -> dict[str, Any]:
    """The object as the API server stores it."""
    out = cluster.kubectl("get", info.singular, name, "-n", namespace, "-o", "json")
    obj: dict[str, Any] = json.loads(out.stdout)
    return obj


DOC_FRAGMENTS = ("resources", "env")
"""Product-document examples that show one field of a container and leave out the
rest, its name included. The Pod API refuses a nameless container, and so does
the CRD now that templates carry the Kubernetes schema."""


def nameless_container_refused(cluster: Cluster, namespace: str, text: str) -> str:
    """Assert ``text`` is refused for its nameless container; the job with names filled in."""
    stderr = refused(cluster, namespace, text)
    assert 'omits all key fields ["name"]' in stderr or "name: Required value" in stderr, stderr
    return yaml.safe_dump(with_container_names(yaml.safe_load(text)))


def with_container_names(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` with a name given to every container of its templates that has none."""
    for node in _templates(job["spec"]):
        for i, container in enumerate(node["spec"]["containers"]):
            container.setdefault("name", f"c{i}")
    return job


def refused_for_nameless_container(create: Any, job: dict[str, Any]) -> dict[str, Any]:
    """Assert that ``create(job)`` is refused for a container without a name (the
    Pod API requires one; so does the CRD); the job with names filled in."""
    try:
        create(job)
    except Invalid as exc:
        assert "containers[0].name: Required value" in exc.message, exc.message
    else:
        raise AssertionError("a template container without a name was accepted")
    return with_container_names(job)


def _templates(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        if "template" in node and isinstance(node["template"], dict):
            return [node["template"]]
        return [t for value in node.values() for t in _templates(value)]
    if isinstance(node, list):
        return [t for item in node for t in _templates(item)]
    return []


KEPT_WHOLE = ("template", "env", "resources")
"""Fields typed by the Kubernetes schema: the API server must store them exactly
as sent (no default, no pruning inside them)."""


def _kept_whole(sent: Any, stored: Any, path: str = "spec") -> list[str]:
    """Paths of the :data:`KEPT_WHOLE` fields that ``stored`` does not hold as sent."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        return [
            bad
            for key, value in sent.items()
            for bad in (
                ([] if stored.get(key) == value else [f"{path}.{key}"])
                if key in KEPT_WHOLE
                else _kept_whole(value, stored.get(key), f"{path}.{key}")
            )
        ]
    if isinstance(sent, list) and isinstance(stored, list):
        return [
            bad
            for i, (mine, theirs) in enumerate(zip(sent, stored, strict=False))
            for bad in _kept_whole(mine, theirs, f"{path}[{i}]")
        ]
    return []


def assert_stored_as_sent(sent: dict[str, Any], obj: dict[str, Any]) -> None:
    """Everything sent was stored (nothing pruned), and the Kubernetes-typed fields
    (pod templates, env, resources) exactly as sent (nothing defaulted into them)."""
    assert is_subset(sent["spec"], obj["spec"]), json.dumps(obj["spec"], indent=1)
    assert not _kept_whole(sent["spec"], obj["spec"]), _kept_whole(sent["spec"], obj["spec"])
