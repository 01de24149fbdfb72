"""The Kueue integration as the operator runs it: the jobs' side
(:class:`~t9k_operator.integrations.kueue.integration.Kueue`, pure) and the
controller of the queued pods that are no job's (``queued.py``), which does
I/O and so is imported only when the operator builds it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from t9k_operator.integrations.kueue.integration import Kueue

if TYPE_CHECKING:
    from t9k_operator.runtime.controller import Controller, ControllerContext


class ServedKueue(Kueue):
    """Kueue for jobs, and for the queued pods that are no job's."""

    def controllers(self, ctx: ControllerContext, peers: Sequence[object]) -> list[Controller]:
        from t9k_operator.integrations.kueue import queued
        from t9k_operator.integrations.kueue.integration import RESOURCE_FLAVORS
        from t9k_operator.reconcilers.pipeline.pod_queue import PodQueue
        from t9k_operator.resources import WORKLOADS

        queue = PodQueue(
            "kueue-pods", ctx, WORKLOADS, queued.workload_name, queued.plan, (RESOURCE_FLAVORS,)
        )
        return [queue.controller]
