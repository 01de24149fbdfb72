"""``t9k console``: watch the cluster, serve the console, print and open its URL.

``--in-cluster`` runs the console for everyone instead (:mod:`~.incluster`).
Otherwise, the user's kubeconfig (``--kubeconfig``, ``--context``, as every
``t9k`` command) reaches the API server through the SDK's client; the
informers start and fill the board before the server listens. The server
listens on ``127.0.0.1`` unless ``--address`` says otherwise, on ``--port``
(default :data:`DEFAULT_PORT`, or any free port when that one is taken). The URL it
prints carries the one-time token; uvicorn's access log is off, so the token
is never written to a log, and neither is the session.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import socket
import sys
import webbrowser
from collections.abc import Callable
from types import FrameType
from typing import Any

import structlog
import uvicorn

from t9k_operator.console.app import create_app
from t9k_operator.console.board import JobBoard
from t9k_operator.console.sessions import Sessions
from t9k_operator.console.watch import ALL_NAMESPACES, watch_jobs
from t9k_operator.sdk import Client
from t9k_operator.sdk.errors import call

DEFAULT_PORT = 8890
LOOPBACK = ("127.0.0.1", "localhost", "::1")
SYNC_SECONDS = 30.0


def listen(address: str, port: int | None) -> socket.socket:
    """A listening socket on ``address``: ``port``, else :data:`DEFAULT_PORT`
    or, when that one is taken, any free port."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    for candidate in [port] if port is not None else [DEFAULT_PORT, 0]:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, candidate))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE and port is None and candidate:
                continue
            raise
        sock.listen(128)
        sock.set_inheritable(True)
        return sock
    raise OSError(errno.EADDRINUSE, "no free port")  # not reached: port 0 is always free


def url_of(address: str, port: int, token: str, https: bool = False) -> str:
    host = "127.0.0.1" if address in ("0.0.0.0", "::") else address
    host = f"[{host}]" if ":" in host else host
    return f"{'https' if https else 'http'}://{host}:{port}/?token={token}"


def allowed_hosts(address: str) -> list[str] | None:
    """The Host headers a console on loopback answers (none else: DNS rebinding);
    ``None`` (any) when it listens beyond loopback."""
    if address not in LOOPBACK:
        return None
    return ["127.0.0.1", "localhost", "[::1]", "::1"]


def address_of(args: argparse.Namespace) -> str:
    """``--address``, else ``127.0.0.1`` (this machine only), or ``0.0.0.0``
    with ``--in-cluster`` (behind a Service)."""
    given: str | None = args.address
    return given or ("0.0.0.0" if getattr(args, "in_cluster", False) else "127.0.0.1")


def quiet_logs() -> None:
    """Warnings and errors only, on stderr: the terminal is the user's, and the
    informers' routine lines (a watch renewed) are not news to them."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )


def server_config(app: Callable[..., Any]) -> uvicorn.Config:
    """uvicorn's settings for a console (either kind): no access log or log
    setup of its own, no lifespan, and one second for streams to end on exit."""
    return uvicorn.Config(
        app,
        access_log=False,
        log_config=None,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )


class _Server(uvicorn.Server):
    """uvicorn's server that, on Ctrl-C, first ends the open event streams
    (else it waits for them, then cancels them with a traceback)."""

    def __init__(self, config: uvicorn.Config, board: JobBoard) -> None:
        super().__init__(config)
        self.board = board

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.board.close()
        super().handle_exit(sig, frame)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "in_cluster", False):
        from t9k_operator.console import incluster

        return incluster.run(args)
    args.address = address_of(args)
    quiet_logs()
    client = Client(args.kubeconfig, args.context, args.namespace)
    board = JobBoard()
    watches = call(lambda: watch_jobs(client.kube, board, client.namespace))
    watches.start()
    try:
        if not watches.wait_for_sync(SYNC_SECONDS):
            print("warning: some jobs are not listed yet; the page adds them as they come")
        where = {
            "all namespaces" if s == ALL_NAMESPACES else f"namespace {s}"
            for scopes in watches.scopes.values()
            for s in scopes
        }
        sessions = Sessions()
        secure = args.secure_cookie or bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
        app = create_app(
            board,
            sessions,
            watches.kinds,
            secure_cookie=secure,
            allowed_hosts=allowed_hosts(args.address),
            reads=client,
            prometheus_url=args.prometheus_url,
        )
        sock = listen(args.address, args.port)
        port = sock.getsockname()[1]
        url = url_of(args.address, port, sessions.token)
        print(f"t9k console: jobs of {', '.join(sorted(where)) or 'no kind'}")
        print(f"Open this URL (it works once; Ctrl-C stops the console):\n    {url}", flush=True)
        if not args.no_browser:
            webbrowser.open(url)
        config = server_config(app)
        _Server(config, board).run(sockets=[sock])
    finally:
        watches.stop()
        client.close()
    sys.stdout.flush()
    return 0
