"""A pydantic model's JSON schema as a *structural* CRD schema, the shape the
API server demands for pruning, defaulting and CEL: ``$ref`` inlined, an
optional field's ``anyOf`` with null reduced to its type, ``const`` made a
one-value ``enum``, titles dropped, a node marked with a Kubernetes
definition replaced by that type's schema (:mod:`.kube_schema`) with the
model's own keys laid over it. The rules in full are in
:mod:`hack.generate.crds`."""

from __future__ import annotations

import copy
from typing import Any

from t9k_operator.api.schema import KUBERNETES_SCHEMA, NOT_REQUIRED

from .kube_schema import EXPLAIN, Schema, SchemaError, kubernetes_schema

__all__ = ["Schema", "SchemaError", "check_structural", "structural"]

_DROP_KEYS = ("title",)


def structural(model_schema: Schema) -> Schema:
    """A pydantic JSON schema (``model_json_schema(by_alias=True)``) as a CRD schema."""
    defs: dict[str, Schema] = model_schema.get("$defs", {})
    root = {k: v for k, v in model_schema.items() if k != "$defs"}
    return _convert(root, defs, path="")


def _convert(node: Schema, defs: dict[str, Schema], path: str) -> Schema:
    node = copy.deepcopy(node)
    if KUBERNETES_SCHEMA in node:
        return _convert_kubernetes(node, defs, path)
    if "$ref" in node:
        target = _resolve(node.pop("$ref"), defs)
        return _overlay(_convert(target, defs, path), node)
    if "allOf" in node and len(node["allOf"]) == 1:
        inner = node.pop("allOf")[0]
        return _overlay(_convert(inner, defs, path), node)
    if "anyOf" in node:
        members = [m for m in node.pop("anyOf") if m.get("type") != "null"]
        if len(members) != 1:
            raise SchemaError(f"{path or '<root>'}: a union is not a structural schema")
        if node.get("default", "absent") is None:
            del node["default"]
        return _overlay(_convert(members[0], defs, path), node)
    for key in ("oneOf", "not", "$defs"):
        if key in node:
            raise SchemaError(f"{path or '<root>'}: {key!r} is not supported in a CRD schema")

    out: Schema = {}
    for key, value in node.items():
        if key in _DROP_KEYS:
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out["properties"] = {
                name: _convert(sub, defs, f"{path}.{name}") for name, sub in value.items()
            }
        elif key == "items":
            out["items"] = _convert(value, defs, f"{path}[*]")
        elif key == "additionalProperties":
            if value is True:
                # dict[str, Any]: keep everything under it (pod templates).
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(value, dict):
                out["additionalProperties"] = _convert(value, defs, f"{path}.*")
        elif key == "default" and value is None:
            continue
        else:
            out[key] = value
    if "type" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out.update(_implied_type(out, path))
    return out


def _convert_kubernetes(node: Schema, defs: dict[str, Schema], path: str) -> Schema:
    """A node marked with a Kubernetes definition: that type's schema, with what
    the model adds laid over it; its description says where kubectl explain
    describes the type's fields (the schema carries none of the Pod API's)."""
    name = node.pop(KUBERNETES_SCHEMA)
    base = kubernetes_schema(name, path)
    # The model's own shape of the node (dict[str, Any], list[dict]) gives way
    # to the Kubernetes type; what the model adds is laid over it.
    for key in ("type", "additionalProperties", "x-kubernetes-preserve-unknown-fields"):
        node.pop(key, None)
    if isinstance(node.get("items"), dict):
        node["items"] = {
            k: v for k, v in node["items"].items() if k not in ("type", "additionalProperties")
        }
    out = _lay_over(base, _convert_overlay(node, defs, path), path)
    if name in EXPLAIN and out.get("description"):
        out["description"] += f" kubectl explain {EXPLAIN[name]} describes its fields."
    return out


def _implied_type(out: Schema, path: str) -> Schema:
    """The type of a converted node pydantic gave none: an enum's, an object's,
    or, for a node of unknown shape (Any), none but kept whole."""
    if "enum" in out:
        return {"type": _enum_type(out["enum"], path)}
    if "properties" in out:
        return {"type": "object"}
    if set(out) <= {"description", "default", "x-kubernetes-validations"}:
        return {"x-kubernetes-preserve-unknown-fields": True}
    raise SchemaError(f"{path or '<root>'}: no type")


