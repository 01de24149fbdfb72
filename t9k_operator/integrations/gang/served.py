"""Gang scheduling as the operator runs it: the jobs' side
(:class:`~t9k_operator.integrations.gang.integration.GangScheduling`, pure)
and, with a gang scheduler that has queues, the controller of the queued pods
that are no job's (``queued.py``), imported only when the operator builds it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from t9k_operator.integrations.gang.integration import GangScheduling

if TYPE_CHECKING:
    from t9k_operator.runtime.controller import Controller, ControllerContext


class ServedGangScheduling(GangScheduling):
    """Gang scheduling for jobs, and queues for the pods that are no job's."""

    def controllers(self, ctx: ControllerContext, peers: Sequence[object]) -> list[Controller]:
        from t9k_operator.integrations.gang import queued
        from t9k_operator.reconcilers.pipeline.pod_queue import PodQueue
        from t9k_operator.reconcilers.pipeline.queued_pods import queuer

        if self.backend is None or self.resource is None or queuer(peers) is not self:
            return []  # no queues, or Kueue queues those pods
        plan = queued.planner(self.backend, self.resource)
        return [PodQueue("gang-pods", ctx, self.resource, queued.group_name, plan).controller]
