"""The serving certificate of the operator's own HTTPS endpoints, and the
server that uses it.

Two sources, as the operator's flags choose:

- **a directory** holding ``tls.crt``, ``tls.key`` and (optionally) ``ca.crt``,
  as cert-manager or any other issuer writes a Secret mounted there; it is read
  again whenever a file changes, so a renewed certificate is served without a
  restart;
- **a Secret the operator keeps** (the default, with nothing to install): on
  start the operator reads it, and creates or renews it when it is missing,
  does not cover the names the endpoint is reached by, or expires within
  :data:`~t9k_operator.runtime.certs.RENEW_BEFORE`. It holds a CA of the operator's own (``ca.crt``,
  ``ca.key``, ten years) and a serving certificate it signed (``tls.crt``,
  ``tls.key``, one year). Every replica of the operator reads the same Secret,
  so whichever serves a request presents a certificate the same CA signed;
  the CA is kept across renewals, so clients that trust it keep trusting.

The certificates themselves are made and checked by
:mod:`t9k_operator.runtime.certs`, imported when a Secret's certificate is
first read: it loads ``cryptography`` (about 8 MiB of resident memory), which
an operator whose progress endpoint is off never needs for it.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import ssl
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import structlog

from t9k_operator.kube import AlreadyExists, Conflict, KubeClient, NotFound
from t9k_operator.objects import Obj
from t9k_operator.resources import SECRETS
from t9k_operator.runtime import front

log = structlog.get_logger(__name__)

CHECK_EVERY = 600.0
HANDSHAKE_TIMEOUT = 10.0
"""Seconds a client may take over its TLS handshake and its request."""


@dataclass(frozen=True)
class Bundle:
    """A serving certificate and key, and the CA that clients are to trust (PEM)."""

    ca: bytes
    cert: bytes
    key: bytes


def _decoded(secret: Obj) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


def _encoded(files: dict[str, bytes]) -> dict[str, str]:
    return {k: base64.b64encode(v).decode() for k, v in sorted(files.items())}


class SecretSource:
    """The serving certificate kept in a Secret of the operator's (see the module)."""

    def __init__(self, client: KubeClient, namespace: str, name: str, hosts: Sequence[str]) -> None:
        if not hosts:
            raise ValueError("a serving certificate needs at least one host name")
        self.client, self.namespace, self.name, self.hosts = client, namespace, name, list(hosts)

    def load(self) -> Bundle:
        """The certificate in the Secret, created or renewed first when it must be.
        Two replicas renewing at once meet in a conflict: the loser reads the
        winner's Secret."""
        from t9k_operator.runtime.certs import ca_usable, covers, new_ca, new_serving

        for _ in range(5):
            try:
                secret: Obj | None = self.client.get(SECRETS, self.name, self.namespace)
            except NotFound:
                secret = None
            files = _decoded(secret) if secret else {}
            ready = {"ca.crt", "ca.key", "tls.crt", "tls.key"} <= files.keys()
            if ready and covers(files["tls.crt"], self.hosts):
                return Bundle(files["ca.crt"], files["tls.crt"], files["tls.key"])
            if not (ready and ca_usable(files["ca.crt"], files["ca.key"])):
                files["ca.crt"], files["ca.key"] = new_ca("t9k-operator endpoint CA")
            files["tls.crt"], files["tls.key"] = new_serving(
                files["ca.crt"], files["ca.key"], self.hosts
            )
            body: Obj = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": self.name,
                    "namespace": self.namespace,
                    "labels": {"app.kubernetes.io/managed-by": "t9k-operator"},
                },
                "type": "Opaque",
                "data": _encoded(files),
            }
            try:
                if secret is None:
                    self.client.create(SECRETS, body)
                else:
                    body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
                    body["metadata"]["labels"] = {
                        **(secret["metadata"].get("labels") or {}),
                        **body["metadata"]["labels"],
                    }
                    self.client.replace(SECRETS, body)
            except NotFound:
                if secret is None:  # a create: the namespace is missing, not the Secret
                    raise RuntimeError(
                        f"cannot keep the certificate in Secret {self.namespace}/{self.name}: "
                        f"namespace {self.namespace} does not exist"
                    ) from None
                continue  # deleted meanwhile: read again
            except (AlreadyExists, Conflict):
                continue  # another replica wrote it meanwhile: read theirs
            log.info(
                "serving certificate written",
                secret=f"{self.namespace}/{self.name}",
                hosts=self.hosts,
            )
            return Bundle(files["ca.crt"], files["tls.crt"], files["tls.key"])
        raise RuntimeError(f"Secret {self.namespace}/{self.name} keeps changing under us")

    def changed(self, current: Bundle) -> bool:
        """Whether :meth:`load` would now give another certificate (it nears its end)."""
        from t9k_operator.runtime.certs import covers

        return not covers(current.cert, self.hosts)


