"""What the informers do to an object before it is cached: the ``Transform``
type, :func:`strip_managed_fields`, the default :func:`compact_for_cache`,
which also shares the strings every cached object repeats, and
:func:`compact_pod_for_cache`, which first drops what no reader of a cached
pod reads (:func:`transform_for` picks one by resource).

Transforms may change the object in place: it was just decoded and is not
shared yet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from t9k_operator.objects import Obj
from t9k_operator.resources import PODS, Resource

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


# What no reader of a cached pod reads: the operator builds its pods from the
# job and tells a changed one by its labels and annotations, so of a cached
# pod's containers it reads names, images, resources, ports and restart
# policies, never their environment, mounts, commands or probes, nor the pod's
# volumes; these are most of a training pod's bytes (docs/benchmarks.md). Init
# containers keep their environment: a failing set-up container is named by
# the image its environment says it came from (kinds/pods.py).
_UNREAD_OF_A_CONTAINER = (
    "env",
    "envFrom",
    "volumeMounts",
    "volumeDevices",
    "command",
    "args",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
)


def compact_pod_for_cache(obj: Obj) -> Obj:
    """A pod without what no reader of the cache reads (its volumes and its
    containers' environment, mounts, commands and probes; init containers keep
    their environment), then :func:`compact_for_cache`."""
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.pop("volumes", None)
        for key, keep in (("containers", ()), ("initContainers", ("env",))):
            for container in spec.get(key) or ():
                if isinstance(container, dict):
                    for field in _UNREAD_OF_A_CONTAINER:
                        if field not in keep:
                            container.pop(field, None)
    return compact_for_cache(obj)


def transform_for(resource: Resource) -> Transform:
    """The transform the informers of ``resource`` cache through."""
    return compact_pod_for_cache if resource == PODS else compact_for_cache
