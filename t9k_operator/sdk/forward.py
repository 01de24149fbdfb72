"""A local port relayed to a pod's port through the API server (``t9k tensorboard``).

:class:`Forwarder` listens on a local address; each connection it accepts
gets a port-forward of its own (``kube.open_pod_port``) and two threads
copying bytes each way, until either side closes.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from t9k_operator import kube
from t9k_operator.sdk import views
from t9k_operator.sdk.errors import NotFound, from_api

TENSORBOARD_PORT = 6006


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class Forwarder:
    """``address:port`` on this machine, relayed to ``pod``'s ``remote_port``."""

    def __init__(
        self,
        connection: kube.Connection,
        namespace: str,
        pod: str,
        remote_port: int,
        address: str = "127.0.0.1",
        port: int = 0,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.connection = connection
        self.namespace = namespace
        self.pod = pod
        self.remote_port = remote_port
        self.on_error = on_error
        self._server = socket.create_server((address, port))
        self.address, self.port = self._server.getsockname()[:2]
        self._closed = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/"

    def check(self) -> None:
        """Open and close one forwarded connection: the API server's refusal
        (no such pod, not running, forbidden) as a typed error, before serving."""
        try:
            kube.open_pod_port(self.connection, self.namespace, self.pod, self.remote_port).close()
        except kube.ApiError as exc:
            raise from_api(exc) from None

    def serve_forever(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def start(self) -> Forwarder:
        threading.Thread(target=self.serve_forever, daemon=True, name="forwarder").start()
        return self

    def _relay(self, client: socket.socket) -> None:
        try:
            remote = kube.open_pod_port(self.connection, self.namespace, self.pod, self.remote_port)
        except kube.ApiError as exc:
            if self.on_error:
                self.on_error(exc.message)
            client.close()
            return
        back = threading.Thread(target=_pump, args=(remote.socket, client), daemon=True)
        back.start()
        _pump(client, remote.socket)
        back.join()
        remote.close()
        client.close()

    def close(self) -> None:
        self._closed.set()
        self._server.close()


def to_tensorboard(
    connection: kube.Connection, tb: Mapping[str, Any], address: str, port: int
) -> Forwarder:
    """A :class:`Forwarder` from ``address:port`` to the TensorBoard's pod's port
    6006; :class:`NotFound` while it has no pod."""
    pod = (tb.get("status") or {}).get("pod")
    if not pod:
        reason = views.reason_of_tensorboard(tb)
        name = tb["metadata"]["name"]
        raise NotFound(f"TensorBoard {name} has no pod yet ({reason})", status=404)
    namespace = tb["metadata"]["namespace"]
    return Forwarder(connection, namespace, pod, TENSORBOARD_PORT, address, port)