class DirSource:
    """The serving certificate in a directory (``tls.crt``, ``tls.key``, ``ca.crt``)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._stamp: tuple[float, ...] = ()

    def _files(self) -> list[Path]:
        return [self.path / n for n in ("tls.crt", "tls.key", "ca.crt")]

    def _mtimes(self) -> tuple[float, ...]:
        return tuple(p.stat().st_mtime if p.exists() else 0.0 for p in self._files())

    def load(self) -> Bundle:
        crt, key, ca = self._files()
        self._stamp = self._mtimes()
        cert = crt.read_bytes()
        # Without ca.crt, the certificate is its own trust anchor (self-signed).
        return Bundle(ca.read_bytes() if ca.exists() else cert, cert, key.read_bytes())

    def changed(self, current: Bundle) -> bool:
        return self._mtimes() != self._stamp


class Source(Protocol):
    """What :class:`TLSServer` reads its certificate from."""

    def load(self) -> Bundle: ...

    def changed(self, current: Bundle) -> bool:
        """Whether :meth:`load` would now give another certificate."""
        ...


def context_for(bundle: Bundle) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2 or later) serving ``bundle``."""
    return front.context_for(bundle.cert, bundle.key)


def load_chain(ctx: ssl.SSLContext, bundle: Bundle) -> None:
    front.load_chain(ctx, bundle.cert, bundle.key)


def parse_bind_address(value: str) -> tuple[str, int] | None:
    """``":8080"`` -> ("0.0.0.0", 8080); ``"127.0.0.1:0"`` -> any free port; ``"0"`` -> off."""
    if value in ("0", ""):
        return None
    host, sep, port = value.rpartition(":")
    if not sep:
        raise ValueError(f"bind address must be [host]:port or 0, got {value!r}")
    return (host.strip("[]") or "0.0.0.0", int(port))


class _TLSHTTPServer(ThreadingHTTPServer):
    """Accepts plain connections and does each TLS handshake in the request's
    own thread, so a slow or silent client holds up no other."""

    daemon_threads = True
    # Many replicas connect at once (each report is a connection): socketserver's
    # backlog of 5 would drop their SYNs, each retried only a second later.
    request_queue_size = 128
    ssl_context: ssl.SSLContext

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            tls = self.ssl_context.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError):
            return  # not TLS, or gone: nothing to answer
        try:
            super().finish_request(tls, client_address)
        finally:
            with contextlib.suppress(OSError, ssl.SSLError, ValueError):
                tls.unwrap()

    def shutdown_request(self, request: Any) -> None:
        with contextlib.suppress(OSError):
            request.shutdown(socket.SHUT_WR)
        self.close_request(request)


class Certified:
    """The serving certificate of one server (``name``), from ``source``, looked
    at again every :data:`CHECK_EVERY` seconds once :meth:`watch` is called;
    ``context`` serves the renewed one to new connections, and ``on_renew``
    hears of it."""

    def __init__(self, source: Source, *, name: str, check_every: float = CHECK_EVERY) -> None:
        self.source, self.name, self.check_every = source, name, check_every
        self.bundle = source.load()
        self.context = context_for(self.bundle)
        self._stop = threading.Event()
        self.on_renew: Callable[[Bundle], None] | None = None

    def watch(self) -> None:
        threading.Thread(target=self._watch, name=f"{self.name}-cert", daemon=True).start()

    def reload(self) -> bool:
        """Load the certificate again if its source changed; whether it did."""
        if not self.source.changed(self.bundle):
            return False
        bundle = self.source.load()
        load_chain(self.context, bundle)  # new connections get it; open ones keep theirs
        self.bundle = bundle
        log.info("serving certificate reloaded", server=self.name)
        if self.on_renew is not None:
            self.on_renew(bundle)
        return True

    def _watch(self) -> None:
        while not self._stop.wait(self.check_every):
            try:
                self.reload()
            except Exception as exc:  # the API server away: the next check tries again
                log.warning("cannot reload the serving certificate", error=str(exc))


class TLSServer(Certified):
    """An HTTPS server on ``address`` serving ``handler`` (a thread for each
    connection), its certificate from ``source``."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        source: Source,
        *,
        name: str = "https",
        check_every: float = CHECK_EVERY,
    ) -> None:
        super().__init__(source, name=name, check_every=check_every)
        self.server = _TLSHTTPServer(address, handler)
        self.server.ssl_context = self.context
        self.port: int = self.server.server_address[1]

    def start(self) -> None:
        threading.Thread(
            target=self.server.serve_forever, name=f"{self.name}-serve", daemon=True
        ).start()
        self.watch()

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
