"""Reconcilers: the shared job engine, the kind contract and one module per kind;
and the TensorBoard's controller, which is not a job kind.

:func:`build_controllers` is what the manager calls to get one
:class:`~t9k_operator.runtime.controller.Controller` per kind in
:data:`~t9k_operator.reconcilers.registry.KINDS`, plus the TensorBoard's
(``reconcilers/tensorboard.py``), wired to the informers they need.
"""

from __future__ import annotations

from t9k_operator.reconcilers.gang import NO_GANG_SCHEDULER, GangConfig
from t9k_operator.reconcilers.job import JobReconciler
from t9k_operator.reconcilers.kueue import NO_KUEUE, KueueConfig
from t9k_operator.reconcilers.registry import KINDS, OTHER_CRDS
from t9k_operator.reconcilers.tensorboard import TensorBoardReconciler
from t9k_operator.runtime.controller import Controller, ControllerContext

CONTROLLERS = len(KINDS) + len(OTHER_CRDS)
"""How many controllers :func:`build_controllers` makes (each with its own workers)."""


def build_controllers(
    ctx: ControllerContext, gang: GangConfig = NO_GANG_SCHEDULER, kueue: KueueConfig = NO_KUEUE
) -> list[Controller]:
    """One controller per job kind, all with the operator's gang scheduling and
    Kueue settings, and the TensorBoard's."""
    jobs = [JobReconciler(kind, ctx, gang, kueue).controller for kind in KINDS]
    return [*jobs, TensorBoardReconciler(ctx).controller]
