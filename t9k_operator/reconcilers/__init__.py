"""Reconcilers: the pure engine (``engine``), over the job kinds (``t9k_operator.kinds``), the
integrations (``integrations``) and the apply step (``apply``).

:func:`build_controllers` is what the manager calls to get one
:class:`~t9k_operator.runtime.controller.Controller` per kind in
:data:`~t9k_operator.kinds.registry.KINDS`, all with the
integrations the operator's flags turned on, plus the TensorBoard's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog

from t9k_operator.kinds.registry import KINDS, OTHER_CRDS
from t9k_operator.reconcilers.apply import endpoint
from t9k_operator.reconcilers.apply.endpoint import Route
from t9k_operator.reconcilers.apply.job import JobReconciler
from t9k_operator.reconcilers.apply.tensorboard import TensorBoardReconciler
from t9k_operator.reconcilers.engine import DEFAULT_DISRUPTION_LIMIT, DEFAULT_START_TIMEOUT
from t9k_operator.reconcilers.integrations.contract import Integration
from t9k_operator.reconcilers.integrations.progress import JobProgress
from t9k_operator.runtime.controller import Controller, ControllerContext

log = structlog.get_logger(__name__)

CONTROLLERS = len(KINDS) + len(OTHER_CRDS)
"""How many controllers :func:`build_controllers` makes (each with its own workers)."""


def build_controllers(
    ctx: ControllerContext,
    integrations: Sequence[Integration[Any]] = (),
    pod_start_timeout: float = DEFAULT_START_TIMEOUT,
    disruption_limit: int = DEFAULT_DISRUPTION_LIMIT,
    watch_nodes: bool = False,
) -> list[Controller]:
    """One controller per job kind, all with ``integrations``, the start
    timeout of a job that sets none and the disruption limit (and, with
    ``watch_nodes``, the Nodes, to tell a replica on a lost node), and the
    TensorBoard's."""
    reconcilers = [
        JobReconciler(
            kind, ctx, tuple(integrations), pod_start_timeout, disruption_limit, watch_nodes
        )
        for kind in KINDS
    ]
    for integration in integrations:
        if isinstance(integration, JobProgress):
            # The endpoint the replicas report to, served by the manager.
            routes = {
                r.resource.plural: Route(r.resource, r.jobs, r.controller.enqueue_after)
                for r in reconcilers
            }
            try:
                ctx.servers.append(endpoint.serve(ctx, integration, routes, reconcilers[0].pods))
            except Exception as exc:  # its certificate or address: jobs run without it
                log.error(
                    "progress reporting is off: the endpoint cannot start (the replicas are "
                    "told of no endpoint, and no job is judged hung)",
                    error=str(exc),
                )
    return [*(r.controller for r in reconcilers), TensorBoardReconciler(ctx).controller]
