"""What the informers do to an object before it is cached: the ``Transform``
type, :func:`strip_managed_fields`, and the default :func:`compact_for_cache`,
which also shares the strings every cached object repeats.

Transforms may change the object in place: it was just decoded and is not
shared yet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from t9k_operator.objects import Obj

Transform = Callable[[Obj], Obj]


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop ``metadata.managedFields`` (in place) and return ``obj``."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


# Strings up to this length are shared between cached objects: field names,
# phases, images, label values. Longer ones (commands, annotations) rarely repeat.
_SHARED_STRING_MAX = 64


def _shared(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        # A dict's values are tested here rather than in a call each: most are
        # strings or scalars, and a call per value was two thirds of the time.
        out = {}
        intern = sys.intern
        for k, v in value.items():
            vkind = type(v)
            if vkind is str:
                out[intern(k)] = intern(v) if len(v) <= _SHARED_STRING_MAX else v
            elif vkind is dict or vkind is list:
                out[intern(k)] = _shared(v)
            else:
                out[intern(k)] = v
        return out
    if kind is list:
        return [_shared(v) for v in value]
    if kind is str and len(value) <= _SHARED_STRING_MAX:
        return sys.intern(value)
    return value


def compact_for_cache(obj: Obj) -> Obj:
    """Default transform: :func:`strip_managed_fields`, then a copy of ``obj``
    whose field names and short strings are shared with every other cached
    object. Each watch event is decoded on its own, so without this every
    cached pod holds its own copy of ``"metadata"``, ``"Running"``, its image
    name and so on: sharing them takes a third to a half off the cache
    (docs/benchmarks.md). Interned strings are freed with their last object."""
    result: Obj = _shared(strip_managed_fields(obj))
    return result
