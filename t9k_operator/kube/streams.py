"""The streamed answers of the Kubernetes API: a watch's events and a pod's log,
read line by line off one open response, and closable from another thread."""

from __future__ import annotations

import json
from collections.abc import Iterator

import urllib3

from t9k_operator.kube.errors import TransportError, error_from_status_object
from t9k_operator.objects import Obj


class _Lines:
    """The lines of one streamed response (a watch, a log), without their
    newlines; ``close()`` ends it, also from another thread blocked reading it."""

    what = "stream"

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self._closed = False

    def lines(self) -> Iterator[bytes]:
        buffer = b""
        try:
            for chunk in self._response.stream(amt=None, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    yield line
            if buffer:
                yield buffer
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if not self._closed:
                raise TransportError(f"{self.what} stream broken: {exc}") from exc
        finally:
            self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """End the stream, also from another thread blocked reading it.

        The connection is closed, never handed back to the pool: it still has
        unread chunks of this stream on it.
        """
        if self._closed:
            return
        self._closed = True
        shutdown = getattr(self._response, "shutdown", None)  # urllib3 >= 2.3
        try:
            if shutdown is not None:
                shutdown()
            self._response.close()
        except Exception:
            pass


class LogStream(_Lines):
    """The lines of one log request, decoded (bad UTF-8 replaced)."""

    what = "log"

    def __iter__(self) -> Iterator[str]:
        for line in self.lines():
            yield line.decode("utf-8", "replace")


class WatchStream(_Lines):
    """Iterates the events of one watch request; ``close()`` ends it early.

    Yields ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": {...}}``.
    An ``ERROR`` event is raised as the mapped :class:`ApiError` (410 ->
    :class:`Gone`). A read timeout or a dropped connection ends iteration
    with :class:`TransportError`; a server-side timeout ends it normally.
    """

    what = "watch"

    def __iter__(self) -> Iterator[Obj]:
        for line in self.lines():
            if line.strip():
                yield self._decode(line)

    @staticmethod
    def _decode(line: bytes) -> Obj:
        event: Obj = json.loads(line)
        if event.get("type") == "ERROR":
            raise error_from_status_object(event.get("object") or {})
        return event