def _convert_overlay(node: Schema, defs: dict[str, Schema], path: str) -> Schema:
    """The keys a model lays over a Kubernetes type, converted; no type of its own."""
    out: Schema = {}
    for key, value in node.items():
        if key in _DROP_KEYS or (key == "default" and value is None):
            continue
        if key == "properties":
            out[key] = {n: _convert_overlay(sub, defs, f"{path}.{n}") for n, sub in value.items()}
        elif key == "items":
            out[key] = _convert_overlay(value, defs, f"{path}[*]")
        elif key in ("additionalProperties", "x-kubernetes-preserve-unknown-fields"):
            continue  # "kept as written" in the model's words: the Kubernetes type decides
        else:
            out[key] = value
    return out


def _lay_over(base: Schema, over: Schema, path: str) -> Schema:
    """``base`` (a Kubernetes type) with a model's keys on top: descriptions and limits
    replace, ``required`` and CEL rules add up, properties and items recurse. A
    property the Kubernetes type lacks is an error in the model. ``NOT_REQUIRED``
    takes names out of ``required``; ``x-kubernetes-list-type: atomic`` makes a
    list-map a plain list (its key no longer required)."""
    for key, value in over.items():
        if key == "properties":
            props = base.setdefault("properties", {})
            for name, sub in value.items():
                if name not in props:
                    raise SchemaError(f"{path}.{name}: not a field of the Kubernetes type")
                props[name] = _lay_over(props[name], sub, f"{path}.{name}")
        elif key == "items":
            base["items"] = _lay_over(base["items"], value, f"{path}[*]")
        elif key == "required":
            base["required"] = sorted({*base.get("required", []), *value})
        elif key == NOT_REQUIRED:
            # A kind that names what the Kubernetes type requires (an MPIJob's one
            # nameless container is its mpi-worker) lets it be left out.
            kept = [name for name in base.get("required", []) if name not in value]
            base.pop("required", None)
            if kept:
                base["required"] = kept
        elif key == "x-kubernetes-list-type" and value == "atomic":
            base[key] = value
            base.pop("x-kubernetes-list-map-keys", None)
        elif key == "x-kubernetes-validations":
            base[key] = [*base.get(key, []), *value]
        elif key == "type" and value != base.get("type"):
            raise SchemaError(f"{path}: the model says {value}, Kubernetes {base.get('type')}")
        else:
            base[key] = value
    return base


def _overlay(base: Schema, wrapper: Schema) -> Schema:
    """``base`` with the node-level keys of its wrapper: the field's description and
    default win over the model's, CEL rules of both apply, other keys (field-level
    ``json_schema_extra``) are added."""
    for key, value in wrapper.items():
        if key in _DROP_KEYS:
            continue
        if key == "x-kubernetes-validations":
            base[key] = [*base.get(key, []), *value]
        else:
            base[key] = value
    return base


def _resolve(ref: str, defs: dict[str, Schema]) -> Schema:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix) :] not in defs:
        raise SchemaError(f"unresolvable $ref {ref!r}")
    return defs[ref[len(prefix) :]]


def _enum_type(values: list[Any], path: str) -> str:
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return "string"
    if kinds == {int}:
        return "integer"
    if kinds == {bool}:
        return "boolean"
    raise SchemaError(f"{path}: enum of mixed types")


def check_structural(node: Schema, path: str = "") -> None:
    """Fail loudly on anything the API server would refuse as non-structural."""
    for key in ("$ref", "anyOf", "allOf", "oneOf", "title", "$defs"):
        if key in node:
            raise SchemaError(f"{path or '<root>'}: {key!r} left in the schema")
    untyped_ok = ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string")
    if "type" not in node and not any(node.get(key) for key in untyped_ok):
        raise SchemaError(f"{path or '<root>'}: no type")
    for name, sub in node.get("properties", {}).items():
        check_structural(sub, f"{path}.{name}")
    if "items" in node:
        check_structural(node["items"], f"{path}[*]")
    if isinstance(node.get("additionalProperties"), dict):
        check_structural(node["additionalProperties"], f"{path}.*")
