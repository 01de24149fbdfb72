"""Every job kind the operator runs, listed once; and the other kinds it serves.

The controllers (one per kind), the CRD and RBAC generators (``hack/``), the
thread pool's size and the tests' list of kinds all derive from :data:`KINDS`.
To add a kind, see docs/adding-a-kind.md; a kind of another distribution is
listed after the built-ins by its entry point (:mod:`t9k_operator.entry_points`).

:data:`OTHER_CRDS` are the kinds that are not jobs (the TensorBoard a job may
own, which users may also create on their own): each has a controller of its
own, not the job engine's; the CRD generator makes their CRDs with the jobs'
(:func:`served_crds`).

The t9k command and the SDK find a kind here by its name (:func:`by_name`) or
by an object's apiVersion and kind (:func:`of_object`), among :func:`served`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_operator import entry_points
from t9k_operator.api import tensorboard
from t9k_operator.api.crd import CrdInfo
from t9k_operator.kinds.colossalai import ColossalAIKind
from t9k_operator.kinds.command import OtherKind, Served
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.deepspeed import DeepSpeedKind
from t9k_operator.kinds.genericjob import GenericJobKind
from t9k_operator.kinds.msjob import MSJobKind
from t9k_operator.kinds.pytorch import PyTorchKind
from t9k_operator.kinds.tensorflow import TensorFlowKind

KINDS: tuple[JobKind[Any], ...] = (
    PyTorchKind(),
    DeepSpeedKind(),
    ColossalAIKind(),
    MSJobKind(),
    GenericJobKind(),
    TensorFlowKind(),
)
# Then the kinds of other distributions: each entry point of the group
# t9k_operator.kinds names a kind's class (docs/adding-a-kind.md).
KINDS += entry_points.plugins(
    entry_points.KINDS, KINDS, make=lambda cls: cls(), names=lambda k: (k.crd.kind, k.crd.name)
)


def crds() -> list[CrdInfo]:
    """The CRD of every kind, in :data:`KINDS` order."""
    return [kind.crd for kind in KINDS]


TENSORBOARD = OtherKind("tensorboard", tensorboard.CRD, tensorboard.TensorBoardObject)
"""The TensorBoard, as the t9k command and the SDK name it."""

OTHER_KINDS: tuple[OtherKind, ...] = (TENSORBOARD,)
"""The kinds the operator serves that are not jobs."""

OTHER_CRDS: tuple[CrdInfo, ...] = tuple(kind.crd for kind in OTHER_KINDS)
"""The CRDs of :data:`OTHER_KINDS`."""


def served_crds() -> list[CrdInfo]:
    """Every CRD the operator serves: the job kinds', then :data:`OTHER_CRDS`."""
    return [*crds(), *OTHER_CRDS]


def by_kind(name: str) -> JobKind[Any]:
    """The kind whose CRD's kind is ``name`` (``PyTorchTrainingJob``, ``MSJob``, ...)."""
    for kind in KINDS:
        if kind.crd.kind == name:
            return kind
    raise KeyError(name)


def served() -> tuple[Served, ...]:
    """Every kind the operator serves: the job kinds, then :data:`OTHER_KINDS`."""
    return (*KINDS, *OTHER_KINDS)


def by_name(name: str) -> Served:
    """A served kind by its CLI name, its Kind, its plural, its singular or a
    short name (case-insensitive)."""
    wanted = name.lower()
    for kind in served():
        crd = kind.crd
        if wanted in {kind.cli_name, crd.kind.lower(), crd.plural, crd.singular, *crd.short_names}:
            return kind
    raise KeyError(name)


def of_object(obj: Mapping[str, Any]) -> Served:
    """The served kind of an object, by its apiVersion and kind."""
    for kind in served():
        if obj.get("kind") == kind.crd.kind and obj.get("apiVersion") == kind.crd.api_version:
            return kind
    raise KeyError(f"{obj.get('apiVersion')}/{obj.get('kind')}")


def job_kind_of(obj: Mapping[str, Any]) -> JobKind[Any]:
    """The job kind of an object, by its apiVersion and kind."""
    for kind in KINDS:
        if obj.get("kind") == kind.crd.kind and obj.get("apiVersion") == kind.crd.api_version:
            return kind
    raise KeyError(f"{obj.get('apiVersion')}/{obj.get('kind')}")
