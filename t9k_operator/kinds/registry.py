"""Every job kind the operator runs, listed once; and the other kinds it serves.

The controllers (one per kind), the CRD and RBAC generators (``hack/``), the
thread pool's size and the tests' list of kinds all derive from :data:`KINDS`.
To add a kind, see docs/adding-a-kind.md; a kind of another distribution is
listed after the built-ins by its entry point (:mod:`t9k_operator.entry_points`).

:data:`OTHER_CRDS` are the kinds that are not jobs (the TensorBoard a job may
own, which users may also create on their own): each has a controller of its
own, not the job engine's; the CRD generator makes their CRDs with the jobs'
(:func:`served_crds`).
"""

from __future__ import annotations

from typing import Any

from t9k_operator import entry_points
from t9k_operator.api import tensorboard
from t9k_operator.api.crd import CrdInfo
from t9k_operator.kinds.colossalai import ColossalAIKind
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.deepspeed import DeepSpeedKind
from t9k_operator.kinds.msjob import MSJobKind
from t9k_operator.kinds.pytorch import PyTorchKind

KINDS: tuple[JobKind[Any], ...] = (PyTorchKind(), DeepSpeedKind(), ColossalAIKind(), MSJobKind())
# Then the kinds of other distributions: each entry point of the group
# t9k_operator.kinds names a kind's class (docs/adding-a-kind.md).
KINDS += entry_points.plugins(
    entry_points.KINDS, KINDS, make=lambda cls: cls(), names=lambda k: (k.crd.kind, k.crd.name)
)


def crds() -> list[CrdInfo]:
    """The CRD of every kind, in :data:`KINDS` order."""
    return [kind.crd for kind in KINDS]


OTHER_CRDS: tuple[CrdInfo, ...] = (tensorboard.CRD,)
"""The kinds the operator serves that are not jobs."""


def served_crds() -> list[CrdInfo]:
    """Every CRD the operator serves: the job kinds', then :data:`OTHER_CRDS`."""
    return [*crds(), *OTHER_CRDS]


def by_kind(name: str) -> JobKind[Any]:
    """The kind whose CRD's kind is ``name`` (``PyTorchTrainingJob``, ``MSJob``, ...)."""
    for kind in KINDS:
        if kind.crd.kind == name:
            return kind
    raise KeyError(name)
