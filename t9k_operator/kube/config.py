"""Connection settings: kubeconfig or in-cluster service account.

This module turns whatever the ``kubernetes`` package's config loaders
understand (kubeconfig files with client certificates, tokens, exec plugins;
the in-cluster service-account token that kubelet rotates) into a small
:class:`Connection` our own HTTP layer uses. Only the loaders come from the
``kubernetes`` package; requests do not go through its generated client.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from t9k_operator.kube.errors import ApiError


@dataclass
class Connection:
    host: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True
    tls_server_name: str | None = None
    # Returns the Authorization header value ("Bearer ...") or None; called per
    # request so rotated tokens are picked up.
    authorization: Callable[[], str | None] = field(default=lambda: None)
    # The loaders' own configuration, for the one stream our HTTP layer does not
    # speak (port-forwarding over WebSocket: kube/portforward.py); None when built by hand.
    loaded: Any = None


def _from_configuration(cfg: k8s_client.Configuration) -> Connection:
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


def in_cluster_available() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    )


def load_connection(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """Kubeconfig when one is named or found (``$KUBECONFIG``, ``~/.kube/config``),
    else the in-cluster service account."""
    cfg = k8s_client.Configuration()
    explicit = kubeconfig or os.environ.get("KUBECONFIG")
    default_path = os.path.expanduser("~/.kube/config")
    try:
        if explicit or (not in_cluster_available() and os.path.exists(default_path)):
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=explicit or default_path,
                context=context,
                client_configuration=cfg,
            )
        elif in_cluster_available():
            k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            raise ApiError(
                "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, "
                "or run in a pod with a service account"
            )
    except ApiError:
        raise
    except Exception as exc:  # the loaders raise assorted types
        raise ApiError(f"cannot load Kubernetes configuration: {exc}") from exc
    return _from_configuration(cfg)
