"""The progress endpoint's HTTPS server: one event loop for every connection.

Each reporting process keeps its connection open between reports (a pace
apart, up to a minute), so the endpoint holds as many connections as there
are processes reporting, ten thousand or more. A thread for each, as
``runtime/tls.TLSServer`` has, would cost a thread's memory each and wake
them all in turn; here one thread runs an asyncio loop that reads the
requests (HTTP/1.1, kept alive) and writes the answers, and a few threads
answer them (:meth:`ProgressEndpoint.handle` may wait on the API server for
a TokenReview, which must not stop the loop).

The certificate is the same as any of the operator's servers
(``runtime/tls.Certified``: renewed ones are served to new connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor

from t9k_operator.reconcilers.progress.endpoint import (
    IDLE_TIMEOUT,
    MAX_BODY,
    Answer,
    ProgressEndpoint,
)
from t9k_operator.runtime.tls import CHECK_EVERY, HANDSHAKE_TIMEOUT, Certified, Source

BACKLOG = 1024
"""Connections waiting to be accepted (many replicas start at once)."""
HANDLERS = 4
"""Threads answering requests."""
MAX_HEADERS = 64
REASONS = {
    202: "Accepted",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    429: "Too Many Requests",
    503: "Service Unavailable",
}


class _BadRequest(Exception):
    pass


class EventLoopServer(Certified):
    """``endpoint`` served over HTTPS on ``address`` by one event loop."""

    def __init__(
        self,
        address: tuple[str, int],
        endpoint: ProgressEndpoint,
        source: Source,
        *,
        name: str = "progress",
        check_every: float = CHECK_EVERY,
        handlers: int = HANDLERS,
    ) -> None:
        super().__init__(source, name=name, check_every=check_every)
        self.endpoint = endpoint
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._sock = socket.create_server(address, family=family, backlog=BACKLOG)
        self.port: int = self._sock.getsockname()[1]
        self._pool = ThreadPoolExecutor(handlers, thread_name_prefix=f"{name}-handle")
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-serve", daemon=True)
        self._thread.start()
        self.watch()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            done = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            with contextlib.suppress(Exception):
                done.result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        else:
            self._loop.close()
        with contextlib.suppress(OSError):
            self._sock.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(
                self._connection,
                sock=self._sock,
                ssl=self.context,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT,
            )
        )
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _shutdown(self) -> None:
        """Stop accepting and end every connection (in the loop)."""
        if self._server is not None:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests of one connection, one after the other, until it closes or
        is idle past :data:`IDLE_TIMEOUT`."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    request = await asyncio.wait_for(_read(reader), IDLE_TIMEOUT)
                except _BadRequest:
                    writer.write(_render(Answer(400, "invalid", "not an HTTP request"), False))
                    break
                if request is None:
                    break
                method, path, headers, body, keep = request
                if body is None:  # over MAX_BODY: answered without reading it
                    answer = await loop.run_in_executor(
                        self._pool, self.endpoint.handle, method, path, {}, b"x" * (MAX_BODY + 1)
                    )
                    keep = False
                else:
                    answer = await loop.run_in_executor(
                        self._pool, self.endpoint.handle, method, path, headers, body
                    )
                keep = keep and answer.status != 503  # a standby: reconnect, maybe to the leader
                writer.write(_render(answer, keep))
                await writer.drain()
                if not keep:
                    break
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:  # the server stops: the connection ends quietly
            pass
        finally:
            writer.close()


async def _read(
    reader: asyncio.StreamReader,
) -> tuple[str, str, dict[str, str], bytes | None, bool] | None:
    """One request: method, path, headers (by lower-case name), body (None: too
    large) and whether the connection is kept after it; None when the client
    closed."""
    line = await reader.readline()
    if not line:
        return None
    parts = line.decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(line[:100])
    method, path, version = parts
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise _BadRequest(raw[:100])
        headers[name.strip().lower()] = value.strip()
    else:
        raise _BadRequest("too many headers")
    connection = headers.get("connection", "").lower()
    keep = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    try:
        length = int(headers.get("content-length") or 0)
    except ValueError:
        length = -1
    if length < 0 or length > MAX_BODY:
        return method, path, headers, None, False
    body = await reader.readexactly(length) if length else b""
    return method, path, headers, body, keep


def _render(answer: Answer, keep: bool) -> bytes:
    data = answer.body()
    lines = [
        f"HTTP/1.1 {answer.status} {REASONS.get(answer.status, 'Error')}",
        "Content-Type: application/json",
        f"Content-Length: {len(data)}",
    ]
    if answer.retry_after is not None:
        lines.append(f"Retry-After: {max(1, round(answer.retry_after))}")
    if not keep:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data
