"""An HTTPS front: a process of its own that holds a server's connections
(TLS, HTTP/1.1 kept alive) and hands each request to the process that
started it over one local channel, writing back the answer it gets.

The progress endpoint (``integrations/progress/server.py``) serves through
one: ten thousand reporting processes keep a connection each, and the TLS
records and HTTP framing of their reports cost far more CPU than answering
them. Done in the operator's interpreter, that work would hold its GIL
against the reconcile workers; here it runs in another interpreter, one
asyncio loop for every connection, and the operator reads small messages
from the channel.

Standard library only, and run by path (``python -I front.py``), so it
imports nothing of the operator's: its starter passes the listening socket
and its end of the channel (inherited descriptors), then sends its
certificate, and any renewed one. When the channel closes (the starter
stopped or died) it exits.

The channel carries frames (:func:`frame`, :func:`read_frame`): a 4-byte
length, then a pickled tuple; both ends are this module's.

- front -> starter: ``("serving",)`` once, when it accepts connections
  with its first certificate; then ``(id, method, path, headers, body)``
  for each request, the headers only those named by ``--header``; ``body``
  None: longer than ``--max-body``, not read (the starter answers that,
  and the connection is closed);
- starter -> front: ``("answer", id, status, retry_after, body)`` and
  ``("certificate", cert_pem, key_pem)``.
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.sslproto
import contextlib
import itertools
import os
import pickle
import signal
import socket
import ssl
import struct
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

MAX_HEADERS = 64
TLS_READ = 4 * 1024
"""Bytes asyncio's TLS layer reads from a connection at a time. Its default
(``asyncio.sslproto.SSLProtocol.max_size``, 256 KiB) is a buffer allocated
and zeroed for every connection: 2.8 GiB for 10,000 kept connections, where
this size leaves about 32 KiB a connection (``hack/bench/progress/``). A
report is a few hundred bytes; a longer request or TLS record is read in
several."""
ANSWER_TIMEOUT = 60.0
"""Seconds a request waits for its answer (503 after)."""
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
SERVING = ("serving",)
"""The front's first frame: it accepts connections now."""
_LENGTH = struct.Struct("!I")


def frame(message: tuple[Any, ...]) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def read_frame(stream: BinaryIO) -> tuple[Any, ...] | None:
    """The next message on a blocking ``stream``; None at its end."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    data = stream.read(_LENGTH.unpack(head)[0])
    message: tuple[Any, ...] = pickle.loads(data)  # the starter's own channel
    return message


async def _read_frame(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    try:
        head = await reader.readexactly(_LENGTH.size)
        data = await reader.readexactly(_LENGTH.unpack(head)[0])
    except asyncio.IncompleteReadError:
        return None
    message: tuple[Any, ...] = pickle.loads(data)  # the starter's own channel
    return message


def render(status: int, retry_after: float | None, body: bytes, keep: bool) -> bytes:
    """An answer, headers and body in one write (two would wait, with Nagle
    on, for the client's delayed ACK: 40 ms a report)."""
    lines = [
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    if retry_after is not None:
        lines.append(f"Retry-After: {max(1, round(retry_after))}")
    if not keep:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _refusal(result: str, message: str) -> bytes:
    return f'{{"result": "{result}", "message": "{message}"}}\n'.encode()


class _BadRequest(Exception):
    pass


async def read_request(
    reader: asyncio.StreamReader, max_body: int
) -> tuple[str, str, dict[str, str], bytes | None, bool] | None:
    """One request: method, path, headers (by lower-case name), body (None: over
    ``max_body``) and whether the connection is kept after it; None when the
    client closed."""
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
    if length < 0 or length > max_body:
        return method, path, headers, None, False
    body = await reader.readexactly(length) if length else b""
    return method, path, headers, body, keep


def context_for(cert: bytes, key: bytes) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2 or later) serving ``cert`` (PEM)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    load_chain(ctx, cert, key)
    return ctx


def load_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``ctx`` serves ``cert`` to new connections (open ones keep theirs)."""
    # ssl loads a chain from files only: a private temporary directory, removed at once.
    with tempfile.TemporaryDirectory(prefix="t9k-tls-") as tmp:
        os.chmod(tmp, 0o700)
        crt, pem = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        crt.write_bytes(cert)
        pem.write_bytes(key)
        ctx.load_cert_chain(str(crt), str(pem))


class Front:
    def __init__(self, listener: socket.socket, channel: socket.socket, opts: Any) -> None:
        self.listener, self.channel, self.opts = listener, channel, opts
        self.context: ssl.SSLContext | None = None
        self.pending: dict[int, asyncio.Future[tuple[int, float | None, bytes]]] = {}
        self.ids = itertools.count()
        self.out: asyncio.StreamWriter | None = None

    async def run(self) -> None:
        reader, self.out = await asyncio.open_unix_connection(sock=self.channel)
        first = await _read_frame(reader)
        if first is None or first[0] != "certificate":
            return
        self.context = context_for(first[1], first[2])
        server = await asyncio.start_server(
            self.connection,
            sock=self.listener,
            ssl=self.context,
            ssl_handshake_timeout=self.opts.handshake_timeout,
            backlog=self.opts.backlog,
        )
        self.out.write(frame(SERVING))
        try:
            while (message := await _read_frame(reader)) is not None:
                if message[0] == "answer":
                    waiting = self.pending.pop(message[1], None)
                    if waiting is not None and not waiting.done():
                        waiting.set_result(message[2:])
                elif message[0] == "certificate":
                    load_chain(self.context, message[1], message[2])
        finally:  # the starter is gone: so is its front
            server.close()

    async def answer(self, request: tuple[Any, ...]) -> tuple[int, float | None, bytes]:
        assert self.out is not None
        rid = next(self.ids)
        waiting = asyncio.get_running_loop().create_future()
        self.pending[rid] = waiting
        self.out.write(frame((rid, *request)))
        try:
            return await asyncio.wait_for(waiting, ANSWER_TIMEOUT)
        except TimeoutError:
            return 503, 5.0, _refusal("unavailable", "no answer from the server")
        finally:
            self.pending.pop(rid, None)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests of one connection, one after the other, until it closes or
        is idle past the idle timeout."""
        try:
            while True:
                try:
                    request = await asyncio.wait_for(
                        read_request(reader, self.opts.max_body), self.opts.idle_timeout
                    )
                except _BadRequest:
                    refusal = _refusal("invalid", "not an HTTP request")
                    writer.write(render(400, None, refusal, False))
                    break
                if request is None:
                    break
                method, path, headers, body, keep = request
                kept = {k: headers[k] for k in self.opts.headers if k in headers}
                status, retry_after, data = await self.answer((method, path, kept, body))
                # Over the limit (not read), or a standby (reconnect, maybe to the leader).
                keep = keep and body is not None and status != 503
                writer.write(render(status, retry_after, data, keep))
                await writer.drain()
                if not keep:
                    break
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:  # the front stops: the connection ends quietly
            pass
        finally:
            writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--max-body", type=int, required=True)
    parser.add_argument("--idle-timeout", type=float, required=True)
    parser.add_argument("--handshake-timeout", type=float, required=True)
    parser.add_argument("--backlog", type=int, default=1024)
    parser.add_argument("--header", dest="headers", action="append", default=[])
    opts = parser.parse_args()
    # The starter stops it by closing the channel; a terminal's Ctrl-C is the starter's.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.sslproto.SSLProtocol.max_size = TLS_READ
    listener = socket.socket(fileno=opts.listen_fd)
    channel = socket.socket(fileno=opts.channel_fd)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(Front(listener, channel, opts).run())


if __name__ == "__main__":
    main()
