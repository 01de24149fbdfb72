"""``t9k console --in-cluster``: the console for everyone, run in a pod behind
a Service (charts/t9k-operator ``console.enabled``, deploy/console).

It holds no rights of its own and reads no kubeconfig: it knows only the API
server's address (``--api-server``, else the pod's ``KUBERNETES_SERVICE_HOST``
and ``_PORT``) and the CA that signs its certificate (``--ca-file``). Each
person signs in with their own token (:mod:`~.signin`) and gets a console of
their own, every request of which carries that token. It listens on
``0.0.0.0`` unless ``--address`` says otherwise, on ``--port`` (default
:data:`~.serve.DEFAULT_PORT`); sessions end after ``--session-hours`` at most.
It logs sign-ins and sign-outs by user name, at info level, as JSON lines on
stderr; never a token, a session id or a request's URL.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading

import structlog
import uvicorn

from t9k_operator.console.board_grants import GRANTS
from t9k_operator.console.identity import person_client
from t9k_operator.console.people import PersonSessions
from t9k_operator.console.signin import SignInConsole
from t9k_operator.kube import incluster

SWEEP_SECONDS = 30.0
DEFAULT_CA = os.path.join(incluster.SERVICE_ACCOUNT, "ca.crt")


def api_server(given: str | None) -> str:
    """``given``, else the API server the pod's environment names."""
    if given:
        return given
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise SystemExit(
            "t9k console --in-cluster: no API server: pass --api-server, or run in a pod"
        )
    return incluster.server_url(host, port)


def info_logs() -> None:
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )


def _sweeping(people: PersonSessions, stop: threading.Event) -> threading.Thread:
    """A thread that ends expired sessions (their informers with them) even
    when nobody asks for anything."""

    def sweep() -> None:
        while not stop.wait(SWEEP_SECONDS):
            people.sweep()
            GRANTS.sweep()  # an ended session's TensorBoard grants hold its token

    thread = threading.Thread(target=sweep, daemon=True, name="console-sweep")
    thread.start()
    return thread


def run(args: argparse.Namespace) -> int:
    from t9k_operator.console.serve import DEFAULT_PORT, address_of, listen, server_config

    info_logs()
    server = api_server(args.api_server)
    ca_file = args.ca_file or DEFAULT_CA
    if not os.path.exists(ca_file):
        raise SystemExit(f"t9k console --in-cluster: no CA file at {ca_file}: pass --ca-file")
    people = PersonSessions()
    app = SignInConsole(
        people,
        lambda token: person_client(server, ca_file, token),
        session_seconds=args.session_hours * 3600,
        secure_cookie=True,
        prometheus_url=args.prometheus_url,
    )
    address = address_of(args)
    sock = listen(address, args.port if args.port is not None else DEFAULT_PORT)
    port = sock.getsockname()[1]
    host = f"[{address}]" if ":" in address else address
    print(f"t9k console (in-cluster) for {server}: http://{host}:{port}/signin", flush=True)
    stop = threading.Event()
    _sweeping(people, stop)
    config = server_config(app)
    try:
        _Server(config, people).run(sockets=[sock])
    finally:
        stop.set()
        people.close()
    return 0


class _Server(uvicorn.Server):
    """uvicorn's server that, on a signal, first ends every session (their
    event streams, else it waits for them)."""

    def __init__(self, config: uvicorn.Config, people: PersonSessions) -> None:
        super().__init__(config)
        self.people = people

    def handle_exit(self, sig: int, frame: object) -> None:
        threading.Thread(target=self.people.close, daemon=True).start()
        super().handle_exit(sig, frame)  # type: ignore[arg-type]
