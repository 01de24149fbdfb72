"""What the SDK reads from its users before it reaches the cluster: the
manifests to submit, and which served kind (``kinds/registry.py``) a manifest
or a name stands for."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from t9k_operator.api.crd import JobObject
from t9k_operator.kinds.command import Served
from t9k_operator.kinds.registry import by_name, of_object, served
from t9k_operator.sdk.errors import BadJob

Obj = dict[str, Any]


def manifests(source: Any) -> list[Obj]:
    """The manifests in ``source``: YAML or JSON text (several documents, or a
    ``List``), a mapping, a sequence of them, or a model."""
    if isinstance(source, JobObject):
        return [source.to_dict()]
    if isinstance(source, Mapping):
        docs: list[Any] = [source]
    elif isinstance(source, str):
        try:
            docs = [d for d in yaml.safe_load_all(source) if d is not None]
        except yaml.YAMLError as exc:
            raise BadJob(f"not YAML or JSON: {exc}") from None
    else:
        docs = list(source)
    out: list[Obj] = []
    for doc in docs:
        if not isinstance(doc, Mapping):
            raise BadJob("a manifest must be a mapping (apiVersion, kind, metadata, spec)")
        if doc.get("kind") == "List":
            out.extend(manifests(list(doc.get("items") or [])))
        else:
            out.append(dict(doc))
    if not out:
        raise BadJob("no manifest to submit")
    return out


def kind_of(manifest: Mapping[str, Any]) -> Served:
    """The served kind of a manifest; :class:`BadJob` naming those there are."""
    try:
        return of_object(manifest)
    except KeyError:
        known = ", ".join(f"{k.crd.api_version} {k.crd.kind}" for k in served())
        raise BadJob(
            f"not a job this tool runs: {manifest.get('apiVersion')} {manifest.get('kind')} "
            f"(it runs {known})"
        ) from None


def named_kind(name: str) -> Served:
    """The served kind called ``name``; :class:`BadJob` naming those there are."""
    try:
        return by_name(name)
    except KeyError:
        raise BadJob(f"unknown kind {name!r}: {either(k.cli_name for k in served())}") from None


def either(names: Iterable[str]) -> str:
    """``a, b or c``."""
    *rest, last = names
    return f"{', '.join(rest)} or {last}" if rest else last
