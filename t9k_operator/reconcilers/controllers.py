"""The controllers the manager runs: one per job kind, all with the
integrations the operator's flags turned on, and those the integrations add
(the TensorBoard's); the integrations' servers go to ``ctx.servers``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from t9k_operator.kinds.registry import KINDS, OTHER_CRDS
from t9k_operator.reconcilers import serving
from t9k_operator.reconcilers.engine import DEFAULT_DISRUPTION_LIMIT, DEFAULT_START_TIMEOUT
from t9k_operator.reconcilers.pipeline.contract import Integration
from t9k_operator.reconcilers.pipeline.job import JobReconciler
from t9k_operator.runtime.controller import Controller, ControllerContext

CONTROLLERS = len(KINDS) + len(OTHER_CRDS)
"""How many controllers :func:`build_controllers` makes at most (each with its
own workers): one per job kind, and one per other kind an integration
reconciles (the TensorBoard)."""


def build_controllers(
    ctx: ControllerContext,
    integrations: Sequence[Integration[Any]] = (),
    pod_start_timeout: float = DEFAULT_START_TIMEOUT,
    disruption_limit: int = DEFAULT_DISRUPTION_LIMIT,
    watch_nodes: bool = False,
    namespace: str | None = None,
) -> list[Controller]:
    """One controller per job kind, all with ``integrations``, the start
    timeout of a job that sets none and the disruption limit (and, with
    ``watch_nodes``, the Nodes, to tell a replica on a lost node), and the
    TensorBoard's. The integrations' servers (``namespace``: the operator's
    own, if known) go to ``ctx.servers``, and what they provide to the job
    reconcilers' caches, before any reconcile runs."""
    sources: dict[str, object] = {}
    reconcilers = [
        JobReconciler(
            kind,
            ctx,
            tuple(integrations),
            pod_start_timeout,
            disruption_limit,
            watch_nodes,
            sources=sources,
        )
        for kind in KINDS
    ]
    routes = {
        r.resource.plural: serving.Route(r.resource, r.jobs, r.controller.enqueue_after)
        for r in reconcilers
    }
    host = serving.Host(ctx, routes, reconcilers[0].pods, namespace, sources)
    serving.start(host, integrations)
    return [*(r.controller for r in reconcilers), *serving.controllers(ctx, integrations)]
