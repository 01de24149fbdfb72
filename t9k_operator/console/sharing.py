"""The console's informer transforms: the operator's own (:func:`transform_for`),
then :func:`share_subtrees`, which makes equal parts of the cached objects one
object.

A cached object is mostly small dicts and lists (a pod's conditions, its
containers' resources and states, a job's replica templates, their
environment), and a small dict costs 184 bytes or more before its contents:
the dicts, not the strings, are most of a cached job's 8 KiB. Many of those
parts are equal from one object to the next: the replicas of a job, the jobs
made from one template, the pods of a job, an unchanged part of a job's next
version. :func:`share_subtrees` keeps one of each, so the console holds every
field it read, in less memory; nothing is dropped, every page shows what it
showed.

Sharing relies on the board's rule that a cached object is read, never
changed (:mod:`.board`): a change to a shared part would show in every object
that shares it. Only the console's informers share: the operator's own cache
through :func:`~t9k_operator.informers.transform_for` alone.
"""

from __future__ import annotations

import threading
from typing import Any

from t9k_operator.informers import Transform, transform_for
from t9k_operator.objects import Obj
from t9k_operator.resources import Resource

TABLE_MAX = 20_000
"""Parts remembered to share with, at most; the table is emptied past it (what
is shared stays shared; a later equal part starts a new one). Each entry holds
its part alive, so the table is bounded to bound what it keeps of objects gone."""

_UNSHARED_KEYS = frozenset({"metadata"})
"""Parts never looked up (an object's metadata names it: never equal to
another's), though their own parts are."""


class SubtreeTable:
    """Equal parts, one object each: a dict or a list is keyed by its keys and
    the identities of its (already shared) values, so a lookup costs one tuple
    per part. Thread-safe (the informers transform in their own threads)."""

    def __init__(self, limit: int = TABLE_MAX) -> None:
        self._parts: dict[tuple[Any, ...], Any] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._parts)

    def _one(self, key: tuple[Any, ...], value: Any) -> Any:
        with self._lock:
            found = self._parts.get(key)
            if found is not None:
                return found
            if len(self._parts) >= self._limit:
                self._parts.clear()
            self._parts[key] = value
            return value

    def share(self, value: Any, *, look_up: bool = True) -> Any:
        """``value`` with its equal parts replaced by the ones seen before; a
        new dict or list where a part changed, ``value`` itself never changed."""
        kind = type(value)
        if kind is dict:
            out = {}
            key: list[Any] = ["{"]
            for k, v in value.items():
                shared = self.share(v, look_up=k not in _UNSHARED_KEYS)
                out[k] = shared
                # Strings stand for themselves, anything else for its identity:
                # an equal string is an equal value, while 1, 1.0 and True are
                # equal numbers but different JSON. The table holds each part,
                # so an identity in a key stays that of a live object.
                key += (k, shared if type(shared) is str else id(shared))
            return self._one(tuple(key), out) if look_up else out
        if kind is list:
            items = [self.share(v) for v in value]
            key = ["["]
            key += (v if type(v) is str else id(v) for v in items)
            return self._one(tuple(key), items) if look_up else items
        return value


_TABLE = SubtreeTable()


def share_subtrees(obj: Obj) -> Obj:
    """``obj`` with every part equal to one of another cached object (or of
    its own) made that object; ``obj`` itself and its metadata stay its own."""
    shared: Obj = _TABLE.share(obj, look_up=False)
    return shared


def console_transform(resource: Resource) -> Transform:
    """What the console's informers of ``resource`` cache through: the
    operator's transform for it, then :func:`share_subtrees`."""
    first = transform_for(resource)

    def transform(obj: Obj) -> Obj:
        return share_subtrees(first(obj))

    return transform
