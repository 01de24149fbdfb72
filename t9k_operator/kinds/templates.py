"""A stored job's pod templates: where they are (a kind's patterns, such as
``spec.replicaSpecs[].template``), and what their metadata sets that the
operator stores but does not act on itself or asks of Kueue.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from t9k_operator.api.topology import ANNOTATIONS as TOPOLOGY_ANNOTATIONS
from t9k_operator.kinds.asks import TopologyPlacement

TEMPLATE_METADATA_NOT_ACTED_ON = ("name", "namespace", "finalizers")
"""Pod template metadata the CRDs accept (as controller-gen's embedded ObjectMeta
does) but the operator does not act on: it names the pods itself, in the job's
namespace, and puts no finalizer on them. (Labels and annotations it copies.)"""


def each_at(obj: Any, pattern: str) -> list[tuple[str, Any]]:
    """The nodes at ``pattern`` (dotted; ``[]`` after a part stands for every item
    of a list, ``{}`` for every value of a map), each with its own path
    (``spec.replicaSpecs[0].template``, ``spec.msReplicaSpecs[Worker].template``)."""
    found: list[tuple[str, Any]] = [("", obj)]
    for part in pattern.split("."):
        key, each = (part[:-2], part[-2:]) if part.endswith(("[]", "{}")) else (part, "")
        step = []
        for path, node in found:
            if not isinstance(node, Mapping) or node.get(key) is None:
                continue
            here, value = f"{path}.{key}" if path else key, node[key]
            if each == "[]" and isinstance(value, list):
                step += [(f"{here}[{i}]", item) for i, item in enumerate(value)]
            elif each == "{}" and isinstance(value, Mapping):
                step += [(f"{here}[{k}]", item) for k, item in value.items()]
            elif not each:
                step.append((here, value))
        found = step
    return found


def template_metadata_not_acted_on(obj: Any, templates: Sequence[str]) -> list[str]:
    """The :data:`TEMPLATE_METADATA_NOT_ACTED_ON` fields set in the pod templates at
    ``templates`` (patterns as :func:`each_at` takes them), each by its own path."""
    found = []
    for pattern in templates:
        for path, template in each_at(obj, pattern):
            meta = template.get("metadata") if isinstance(template, Mapping) else None
            if not isinstance(meta, Mapping):
                continue
            found += [
                f"{path}.metadata.{key}"
                for key in TEMPLATE_METADATA_NOT_ACTED_ON
                if meta.get(key) not in (None, "", [])
            ]
    return found


def topology_placement(obj: Any, templates: Sequence[str]) -> TopologyPlacement | None:
    """What the pod templates at ``templates`` ask of Kueue's topology-aware
    placement, named by the first of its annotations; None when none carries one."""
    for pattern in templates:
        for path, template in each_at(obj, pattern):
            meta = template.get("metadata") if isinstance(template, Mapping) else None
            notes = meta.get("annotations") if isinstance(meta, Mapping) else None
            if not isinstance(notes, Mapping):
                continue
            for key in TOPOLOGY_ANNOTATIONS:
                if key in notes:
                    return TopologyPlacement(f"{path}.metadata.annotations[{key}]")
    return None
