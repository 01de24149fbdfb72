"""Real receivers for the notifications' tests: an HTTP server over TCP
(standard library, a thread of the test) whose answers the test scripts, and
an SMTP server (aiosmtpd, from PyPI). Neither mocks the sender: the operator
under test reaches them over the loopback as it would a Slack or a mail relay.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


@dataclass
class Received:
    at: float
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes


@dataclass
class Script:
    """What the receiver answers: ``answers`` one by one (status, headers), then
    200; ``hold`` (when set) keeps each request's answer until it is released."""

    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    hold: threading.Event | None = None


class HttpReceiver:
    def __init__(self, port: int = 0) -> None:
        self.received: list[Received] = []
        self.script = Script()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.received.append(
                        Received(
                            time.monotonic(),
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                        )
                    )
                    answer = receiver.script.answers.pop(0) if receiver.script.answers else None
                    hold = receiver.script.hold
                if hold is not None:
                    hold.wait(120)
                status, headers = answer or (200, {})
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:
                    pass  # the sender went away meanwhile

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook/t0ken"

    def ids(self) -> list[str]:
        with self._lock:
            return [r.headers.get("x-t9k-delivery", "") for r in self.received]

    def close(self) -> None:
        if self.script.hold is not None:
            self.script.hold.set()
        self.server.shutdown()
        self.server.server_close()


class _Mailbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []
        self.over_tls: list[bool] = []  # of each message: whether it came after STARTTLS

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        self.over_tls.append(session.ssl is not None)
        return "250 OK"


class SmtpReceiver:
    """An SMTP server; with ``tls`` (the server's certificate and key) it
    offers STARTTLS and requires it, and with ``login`` (user, password) it
    requires a login (AUTH LOGIN or PLAIN, over TLS only) and keeps the
    mechanisms tried in ``logins``; ``exclude`` names mechanisms not offered."""

    def __init__(
        self,
        port: int,
        tls: ssl.SSLContext | None = None,
        login: tuple[str, str] | None = None,
        exclude: tuple[str, ...] = (),
    ) -> None:
        self.mailbox = _Mailbox()
        self.logins: list[tuple[str, bool]] = []  # (mechanism, accepted)
        extra: dict[str, Any] = {}
        if tls is not None:
            extra.update(tls_context=tls, require_starttls=True)
        if login is not None:
            extra.update(
                auth_required=True,
                auth_require_tls=True,
                auth_exclude_mechanism=list(exclude),
                authenticator=self._authenticator(login),
            )
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=port, **extra)
        self.controller.start()
        self.port = port

    def _authenticator(self, login: tuple[str, str]) -> Callable[..., AuthResult]:
        def check(
            server: Any, session: Any, envelope: Any, mechanism: str, data: Any
        ) -> AuthResult:
            given = (data.login, data.password) if isinstance(data, LoginPassword) else ()
            ok = given == (login[0].encode(), login[1].encode())
            self.logins.append((mechanism, ok))
            return AuthResult(success=ok)

        return check

    @property
    def over_tls(self) -> list[bool]:
        return list(self.mailbox.over_tls)

    @property
    def messages(self) -> list[tuple[str, list[str], bytes]]:
        return list(self.mailbox.messages)

    def close(self) -> None:
        self.controller.stop()


def eventually(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
