"""Kubernetes objects as the operator handles them: JSON-shaped dicts, exactly
what the API server sends (camelCase keys), never client-library models.

Also the facts about such objects that every layer reads the same way: an
object's key (``namespace/name``), its controller ownerReference, the
ownerReference a child gets, a pod (template)'s training container, and the
``metav1.Time`` format of timestamps; and :func:`copy_tree`, the copy of
such an object to change."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
"""One object (or any JSON object inside one)."""
ObjList = list[Obj]
"""Objects, as a list returns them."""


def copy_tree(value: Any) -> Any:
    """A copy of a JSON-shaped ``value`` to change: its dicts and lists copied
    (as plain dicts and lists), the rest (strings, numbers, booleans, None:
    immutable) shared. What ``copy.deepcopy`` gives for such a tree, several
    times faster (it looks up how to copy each value and remembers every one
    it copied)."""
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""``metav1.Time`` as the API server writes it: RFC 3339, seconds, UTC."""


def digest(text: str) -> bytes:
    """A 16-byte fingerprint of ``text``, kept in place of the text where only
    equality matters (the last status written, an Event's correlation keys):
    a few dozen bytes per job instead of the text (docs/benchmarks.md, "Memory")."""
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def format_time(ts: datetime) -> str:
    """``ts`` as a ``metav1.Time`` (:data:`TIME_FORMAT`); an aware time is
    turned to UTC first, a naive one is taken to be UTC already."""
    return (ts.astimezone(UTC) if ts.tzinfo is not None else ts).strftime(TIME_FORMAT)


def parse_time(value: Any) -> datetime | None:
    """A timestamp as objects hold it (``metav1.Time``, or a ``MicroTime`` with
    fractions of a second), as an aware datetime; None when empty or malformed."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def make_key(namespace: str | None, name: str) -> str:
    """The key of the object ``name`` in ``namespace`` (``None``/"" = cluster-scoped)."""
    return f"{namespace}/{name}" if namespace else name


def object_key(obj: Mapping[str, Any]) -> str:
    """``"namespace/name"``, or ``"name"`` for a cluster-scoped object."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("object has no metadata.name; cannot compute its key")
    return make_key(meta.get("namespace"), str(name))


def controller_ref(obj: Mapping[str, Any]) -> Obj | None:
    """The object's ownerReference with ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def owner_reference(api_version: str, kind: str, name: str, uid: str) -> Obj:
    """The ownerReference a child gets from the object that controls it: the
    garbage collector deletes the child with it, and foreground deletion of the
    owner waits for the child."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def training_container_index(template: Mapping[str, Any], names: Sequence[str]) -> int:
    """The index of a pod (template)'s training container: the first of
    ``names`` (the kind's conventional ones) found, in that order, else 0."""
    containers = (template.get("spec") or {}).get("containers") or []
    for wanted in names:
        for i, c in enumerate(containers):
            if c.get("name") == wanted:
                return i
    return 0


def training_container(template: Mapping[str, Any], names: Sequence[str]) -> Obj | None:
    """A pod (template)'s training container (:func:`training_container_index`),
    to be read or edited in place; None when it has no containers."""
    containers = (template.get("spec") or {}).get("containers") or []
    return containers[training_container_index(template, names)] if containers else None
