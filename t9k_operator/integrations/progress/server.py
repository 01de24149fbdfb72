"""The progress endpoint's HTTPS server: its front in a process of its own,
the answers in the operator's.

Each reporting process keeps its connection open between reports, so the
endpoint holds as many connections as there are processes reporting, ten
thousand or more, and their TLS and HTTP cost most of the endpoint's CPU.
:class:`ProgressServer` binds the address here (so a port in use is the
operator's error at start), then runs ``runtime/front.py`` in a process of its own
with that socket: its event loop holds the connections and hands each
request over a local channel. :meth:`ProgressServer.start` returns once
the front says it serves. Here one thread reads the channel and answers
(:meth:`ProgressEndpoint.handle`) at once when the token's review is
remembered, or through a few threads when the API server must review it.
So the reconcile workers share their interpreter with a few microseconds a
report, not with the connections.

The certificate is the same as any of the operator's servers
(``runtime/tls.Certified``); the front gets it at its start and each renewed
one (served to new connections). A front that exits is started again (the
socket stays bound here, so reporters wait in its backlog); it exits when
the operator closes the channel, or dies.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.integrations.progress.endpoint import (
    IDLE_TIMEOUT,
    MAX_BODY,
    RANK_HEADER,
    ProgressEndpoint,
)
from t9k_operator.runtime import front
from t9k_operator.runtime.tls import CHECK_EVERY, HANDSHAKE_TIMEOUT, Bundle, Certified, Source

log = structlog.get_logger(__name__)

BACKLOG = 1024
"""Connections waiting to be accepted (many replicas start at once)."""
HANDLERS = 4
"""Threads answering requests whose token the API server must review."""
HEADERS = ("authorization", RANK_HEADER.lower())
"""The request headers the endpoint reads (the front passes only these)."""
RESTART_AFTER = (1.0, 30.0)
"""Seconds before a front that exited is started again: the first, the longest."""
START_TIMEOUT = 10.0
"""Seconds :meth:`ProgressServer.start` waits for the first front to serve."""


class ProgressServer(Certified):
    """``endpoint`` served over HTTPS on ``address`` by a front process."""

    def __init__(
        self,
        address: tuple[str, int],
        endpoint: ProgressEndpoint,
        source: Source,
        *,
        name: str = "progress",
        check_every: float = CHECK_EVERY,
        handlers: int = HANDLERS,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        super().__init__(source, name=name, check_every=check_every)
        self.endpoint, self.clock = endpoint, clock
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._sock = socket.create_server(address, family=family, backlog=BACKLOG)
        self.port: int = self._sock.getsockname()[1]
        self._pool = ThreadPoolExecutor(handlers, thread_name_prefix=f"{name}-handle")
        self._thread: threading.Thread | None = None
        self._send = threading.Lock()
        self._channel: socket.socket | None = None
        self.front: subprocess.Popen[bytes] | None = None
        """The front process; set before :attr:`serving` is."""
        self.fronts_started = 0
        self.serving = threading.Event()
        """Set while a front accepts connections: from its ``serving`` frame
        until it exits."""

    def start(self, timeout: float = START_TIMEOUT) -> bool:
        """Start the front, and return once it serves (:attr:`front` is then
        its process), or after ``timeout`` seconds: whether it serves. One
        that is not serving by then is said, and the server keeps trying to
        start one."""
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-serve", daemon=True)
        self._thread.start()
        self.watch()
        if self.serving.wait(timeout):
            return True
        log.error("the progress endpoint's front is not serving yet", waited=timeout)
        return False

    def stop(self) -> None:
        self._stop.set()
        channel = self._channel
        if channel is not None:
            with contextlib.suppress(OSError):
                channel.shutdown(socket.SHUT_RDWR)  # the front sees the end and exits
        if self._thread is not None:
            self._thread.join(10)
        with contextlib.suppress(OSError):
            self._sock.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def reload(self) -> bool:
        renewed = super().reload()
        if renewed:
            self._certificate(self.bundle)
        return renewed

    # -- the front ----------------------------------------------------------------

    def _run(self) -> None:
        delay = RESTART_AFTER[0]
        while not self._stop.is_set():
            started = self.clock.monotonic()
            try:
                self._serve_one_front()
            except Exception as exc:  # cannot start it: said, and tried again
                log.error("the progress endpoint's front cannot start", error=str(exc))
            if self.clock.monotonic() - started > RESTART_AFTER[1]:  # it served: a new failure
                delay = RESTART_AFTER[0]
            if self.clock.wait(self._stop, delay):
                break
            delay = min(delay * 2, RESTART_AFTER[1])

    def _serve_one_front(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            proc = self._spawn(theirs)
        finally:
            theirs.close()
        self.front, self._channel = proc, ours
        self.fronts_started += 1
        try:
            if self._stop.is_set():  # stopped while it started: stop() did not see the channel
                ours.shutdown(socket.SHUT_RDWR)
            self._certificate(self.bundle)
            with ours.makefile("rb") as stream:
                while (message := front.read_frame(stream)) is not None:
                    if message == front.SERVING:
                        self.serving.set()
                    else:
                        self._dispatch(message)
        except OSError:
            pass
        finally:
            self.serving.clear()
            self._channel = None
            with contextlib.suppress(OSError):
                ours.close()
            code = _reap(proc)
            if not self._stop.is_set():
                log.error("the progress endpoint's front exited; starting another", code=code)

    def _spawn(self, channel: socket.socket) -> subprocess.Popen[bytes]:
        argv = [
            sys.executable,
            "-I",  # the standard library only: nothing of the operator's on its path
            front.__file__,
            *("--listen-fd", str(self._sock.fileno())),
            *("--channel-fd", str(channel.fileno())),
            *("--max-body", str(MAX_BODY)),
            *("--idle-timeout", str(IDLE_TIMEOUT)),
            *("--handshake-timeout", str(HANDSHAKE_TIMEOUT)),
            *("--backlog", str(BACKLOG)),
        ]
        for header in HEADERS:
            argv += ["--header", header]
        return subprocess.Popen(
            argv, pass_fds=(self._sock.fileno(), channel.fileno()), stdin=subprocess.DEVNULL
        )

    def _certificate(self, bundle: Bundle) -> None:
        self._write(("certificate", bundle.cert, bundle.key))

    def _write(self, message: tuple[Any, ...]) -> None:
        channel = self._channel
        if channel is None:
            return
        with self._send, contextlib.suppress(OSError):  # a front gone: the next gets its own
            channel.sendall(front.frame(message))

    # -- the requests -------------------------------------------------------------

    def _dispatch(self, request: tuple[Any, ...]) -> None:
        rid, method, path, headers, body = request
        if self.endpoint.answers_at_once(headers):
            self._answer(rid, method, path, headers, body)
        else:
            self._pool.submit(self._answer, rid, method, path, headers, body)

    def _answer(self, rid: int, method: str, path: str, headers: Any, body: bytes | None) -> None:
        if body is None:  # over MAX_BODY: answered without reading it
            answer = self.endpoint.handle(method, path, {}, b"x" * (MAX_BODY + 1))
        else:
            answer = self.endpoint.handle(method, path, headers, body)
        self._write(("answer", rid, answer.status, answer.retry_after, answer.body()))


def _reap(proc: subprocess.Popen[bytes]) -> int | None:
    """The front's exit code, once it has exited (killed if it does not)."""
    try:
        return proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
