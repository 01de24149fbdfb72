"""The progress integration with its server: what the registry lists.

:class:`ServedProgress` is the pure integration
(``integrations/progress/integration.py``) plus its server hook
(``reconcilers/serving.py``): from its flags it builds the endpoint, its
certificate loaded (created in its Secret when it must be), and provides the
integration, under its name, the
:class:`~t9k_operator.integrations.progress.store.Reporting` the endpoint
fills. An endpoint that cannot start (its certificate, its address) is said
in the log and the jobs run without it: their replicas are told of no
endpoint, and no job is judged hung.

Its servers' modules are imported when the operator builds them, not with
the registry: ``t9k``, which reads the registry for the integrations' status
parts, never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from t9k_operator.integrations.progress.integration import EndpointOptions, JobProgress

if TYPE_CHECKING:
    from t9k_operator.integrations.progress.server import ProgressServer
    from t9k_operator.integrations.progress.store import Reporting
    from t9k_operator.reconcilers.serving import Host
    from t9k_operator.runtime.controller import Server
    from t9k_operator.runtime.tls import Bundle, Source

log = structlog.get_logger(__name__)

DEFAULT_NAMESPACE = "t9k-system"
"""The Service's namespace when neither the flag nor the operator's own tells."""


class ServedProgress(JobProgress):
    """The progress integration, serving its endpoint."""

    def servers(self, host: Host) -> list[Server]:
        if self.options is None:
            return []
        try:
            server, reporting = serve(host, self.options)
        except Exception as exc:  # its certificate or address: jobs run without it
            log.error(
                "progress reporting is off: the endpoint cannot start (the replicas are "
                "told of no endpoint, and no job is judged hung)",
                error=str(exc),
            )
            return []
        host.provide(self.name, reporting)
        return [server]


def serve(host: Host, opts: EndpointOptions) -> tuple[ProgressServer, Reporting]:
    """The endpoint ``opts`` describe, built (the manager starts it), and what
    it provides the integration."""
    from t9k_operator.integrations.progress.endpoint import ProgressEndpoint
    from t9k_operator.integrations.progress.pods import Settings
    from t9k_operator.integrations.progress.server import ProgressServer
    from t9k_operator.integrations.progress.store import Coalescer, ProgressStore, Reporting
    from t9k_operator.runtime.tls import DirSource, SecretSource, parse_bind_address

    ctx = host.ctx
    namespace = opts.namespace or host.namespace or DEFAULT_NAMESPACE
    source: Source = (
        DirSource(opts.cert_dir)
        if opts.cert_dir
        else SecretSource(ctx.client, namespace, opts.cert_secret, opts.hosts(namespace))
    )
    address = parse_bind_address(opts.bind_address)
    if address is None:
        raise ValueError("the progress endpoint has no address")
    store = ProgressStore()
    endpoint = ProgressEndpoint(
        ctx.client,
        host.routes,
        host.pods,
        store,
        Coalescer(),
        opts.audience,
        is_leader=ctx.is_leader,
        qps=opts.qps,
        burst=opts.burst,
        clock=ctx.clock,
    )
    server = ProgressServer(address, endpoint, source, name="progress")
    reporting = Reporting(
        Settings(opts.base_url(namespace), opts.audience), store, server.bundle.ca.decode()
    )

    def renewed(bundle: Bundle) -> None:
        reporting.ca = bundle.ca.decode()

    server.on_renew = renewed
    log.info(
        "progress endpoint",
        address=f"{address[0]}:{server.port}",
        url=opts.base_url(namespace),
        audience=opts.audience,
    )
    return server, reporting
