"""Reconcilers: the shared job engine, the kind contract and one module per kind.

:func:`build_controllers` is what the manager calls to get one
:class:`~t9k_operator.runtime.controller.Controller` per kind in
:data:`~t9k_operator.reconcilers.registry.KINDS`, wired to the informers it needs.
"""

from __future__ import annotations

from t9k_operator.reconcilers.gang import NO_GANG_SCHEDULER, GangConfig
from t9k_operator.reconcilers.job import JobReconciler
from t9k_operator.reconcilers.kueue import NO_KUEUE, KueueConfig
from t9k_operator.reconcilers.registry import KINDS
from t9k_operator.runtime.controller import Controller, ControllerContext


def build_controllers(
    ctx: ControllerContext, gang: GangConfig = NO_GANG_SCHEDULER, kueue: KueueConfig = NO_KUEUE
) -> list[Controller]:
    """One controller per job kind, all with the operator's gang scheduling and
    Kueue settings."""
    return [JobReconciler(kind, ctx, gang, kueue).controller for kind in KINDS]
