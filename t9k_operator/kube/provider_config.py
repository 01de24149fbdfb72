"""The ``kubernetes`` package's kubeconfig loader, for the users
:mod:`t9k_operator.kube.from_kubeconfig` does not read (an
``auth-provider``), and its configuration for the one stream the HTTP layer
does not speak (port-forwarding: :mod:`t9k_operator.kube.portforward`).

Importing ``kubernetes`` loads its whole generated client (tens of MB), so
this module imports it only inside its functions: a process whose
kubeconfig has no auth-provider never loads it.
"""

from __future__ import annotations

from typing import Any

from t9k_operator.kube.connection import Connection


def _connection(cfg: Any) -> Connection:
    def authorization() -> str | None:
        # The loaders store the token under "BearerToken" (client >= 32) or
        # "authorization" (older); either way the value may lack "Bearer ".
        value = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        if not value:
            return None
        text = str(value)
        return text if text.lower().startswith("bearer ") else f"Bearer {text}"

    return Connection(
        host=str(cfg.host).rstrip("/"),
        ca_file=cfg.ssl_ca_cert,
        cert_file=cfg.cert_file,
        key_file=cfg.key_file,
        verify=bool(cfg.verify_ssl),
        tls_server_name=getattr(cfg, "tls_server_name", None),
        authorization=authorization,
        loaded=cfg,
    )


def load(paths: str, context: str | None) -> Connection:
    """The connection the ``kubernetes`` package's loader makes of the kubeconfig."""
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=paths, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
    return _connection(cfg)


def configuration(connection: Connection) -> Any:
    """The ``kubernetes`` package's configuration for ``connection``: the
    loader's own when it made it, else one with the same server, TLS and
    Authorization header (asked of the connection when it is used)."""
    if connection.loaded is not None:
        return connection.loaded
    from kubernetes import client

    cfg: Any = client.Configuration()
    cfg.host = connection.host
    cfg.ssl_ca_cert = connection.ca_file
    cfg.cert_file = connection.cert_file
    cfg.key_file = connection.key_file
    cfg.verify_ssl = connection.verify
    cfg.tls_server_name = connection.tls_server_name

    def refresh(c: Any) -> None:
        c.api_key["authorization"] = connection.authorization() or ""

    cfg.refresh_api_key_hook = refresh
    cfg.api_key["authorization"] = connection.authorization() or ""
    return cfg
