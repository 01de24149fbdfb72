"""Reconcilers: the shared job engine and one thin module per job kind.

:func:`build_controllers` is what the manager calls to get one
:class:`~t9k_operator.controller.Controller` per job kind, wired to the
informers it needs.
"""

from __future__ import annotations

from t9k_operator.controller import Controller, ControllerContext
from t9k_operator.reconcilers.colossalai import ColossalAIKind
from t9k_operator.reconcilers.deepspeed import DeepSpeedKind
from t9k_operator.reconcilers.job import JobReconciler
from t9k_operator.reconcilers.msjob import MSJobKind
from t9k_operator.reconcilers.pytorch import PyTorchKind


def build_controllers(ctx: ControllerContext) -> list[Controller]:
    """One controller per job kind."""
    return [
        JobReconciler(kind, ctx).controller
        for kind in (PyTorchKind(), DeepSpeedKind(), ColossalAIKind(), MSJobKind())
    ]
