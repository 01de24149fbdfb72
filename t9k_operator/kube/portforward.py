"""Port-forwarding to a pod through the API server (``pods/portforward``).

The one stream the raw-JSON client does not speak: the API server forwards a
pod's port over a WebSocket channel protocol, which the ``kubernetes``
package's ``portforward`` implements. Each call opens one WebSocket and gives
back a connected socket to the pod's port; close it when done. That package is
imported when a port is first forwarded (``t9k tensorboard``), never by the
operator.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

from t9k_operator.kube import provider_config
from t9k_operator.kube.connection import Connection
from t9k_operator.kube.errors import TransportError, error_from_response


class PodPort:
    """One forwarded connection: ``socket`` reads and writes the pod's port."""

    def __init__(self, forward: Any, port: int) -> None:
        self._forward = forward
        self.socket: socket.socket = forward.socket(port)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._forward.close()


def open_pod_port(connection: Connection, namespace: str, pod: str, port: int) -> PodPort:
    """A connection to ``port`` of the pod, through the API server."""
    from kubernetes import client as k8s_client
    from kubernetes.client.exceptions import ApiException
    from kubernetes.stream import portforward

    api = k8s_client.CoreV1Api(k8s_client.ApiClient(provider_config.configuration(connection)))
    try:
        forward = portforward(
            api.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port)
        )
    except ApiException as exc:
        if not exc.status:
            raise TransportError(f"port-forward to {namespace}/{pod}: {exc.reason}") from exc
        body = exc.body if isinstance(exc.body, bytes) else str(exc.body or "").encode()
        raise error_from_response(exc.status, body) from exc
    return PodPort(forward, port)
