"""The notifications integration with its deliverer: what the registry lists.

:class:`ServedNotifications` is the pure integration (``integration.py``)
plus its server hook (``reconcilers/serving.py``): the deliverer
(``outbox.py``), provided to the integration under its name, over an
informer of the endpoint Secrets alone (those labelled
``notifications.tensorstack.dev/endpoint=true``).

The metrics are imported with this module, so the operator's metrics hold
their families from the start; the deliverer is imported when it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from t9k_operator.integrations.notifications import metrics as metrics
from t9k_operator.integrations.notifications.channels import SELECTOR
from t9k_operator.integrations.notifications.integration import Notifications
from t9k_operator.resources import SECRETS

if TYPE_CHECKING:
    from t9k_operator.reconcilers.serving import Host
    from t9k_operator.runtime.controller import Server

log = structlog.get_logger(__name__)


class ServedNotifications(Notifications):
    """The notifications integration, with its deliverer."""

    def servers(self, host: Host) -> list[Server]:
        from t9k_operator.integrations.notifications.outbox import Outbox

        secrets = host.ctx.informers.informer(SECRETS, SELECTOR)
        outbox = Outbox(host, secrets, self.options)
        host.provide(self.name, outbox)
        log.info(
            "notifications",
            administrator_namespace=host.namespace,
            give_up_seconds=self.options.give_up,
            queue=self.options.queue,
            backoff_cap_seconds=self.options.backoff_cap,
            console_url=bool(self.options.console_url),
        )
        return [outbox]
