"""The start-estimate integration with its server: what the registry lists.

:class:`ServedStartEstimate` is the pure integration
(``integrations/start_estimate/integration.py``) plus its server hook
(``reconcilers/serving.py``): the :class:`~.poller.Poller` thread, and the
:class:`~.poller.EstimateStore` it fills, provided to the integration under
its name.

Its servers' modules are imported when the operator builds them, not with
the registry: ``t9k``, which reads the registry for the integrations' status
parts, never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.integrations.start_estimate.integration import StartEstimate
from t9k_operator.resources import WORKLOADS

if TYPE_CHECKING:
    from t9k_operator.reconcilers.serving import Host
    from t9k_operator.runtime.controller import Server


class ServedStartEstimate(StartEstimate):
    """The start-estimate integration, with its poller."""

    def servers(self, host: Host) -> list[Server]:
        from t9k_operator.integrations.start_estimate.poller import EstimateStore, Poller

        ctx = host.ctx
        store = EstimateStore()
        # The jobs' Workloads: the cache the Kueue integration reads (one informer).
        workloads = ctx.informers.informer(WORKLOADS, CHILD_SELECTOR) if self.kueue else None
        poller = Poller(
            ctx.client,
            host.routes,
            host.pods,
            workloads,
            store,
            self.period,
            ctx.is_leader,
            ctx.clock.now,
            ctx.clock.monotonic,
        )
        host.provide(self.name, store)
        return [poller]
