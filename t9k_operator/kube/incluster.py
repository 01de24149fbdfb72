"""The in-cluster connection: the API server the pod's environment names
(``KUBERNETES_SERVICE_HOST`` and ``_PORT``), the service account's CA and
its token, which kubelet rotates (read again when it changes)."""

from __future__ import annotations

import os

from t9k_operator.kube.connection import Connection
from t9k_operator.kube.tokens import FileToken

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


class InClusterError(Exception):
    """Not in a pod with a service account, or its files cannot be read."""


def available(folder: str = SERVICE_ACCOUNT) -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        os.path.join(folder, "token")
    )


def server_url(host: str, port: str) -> str:
    """``https://host:port``, an IPv6 address in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"https://{host}:{port}"


def load(folder: str = SERVICE_ACCOUNT) -> Connection:
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise InClusterError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set")
    ca = os.path.join(folder, "ca.crt")
    if not os.path.exists(ca):
        raise InClusterError(f"no service account CA at {ca}")
    try:
        token = FileToken(os.path.join(folder, "token"))
    except OSError as exc:
        raise InClusterError(f"cannot read the service account token: {exc.strerror}") from exc
    if not token.read():
        raise InClusterError("the service account token is empty")
    return Connection(host=server_url(host, port), ca_file=ca, authorization=token.authorization)
