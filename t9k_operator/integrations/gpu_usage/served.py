"""The gpu-usage integration with its server: what the registry lists.

:class:`ServedGPUUsage` is the pure integration
(``integrations/gpu_usage/integration.py``) plus its server hook
(``reconcilers/serving.py``): the watch (``integrations/gpu_usage/watch.py``),
which provides the integration, under its name, the verdicts it keeps.

The watch's metrics (``metrics.py``) are imported with this module, so the
operator's metrics hold their families from the start, empty while the
integration is off; the watch itself is imported when it is built, so
``t9k``, which reads the registry for the integrations' status parts, never
loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from t9k_operator.integrations.gpu_usage.integration import GPUUsage
from t9k_operator.integrations.gpu_usage.metrics import IDLE_GAUGE, Verdicts

if TYPE_CHECKING:
    from t9k_operator.reconcilers.serving import Host
    from t9k_operator.runtime.controller import Server

log = structlog.get_logger(__name__)


class ServedGPUUsage(GPUUsage):
    """The gpu-usage integration, with its watch."""

    def servers(self, host: Host) -> list[Server]:
        from t9k_operator.integrations.gpu_usage.watch import GPUWatch

        verdicts = Verdicts()
        IDLE_GAUGE.verdicts = verdicts
        host.provide(self.name, verdicts)
        opts = self.options
        log.info(
            "GPU usage watch",
            prometheus=opts.url,
            threshold=opts.threshold,
            window_seconds=opts.window,
            period_seconds=opts.period,
        )
        return [GPUWatch(host, opts, verdicts)]
