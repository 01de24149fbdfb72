"""The network of the operator's pod (incluster.py), as the cluster gives it:
a network namespace of its own, so each replica binds the Deployment's ports,
with the pod's address and the ``kubernetes`` Service's address 10.0.0.1:443
(kubelet's ``KUBERNETES_SERVICE_HOST``/``PORT``, and a name in the API
server's certificate) forwarded to the local API server, as kube-proxy
forwards it. The test reaches the pod's ports with sockets made in the
pod's network namespace, or through a port of this machine forwarded to the
pod's address (:class:`PortForward`, what ``kubectl port-forward`` does).

Needs root and ``ip`` (iproute2).
"""

from __future__ import annotations

import contextlib
import ctypes
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from tests.integration.podhost.host import SERVICE_ENV

SERVICE_IP, SERVICE_PORT = SERVICE_ENV["KUBERNETES_SERVICE_HOST"], 443
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def socket_in(netns: str) -> socket.socket:
    """A TCP socket of the network namespace ``netns`` (``ip netns`` name):
    made by a thread that enters it and then ends, so this process stays
    where it is."""
    box: dict[str, Any] = {}

    def make() -> None:
        try:
            with open(f"/run/netns/{netns}") as f:
                if _libc.setns(f.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {netns}")
            box["sock"] = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=make, name=f"setns-{netns}")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    sock: socket.socket = box["sock"]
    return sock


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


class Forwarder:
    """Each connection accepted on ``listener`` pumped both ways to a
    connection ``dial()`` makes (a refused dial closes the accepted one)."""

    def __init__(self, listener: socket.socket, dial: Callable[[], socket.socket]) -> None:
        self.listener, self.dial = listener, dial
        self.listener.listen(64)
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, name="forwarder", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = self.dial()
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            self.conns += [client, server]
            threading.Thread(target=_pump, args=(client, server), daemon=True).start()
            threading.Thread(target=_pump, args=(server, client), daemon=True).start()

    def close(self) -> None:
        self.listener.close()
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.close()


class ServiceProxy(Forwarder):
    """kube-proxy's part for one pod: 10.0.0.1:443 in the pod's network
    namespace reaches the API server (``upstream``, on this machine)."""

    def __init__(self, netns: str, upstream: tuple[str, int]) -> None:
        listener = socket_in(netns)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((SERVICE_IP, SERVICE_PORT))
        super().__init__(listener, lambda: socket.create_connection(upstream, timeout=10))


class PortForward(Forwarder):
    """``kubectl port-forward``'s part: a free port of this machine's
    127.0.0.1 (:attr:`port`) reaching ``port`` of the pod's address ``ip``
    in its network namespace ``netns``."""

    def __init__(self, netns: str, ip: str, port: int) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        self.port: int = listener.getsockname()[1]

        def dial() -> socket.socket:
            sock = socket_in(netns)
            sock.settimeout(10)
            try:
                sock.connect((ip, port))
            except OSError:
                sock.close()
                raise
            return sock

        super().__init__(listener, dial)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class PodNetwork:
    """The network namespace ``name`` of one pod, its address ``ip`` (only
    its own network sees it), the Service's address forwarded to
    ``api_server``; and requests to the pod's ports from inside it."""

    def __init__(self, name: str, ip: str, api_server: tuple[str, int]) -> None:
        self.name, self.ip = name, ip
        _ip("netns", "add", name)
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "addr", "add", f"{SERVICE_IP}/32", "dev", "lo")
        _ip("-n", name, "addr", "add", f"{ip}/32", "dev", "lo")
        self.proxy = ServiceProxy(name, api_server)

    def get(self, port: int, path: str) -> tuple[int, str]:
        """An HTTP GET to the pod's ``port``: the status and the body."""
        sock = socket_in(self.name)
        sock.settimeout(3)
        with sock:
            sock.connect(("127.0.0.1", port))
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
            chunks = []
            while data := sock.recv(65536):
                chunks.append(data)
        head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
        return int(head.split()[1]), body.decode()

    def post_tls(self, port: int, ca: bytes, host: str, path: str) -> tuple[int, bytes]:
        """An HTTPS POST (no body) to the pod's ``port``, the server's
        certificate checked against ``ca`` for the name ``host``: the status,
        and the certificate the server presented (DER)."""
        ctx = ssl.create_default_context(cadata=ca.decode())
        sock = socket_in(self.name)
        sock.settimeout(5)
        sock.connect(("127.0.0.1", port))
        with ctx.wrap_socket(sock, server_hostname=host) as tls:
            cert = tls.getpeercert(binary_form=True) or b""
            tls.sendall(
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n"
                "Connection: close\r\n\r\n".encode()
            )
            chunks = []
            while data := tls.recv(65536):
                chunks.append(data)
        return int(b"".join(chunks).split()[1]), cert

    def pids(self) -> list[int]:
        """The processes in the namespace (``ip netns pids``)."""
        out = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True)
        return [int(pid) for pid in out.stdout.split()]

    def close(self) -> None:
        self.proxy.close()
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
