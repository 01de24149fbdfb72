"""The kinds the SDK and the CLI work with, from the CRDs' own models (``api/``).

One :class:`Kind` per job kind (and the TensorBoard): its CLI name, its REST
resource, its pydantic object model, whether it pauses, and how to read the
replicas (type, count, pod template) its spec asks for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from t9k_operator.api import colossalai, deepspeed, msjob, pytorch, tensorboard
from t9k_operator.api.crd import CrdInfo, JobObject
from t9k_operator.resources import Resource

Spec = Mapping[str, Any]
Replicas = list[tuple[str, int, Mapping[str, Any]]]
"""(replica type, count, pod template) for each replica type a spec asks for."""


@dataclass(frozen=True)
class Kind:
    name: str
    """The CLI's name: pytorch, deepspeed, colossalai, mindspore, tensorboard."""
    crd: CrdInfo
    model: type[JobObject[Any, Any]]
    pausable: bool
    replicas: Callable[[Spec], Replicas]

    @property
    def kind(self) -> str:
        return self.crd.kind

    @property
    def resource(self) -> Resource:
        return Resource(self.crd.group, self.crd.version, self.crd.plural, self.crd.kind)


def _template(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pytorch(spec: Spec) -> Replicas:
    return [
        (str(r.get("type", "")), int(r.get("replicas", 1)), _template(r.get("template")))
        for r in spec.get("replicaSpecs") or []
    ]


def _workers(spec: Spec) -> Replicas:
    worker = spec.get("worker") or {}
    return [("worker", int(worker.get("replicas", 1)), _template(worker.get("template")))]


def _colossalai(spec: Spec) -> Replicas:
    launcher = spec.get("launcher") or {}
    container = {"name": "launcher", "resources": launcher.get("resources") or {}}
    return [("launcher", 1, {"spec": {"containers": [container]}}), *_workers(spec)]


def _msjob(spec: Spec) -> Replicas:
    roles = spec.get("msReplicaSpecs") or {}
    return [
        (str(role), int(r.get("replicas", 1)), _template(r.get("template")))
        for role, r in roles.items()
        if isinstance(r, Mapping)
    ]


KINDS: tuple[Kind, ...] = (
    Kind("pytorch", pytorch.CRD, pytorch.PyTorchTrainingJobObject, True, _pytorch),
    Kind("deepspeed", deepspeed.CRD, deepspeed.DeepSpeedJobObject, True, _workers),
    Kind("colossalai", colossalai.CRD, colossalai.ColossalAIJobObject, True, _colossalai),
    Kind("mindspore", msjob.CRD, msjob.MSJobObject, False, _msjob),
)
"""The job kinds, in the order ``t9k list`` shows them."""

TENSORBOARD = Kind(
    "tensorboard", tensorboard.CRD, tensorboard.TensorBoardObject, False, lambda spec: []
)


def by_name(name: str) -> Kind:
    """A kind by its CLI name, its Kind, its plural or a short name (case-insensitive)."""
    wanted = name.lower()
    for kind in (*KINDS, TENSORBOARD):
        names = {kind.name, kind.kind.lower(), kind.crd.plural, kind.crd.singular}
        if wanted in names or wanted in kind.crd.short_names:
            return kind
    raise KeyError(name)


def of_object(obj: Mapping[str, Any]) -> Kind:
    """The kind of a manifest, by its apiVersion and kind."""
    for kind in (*KINDS, TENSORBOARD):
        if obj.get("kind") == kind.kind and obj.get("apiVersion") == kind.crd.api_version:
            return kind
    raise KeyError(f"{obj.get('apiVersion')}/{obj.get('kind')}")
