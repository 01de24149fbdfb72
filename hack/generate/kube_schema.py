"""The Kubernetes types the CRDs embed (a pod template, a container's env and
resources), as structural CRD schemas converted from the pinned API server's
own OpenAPI (``hack/third_party/openapi/core-v1.json``, kept by
:mod:`hack.generate.openapi`): what the Pod API checks, the CRD checks at
admission.

Every field of the type is declared (``kubectl explain`` reaches each, with its
type), but the Pod API's descriptions stay out: ``kubectl explain pod.spec``
has them, and with a copy in every pod template of every kind the CRDs came to
6 MB, past the 1 MiB a Helm release may hold and most of what the API server
keeps and publishes for them. The node that embeds the type keeps its own
description, which says where the type's are (:data:`EXPLAIN`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from t9k_operator.api.schema import QUANTITY, quantity_schema

from .openapi import OUT as OPENAPI

Schema = dict[str, Any]


class SchemaError(ValueError):
    """The model cannot be expressed as a structural CRD schema."""


_KUBE_REF = "#/components/schemas/"
_KUBE_DROP = (
    "description",  # the Pod API's (kubectl explain pod.spec); see the module's docstring
    "default",  # the Pod API defaults when the pod is created; the job keeps what was written
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-unions",
    "x-kubernetes-group-version-kind",
)
_KUBE_LIST_MAPS = {
    # Lists whose keys the Pod API itself requires unique (it refuses a pod that
    # repeats them). Every other list stays atomic: a CRD list-map or set refuses
    # duplicates the Pod API accepts (two env entries of one name, say), which
    # would refuse job files that make valid pods.
    ("io.k8s.api.core.v1.PodSpec", "containers"),
    ("io.k8s.api.core.v1.PodSpec", "initContainers"),
    ("io.k8s.api.core.v1.PodSpec", "volumes"),
}
_KUBE_OMIT = {
    # The Pod API refuses these when a pod is created ("cannot be set on create"),
    # so a template that sets them could never make a pod: refused at admission.
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers"),
}
_KUBE_TEMPLATE_META = {
    # Templates and the metadata fields they take; any other is refused.
    # A pod template takes what controller-gen's embedded ObjectMeta takes (the
    # CRDs of Kubeflow and Kueue): the operator copies labels and annotations to
    # its pods; name, namespace and finalizers are stored, not acted on (the job
    # gets a Warning Event FieldNotActedOn: the pods keep the operator's names,
    # in the job's namespace).
    "io.k8s.api.core.v1.PodTemplateSpec": (
        "name",
        "namespace",
        "labels",
        "annotations",
        "finalizers",
    ),
    # The Pod API refuses any other field in an ephemeral volume's claim template.
    "io.k8s.api.core.v1.PersistentVolumeClaimTemplate": ("labels", "annotations"),
}


EXPLAIN = {
    # Where kubectl explain describes a type's fields, named in the embedding node's
    # description (the embedded schema carries none of the Pod API's).
    "io.k8s.api.core.v1.PodTemplateSpec": "pod",
    "io.k8s.api.core.v1.EnvVar": "pod.spec.containers.env",
    "io.k8s.api.core.v1.ResourceRequirements": "pod.spec.containers.resources",
}


def kubernetes_schema(name: str, path: str = "", openapi: Path = OPENAPI) -> Schema:
    """A Kubernetes definition of the pinned version as a structural CRD schema."""
    schemas = _kube_schemas(openapi)
    if name not in schemas:
        raise SchemaError(f"{path or '<root>'}: {openapi.name} has no definition {name!r}")
    return _kube_definition(schemas, name, path, ())


def _kube_definition(
    schemas: dict[str, Schema], name: str, path: str, seen: tuple[str, ...]
) -> Schema:
    out = _kube_convert(schemas, name, schemas[name], path, seen)
    if name in _KUBE_TEMPLATE_META:
        meta = out["properties"]["metadata"]
        meta["properties"] = {key: meta["properties"][key] for key in _KUBE_TEMPLATE_META[name]}
        if name == "io.k8s.api.core.v1.PodTemplateSpec":
            meta["description"] = (
                "Labels and annotations for every pod made from this template (the "
                "operator adds its own labels). name, namespace and finalizers are "
                "accepted but not acted on: the operator names the pods itself, in the "
                "job's namespace, and the job gets a Warning Event FieldNotActedOn."
            )
    return out


_KUBE_CACHE: dict[Path, dict[str, Schema]] = {}


def _kube_schemas(openapi: Path) -> dict[str, Schema]:
    if openapi not in _KUBE_CACHE:
        _KUBE_CACHE[openapi] = json.loads(openapi.read_text())["schemas"]
    return _KUBE_CACHE[openapi]


def _kube_convert(
    schemas: dict[str, Schema], owner: str, node: Schema, path: str, seen: tuple[str, ...]
) -> Schema:
    node = copy.deepcopy(node)
    ref = node.pop("$ref", None)
    if ref is None and len(node.get("allOf", [])) == 1:
        ref = node.pop("allOf")[0].get("$ref")
    if ref is not None:
        target = ref.removeprefix(_KUBE_REF)
        if target in seen:
            raise SchemaError(f"{path}: {target} refers to itself")
        base = _kube_definition(schemas, target, path, (*seen, target))
        for key, value in node.items():  # the referring field's own keys win
            if key not in _KUBE_DROP:
                base[key] = value
        return base
    if owner == "io.k8s.apimachinery.pkg.util.intstr.IntOrString" and "oneOf" in node:
        return {"x-kubernetes-int-or-string": True}
    if owner == QUANTITY and "oneOf" in node:
        # A number or a string (2, 0.5, "500m", "2Gi"): the Pod API takes all of
        # them, and no structural type does (int-or-string refuses 0.5). Untyped,
        # with value checks: a malformed string ("lots") is refused at admission,
        # naming the field, not when a pod is created (api/schema.py).
        return quantity_schema()
    out: Schema = {}
    for key, value in node.items():
        if key in _KUBE_DROP:
            continue
        if key == "properties":
            out[key] = {
                prop: _kube_field(schemas, owner, prop, sub, f"{path}.{prop}", seen)
                for prop, sub in value.items()
                if (owner, prop) not in _KUBE_OMIT
            }
        elif key == "items":
            out[key] = _kube_convert(schemas, owner, value, f"{path}[*]", seen)
        elif key == "additionalProperties":
            out[key] = _kube_convert(schemas, owner, value, f"{path}.*", seen)
        elif key == "oneOf":
            raise SchemaError(f"{path}: oneOf in {owner} is not structural")
        else:
            out[key] = value
    if "type" not in out and not (
        out.get("x-kubernetes-int-or-string") or out.get("x-kubernetes-preserve-unknown-fields")
    ):
        raise SchemaError(f"{path}: {owner} has no type")
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out["x-kubernetes-preserve-unknown-fields"] = True  # FieldsV1 and the like: opaque
    if out.get("type") == "integer" and out.get("format") == "int32":
        _bound_int32(out)
    return out


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _bound_int32(node: Schema) -> None:
    """``node`` (``type: integer, format: int32``) bounded to int32's range; a bound
    the node already has and that is tighter stays.

    The API server does not check a custom resource's ``format``, and the Pod API
    cannot decode a number beyond its field's int32 (400 when the pod is created):
    with the bounds, a ``containerPort: 4294967296`` is refused at admission,
    naming the field. An ``int64`` needs none, and must get none: a number beyond
    int64 is already refused ("must be of type integer", it decodes as a float),
    and a bound is a float64 to the API server, so 2**63-1 becomes 2**63, which
    overflows to -2**63 when compared with an integer: every value would be
    refused."""
    node["minimum"] = max(node.get("minimum", INT32_MIN), INT32_MIN)
    node["maximum"] = min(node.get("maximum", INT32_MAX), INT32_MAX)


def _kube_field(
    schemas: dict[str, Schema],
    owner: str,
    prop: str,
    node: Schema,
    path: str,
    seen: tuple[str, ...],
) -> Schema:
    out = _kube_convert(schemas, owner, node, path, seen)
    list_type = out.get("x-kubernetes-list-type")
    if list_type in ("map", "set") and (owner, prop) not in _KUBE_LIST_MAPS:
        out.pop("x-kubernetes-list-type")
        out.pop("x-kubernetes-list-map-keys", None)
    return out
