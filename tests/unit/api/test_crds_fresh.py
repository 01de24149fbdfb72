"""The committed CRDs are what hack/generate/crds.py makes of the models, and are structural."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.pytorch import (
    CRD,
    MSG_DISTINCT_TYPES,
    MSG_ELASTIC_NEEDS_TORCHRUN,
    MSG_ONE_MASTER,
)
from t9k_operator.api.template import pod_template_schema
from tests import hack_scripts
from tests.unit.api.helpers import (
    CRD_DIR,
    assert_described,
    assert_pod_template_schema,
    assert_structural,
    load_generator,
    rules,
    schema_of,
    walk,
)

gen = load_generator()
kube = hack_scripts.load("generate.kube_schema")  # the Kubernetes types' conversion


@pytest.mark.parametrize("file_name", sorted(gen.rendered()))
def test_committed_crd_is_fresh(file_name: str) -> None:
    expected = gen.rendered()[file_name]
    path = CRD_DIR / file_name
    current = path.read_text() if path.exists() else None
    assert current == expected, (
        f"manifests/crds/{file_name} is stale (or missing): the API models changed. "
        "Run `make manifests` and commit the result."
    )


def test_rendering_is_deterministic() -> None:
    assert gen.rendered() == gen.rendered()


def test_check_mode_reports_stale_files(tmp_path: Path) -> None:
    assert gen.main(["--out-dir", str(tmp_path), "--check"]) == 1
    assert gen.main(["--out-dir", str(tmp_path)]) == 0
    assert gen.main(["--out-dir", str(tmp_path), "--check"]) == 0


# -- the shape of the PyTorchTrainingJob CRD -------------------------------------------------


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    doc = yaml.safe_load((CRD_DIR / gen.file_name(CRD)).read_text())
    assert isinstance(doc, dict)
    return doc


def test_names_and_subresources(crd: dict[str, Any]) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == "pytorchtrainingjobs.batch.tensorstack.dev"
    assert crd["metadata"]["labels"] == {"app.kubernetes.io/part-of": "t9k-operator"}
    spec = crd["spec"]
    assert spec["group"] == "batch.tensorstack.dev"
    assert spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "PyTorchTrainingJob"
    assert spec["names"]["plural"] == "pytorchtrainingjobs"
    assert spec["names"]["singular"] == "pytorchtrainingjob"
    assert {"pytj", "ptj"} <= set(spec["names"]["shortNames"])
    assert spec["names"]["categories"] == ["t9k"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.elastic.expectedReplicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    columns = {c["name"]: (c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Phase": ("string", ".status.phase"),
        "Reason": ("string", '.status.conditions[?(@.type=="Running")].reason'),
        "Ready": ("integer", ".status.readyReplicas"),
        "Replicas": ("integer", ".status.replicas"),
        "Restarts": ("integer", ".status.restartCount"),
        "Progress": ("string", ".status.progress.summary"),
        "ETA": ("string", ".status.progress.eta"),
        "Age": ("date", ".metadata.creationTimestamp"),
    }


def test_schema_is_structural(crd: dict[str, Any]) -> None:
    assert_structural(schema_of(crd))


def test_every_spec_and_status_field_is_described(crd: dict[str, Any]) -> None:
    assert_described(schema_of(crd))


def test_pod_templates_have_the_kubernetes_schema(crd: dict[str, Any]) -> None:
    replica = schema_of(crd)["properties"]["spec"]["properties"]["replicaSpecs"]["items"]
    assert_pod_template_schema(replica["properties"]["template"])
    assert replica["required"] == ["type", "template"]


def test_constraints_and_defaults(crd: dict[str, Any]) -> None:
    spec = schema_of(crd)["properties"]["spec"]
    props = spec["properties"]
    assert spec["required"] == ["replicaSpecs"]
    replica_specs = props["replicaSpecs"]
    assert (replica_specs["minItems"], replica_specs["maxItems"]) == (1, 16)
    replica = replica_specs["items"]["properties"]
    assert replica["replicas"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 5000,
        "default": 1,
        "description": replica["replicas"]["description"],
    }
    assert replica["restartPolicy"]["enum"] == ["Never", "OnFailure", "Always", "ExitCode"]
    assert replica["restartPolicy"]["default"] == "OnFailure"
    assert replica["type"]["maxLength"] == 63
    torchrun = props["torchrunConfig"]["properties"]
    assert torchrun["procPerNode"]["pattern"] == "^([1-9][0-9]*|gpu)$"
    assert torchrun["procPerNode"]["default"] == "1"
    assert torchrun["rdzvBackend"]["enum"] == ["c10d", "etcd", "etcd-v2"]
    assert torchrun["enabled"]["default"] is False
    run_policy = props["runPolicy"]["properties"]
    assert run_policy["backoffLimit"]["default"] == 3
    assert run_policy["cleanUpPolicy"]["enum"] == ["None", "All", "Unfinished"]
    assert run_policy["activeDeadlineSeconds"]["minimum"] == 1
    assert "t9kScheduler" in props["scheduler"]["properties"]
    # Optional objects stay absent until set: no object-valued defaults.
    for name in ("torchrunConfig", "elastic", "runPolicy", "scheduler", "runMode"):
        assert "default" not in props[name], name
    resume = props["runMode"]["properties"]["pause"]["properties"]["resumeSpecs"]
    assert "default" not in resume  # "set" must mean set by the user


def test_cel_rules(crd: dict[str, Any]) -> None:
    spec = schema_of(crd)["properties"]["spec"]
    replica_rules = rules(spec["properties"]["replicaSpecs"])
    assert "sum() <= 1" in replica_rules[MSG_ONE_MASTER]["rule"]
    assert "exists_one" in replica_rules[MSG_DISTINCT_TYPES]["rule"]
    spec_rules = rules(spec)
    assert spec_rules[MSG_ELASTIC_NEEDS_TORCHRUN]["fieldPath"] == ".elastic.enabled"
    assert any("oldSelf" in r["rule"] for r in spec_rules.values())
    elastic_rules = rules(spec["properties"]["elastic"])
    assert len(elastic_rules) == 3
    resume = spec["properties"]["runMode"]["properties"]["pause"]["properties"]["resumeSpecs"]
    (immutable,) = resume["x-kubernetes-validations"]
    assert immutable["optionalOldSelf"] is True
    assert "self == oldSelf.value()" in immutable["rule"]
    root_rules = rules(schema_of(crd))
    assert all(r["fieldPath"] in (".metadata.name", ".spec.managedBy") for r in root_rules.values())
    for _, node in walk(schema_of(crd)):
        for rule in node.get("x-kubernetes-validations", []):
            assert rule["message"], rule


# -- the converter on its own ------------------------------------------------------------------


class _Inner(T9kModel):
    """Inner doc."""

    some_value: int = Field(default=2, description="a value")


class _Sample(T9kModel):
    """Sample doc."""

    inner: _Inner | None = Field(default=None, description="field doc wins")
    inners: list[_Inner] = Field(default=[], description="a list")
    fixed: Literal["x"] = Field(default="x", description="a constant")
    blob: dict[str, Any] = Field(default_factory=dict, description="anything")
    labels: dict[str, str] = Field(default_factory=dict, description="string map")


def test_structural_conversion() -> None:
    schema = gen.structural(_Sample.model_json_schema(by_alias=True))
    assert schema["description"] == "Sample doc."
    props = schema["properties"]
    assert props["inner"] == {
        "type": "object",
        "description": "field doc wins",
        "properties": {
            "someValue": {"type": "integer", "default": 2, "description": "a value"},
        },
    }
    assert props["inners"]["items"]["description"] == "Inner doc."
    assert props["fixed"] == {
        "type": "string",
        "enum": ["x"],
        "default": "x",
        "description": "a constant",
    }
    assert props["blob"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "description": "anything",
    }
    assert props["labels"]["additionalProperties"] == {"type": "string"}


class _Union(T9kModel):
    value: int | str = Field(description="either")


def test_unions_are_refused() -> None:
    with pytest.raises(gen.SchemaError, match="value"):
        gen.structural(_Union.model_json_schema(by_alias=True))


class _Typo(T9kModel):
    template: dict[str, Any] = Field(
        description="a template",
        json_schema_extra=pod_template_schema(
            {"properties": {"spec": {"properties": {"containrs": {"maxItems": 2}}}}}
        ),
    )


def test_an_overlay_naming_a_field_kubernetes_lacks_is_an_error() -> None:
    with pytest.raises(gen.SchemaError, match="containrs: not a field of the Kubernetes type"):
        gen.structural(_Typo.model_json_schema(by_alias=True))


def test_kubernetes_types_become_structural_and_no_stricter_than_the_pod_api() -> None:
    container = gen.kubernetes_schema("io.k8s.api.core.v1.Container")
    probe_port = container["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]
    assert probe_port["port"]["x-kubernetes-int-or-string"] is True
    assert "type" not in probe_port["port"]
    limits = container["properties"]["resources"]["properties"]["limits"]
    # A quantity is a number or a string; no structural type allows 0.5 and "500m":
    # untyped, with the pattern controller-gen gives a quantity's string.
    assert limits["additionalProperties"]["x-kubernetes-preserve-unknown-fields"] is True
    assert limits["additionalProperties"]["pattern"] == CONTROLLER_GEN_QUANTITY
    assert "x-kubernetes-list-type" not in container["properties"]["env"]
    assert "x-kubernetes-list-type" not in container["properties"]["ports"]
    port = container["properties"]["ports"]["items"]["properties"]["containerPort"]
    assert (port["minimum"], port["maximum"]) == (-(2**31), 2**31 - 1)  # the Pod API's int32
    deadline = gen.kubernetes_schema("io.k8s.api.core.v1.PodSpec")["properties"][
        "activeDeadlineSeconds"
    ]
    assert "maximum" not in deadline  # int64: the API server refuses what is beyond it
    assert "default" not in container["properties"]["ports"]["items"]["properties"]["protocol"]
    assert container["properties"]["imagePullPolicy"]["enum"] == ["Always", "IfNotPresent", "Never"]
    pod = gen.kubernetes_schema("io.k8s.api.core.v1.PodSpec")
    assert pod["properties"]["volumes"]["x-kubernetes-list-map-keys"] == ["name"]
    assert "ephemeralContainers" not in pod["properties"]
    assert not any("x-kubernetes-patch" in key for _, node in walk(pod) for key in node)


def _integers(schema: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(schema, dict) or path.endswith(_KUBERNETES_TYPED):
        return  # the Pod API bounds its own fields when the pod is created
    if schema.get("type") == "integer":
        yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _integers(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _integers(schema[key], f"{path}[]")


_KUBERNETES_TYPED = (".template", "launcher.env[]", "launcher.resources")

INT32_RANGE = (-(2**31), 2**31 - 1)


@pytest.mark.parametrize("path", sorted(CRD_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_every_int32_is_bounded_to_its_range(path: Path) -> None:
    """The API server does not check a custom resource's integer ``format``: without
    the bounds a ``containerPort: 4294967296`` was stored, and the job failed only
    when the Pod API could not decode its pod (400)."""
    crd = yaml.safe_load(path.read_text())
    low, high = INT32_RANGE
    for version in crd["spec"]["versions"]:
        nodes = dict(_every_node(version["schema"]["openAPIV3Schema"]))
        int32 = {p: n for p, n in nodes.items() if n.get("format") == "int32"}
        unbounded = [
            p
            for p, n in int32.items()
            if not low <= n.get("minimum", low - 1) <= n.get("maximum", high + 1) <= high
        ]
        assert unbounded == [], f"{path.name}: int32s without int32's bounds: {unbounded}"
        if "tensorboards" not in path.name:  # the job kinds embed a pod template
            assert any(p.endswith(".containers[*].ports[*].containerPort") for p in int32)
        # A bound is a float64 to the API server, compared with an integer as an
        # int64: 2**63-1 becomes 2**63, overflows to -2**63, and refuses every value.
        too_wide = [
            p
            for p, n in nodes.items()
            for key in ("minimum", "maximum")
            if key in n and not -(2**63) <= n[key] < 2**63 - 512
        ]
        assert too_wide == [], f"{path.name}: bounds a float64 cannot hold: {too_wide}"


def test_an_int32_keeps_a_tighter_bound() -> None:
    node = {"type": "integer", "format": "int32", "minimum": 1, "maximum": 2**40}
    kube._bound_int32(node)
    assert (node["minimum"], node["maximum"]) == (1, 2**31 - 1)
    node = {"type": "integer", "format": "int32", "maximum": 100}
    kube._bound_int32(node)
    assert (node["minimum"], node["maximum"]) == (-(2**31), 100)


# -- resource quantities ---------------------------------------------------------------

# The pattern controller-gen puts on every resource.Quantity (Kubeflow's, Volcano's and
# Kueue's CRDs carry it), written out here rather than imported: the CRDs must say this.
CONTROLLER_GEN_QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
QUANTITY_SUFFIXES = (
    # Where the Kubernetes types the CRDs embed hold a resource.Quantity.
    ".resources.limits.*",
    ".resources.requests.*",
    ".overhead.*",
    ".emptyDir.sizeLimit",
    ".ephemeral.volumeClaimTemplate.spec.resources.requests.*",
    ".ephemeral.volumeClaimTemplate.spec.resources.limits.*",
    ".resourceFieldRef.divisor",
)
OWN_QUANTITIES = {"MSJob": ".spec.runPolicy.schedulingPolicy.minResources.*"}
"""Quantities of our own models, by kind."""


def _every_node(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from _every_node(sub, f"{path}.{name}")
    for key, step in (("items", "[*]"), ("additionalProperties", ".*")):
        if isinstance(node.get(key), dict):
            yield from _every_node(node[key], f"{path}{step}")


@pytest.mark.parametrize("info", gen.KINDS, ids=lambda info: info.kind)
def test_every_quantity_refuses_a_malformed_string_and_keeps_numbers(info: Any) -> None:
    schema = schema_of(yaml.safe_load(gen.render(info)))
    nodes = dict(_every_node(schema))
    own = OWN_QUANTITIES.get(info.kind)
    suffixes = QUANTITY_SUFFIXES + ((own,) if own else ())
    quantities = {p: n for p, n in nodes.items() if p.endswith(suffixes)}
    assert any(p.endswith(".resources.limits.*") for p in quantities), sorted(quantities)
    if info.kind in OWN_QUANTITIES:
        assert OWN_QUANTITIES[info.kind] in quantities
    if info.kind != "TensorBoard":  # a pod template: every kind of quantity is there
        for suffix in QUANTITY_SUFFIXES:
            assert any(p.endswith(suffix) for p in quantities), suffix
    for path, node in quantities.items():
        assert node.get("pattern") == CONTROLLER_GEN_QUANTITY, path
        # Untyped, so 2 and 0.5 stay as the Pod API takes them; booleans, maps and
        # lists are refused.
        assert "type" not in node and node["x-kubernetes-preserve-unknown-fields"] is True, path
        assert node["not"] == {"enum": [True, False]}, path
        assert node["maxProperties"] == 0 and node["maxItems"] == 0, path
    # Nothing else carries the pattern: the suffixes above find every quantity.
    assert {p for p, n in nodes.items() if n.get("pattern") == CONTROLLER_GEN_QUANTITY} == set(
        quantities
    )
