"""Test utilities shared by the API model tests (and tests/integration/test_crd_*.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from t9k_operator.api.crd import CrdInfo
from tests import hack_scripts

ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = ROOT / "manifests" / "crds"

_NOT_STRUCTURAL = ("$ref", "$defs", "anyOf", "allOf", "oneOf", "title", "nullable")


def load(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def is_subset(sent: Any, stored: Any) -> bool:
    """Whether everything in ``sent`` is in ``stored`` (which may hold more keys)."""
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(
            k in stored and is_subset(v, stored[k]) for k, v in sent.items()
        )
    if isinstance(sent, list):
        return (
            isinstance(stored, list)
            and len(sent) == len(stored)
            and all(is_subset(a, b) for a, b in zip(sent, stored, strict=True))
        )
    return bool(sent == stored)


def load_generator() -> ModuleType:
    """The CRD generator, hack/generate/crds.py, as a module."""
    return hack_scripts.load("generate.crds")


def committed_crd(info: CrdInfo) -> dict[str, Any]:
    """The committed CRD of a kind (which must be one the generator knows)."""
    gen = load_generator()
    assert info in gen.KINDS
    doc = yaml.safe_load((Path(gen.CRD_DIR) / gen.file_name(info)).read_text())
    assert isinstance(doc, dict)
    return doc


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node under ``node`` with its path (``[*]`` for list items)."""
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if "items" in node:
        yield from walk(node["items"], f"{path}[*]")


def rules(node: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The CEL rules of ``node``, by message."""
    return {r["message"]: r for r in node.get("x-kubernetes-validations", [])}


def rule_messages(schema: dict[str, Any]) -> set[str]:
    """The messages of every CEL rule anywhere in ``schema``."""
    return {
        rule["message"]
        for _, node in walk(schema)
        for rule in node.get("x-kubernetes-validations", [])
    }


def assert_structural(schema: dict[str, Any]) -> None:
    for path, node in walk(schema):
        for key in _NOT_STRUCTURAL:
            assert key not in node, f"{path}: {key}"
        untyped_ok = ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string")
        assert "type" in node or any(node.get(key) for key in untyped_ok), path
        if "default" in node:
            assert node["default"] is not None, path


EMBEDDED = re.compile(r"kubectl explain [a-z.]+ describes (its|their) fields\.$")
"""How the description of a field holding a Kubernetes type (a pod template, env,
resources) ends: the fields under it are the Pod API's, which kubectl explain
describes at that path, and carry no description in the CRD."""


def assert_described(schema: dict[str, Any]) -> None:
    """Every field under spec and status has a description (for kubectl explain),
    down to the Kubernetes types, whose own fields ``kubectl explain pod`` describes."""

    def check(node: dict[str, Any], path: str) -> None:
        if not path.endswith("[*]"):
            description = node.get("description")
            assert description, f"{path} has no description (kubectl explain)"
            if EMBEDDED.search(description):
                return
        for name, sub in node.get("properties", {}).items():
            check(sub, f"{path}.{name}")
        if "items" in node:
            check(node["items"], f"{path}[*]")

    for top in ("spec", "status"):
        check(schema["properties"][top], top)


QUANTITY_FIELDS = ("divisor", "sizeLimit", "limits", "requests", "overhead")
"""The only Kubernetes fields kept untyped in a CRD: quantities (or maps of them),
which are a number or a string, and no structural type allows both."""


def assert_pod_template_schema(template: dict[str, Any], path: str = "template") -> None:
    """``template`` is the pinned Kubernetes PodTemplateSpec: every container field is
    declared (so ``comand`` is refused and ``kubectl explain`` reaches ``command``),
    without the Pod API's descriptions (its own says where they are), metadata takes
    what controller-gen's embedded ObjectMeta takes, and nothing is kept untyped but
    quantities."""
    assert template["type"] == "object", path
    assert template["description"].endswith("kubectl explain pod describes its fields."), path
    assert set(template["properties"]) == {"metadata", "spec"}, path
    # What controller-gen's embedded ObjectMeta takes (Kubeflow's, Kueue's CRDs).
    assert set(template["properties"]["metadata"]["properties"]) == {
        "name",
        "namespace",
        "labels",
        "annotations",
        "finalizers",
    }
    pod = template["properties"]["spec"]["properties"]
    assert "ephemeralContainers" not in pod, "the Pod API refuses them on create"
    container = pod["containers"]["items"]["properties"]
    for field in ("command", "args", "env", "image", "resources", "volumeMounts", "ports"):
        assert field in container, f"{path}: container field {field}"
    assert container["command"] == {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "atomic",
    }
    # Lists the Pod API lets repeat a key stay atomic; only names it refuses twice are keys.
    assert "x-kubernetes-list-map-keys" not in container["env"], "env names may repeat"
    assert pod["containers"]["x-kubernetes-list-map-keys"] == ["name"]
    for sub_path, node in walk(template, path):
        assert "default" not in node, f"{sub_path}: the Pod API defaults, not the CRD"
        if node.get("x-kubernetes-preserve-unknown-fields"):
            assert sub_path.rsplit(".", 1)[-1].rstrip("*[]") in QUANTITY_FIELDS, sub_path
