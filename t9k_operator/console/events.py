"""The Jobs page's live feed: Server-Sent Events from the :class:`~.board.JobBoard`.

One stream per open page: first a ``snapshot`` event (the columns, the kinds
and every row), then an ``upsert`` or ``delete`` event per change the
informers see, as it happens, and a comment line every
:data:`KEEPALIVE_SECONDS` so proxies keep the connection open. Changes come
from the informers' threads; each reaches the stream's event loop through
``call_soon_threadsafe``, so the board's lock is never held across an await.
The browser's ``EventSource`` reconnects by itself and gets a fresh snapshot.
A stream ends when the board closes (the console stops), so the server's
shutdown need not cut it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from t9k_operator.console.board import Change, JobBoard
from t9k_operator.console.rows import Row, headers

KEEPALIVE_SECONDS = 15.0
KEEPALIVE = b": keep-alive\n\n"


def event(name: str, data: Any) -> str:
    """One event in the SSE wire format (its data one JSON line)."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def snapshot(rows: Sequence[Row], kinds: Sequence[str]) -> dict[str, Any]:
    """What the page starts from (and ``GET /api/jobs`` returns)."""
    return {"headers": headers(), "kinds": list(kinds), "rows": [r.to_json() for r in rows]}


class _LastSnapshot:
    """The last snapshot event written, and the rows and kinds it was written
    from: pages opened together get the board's same list of rows
    (:meth:`~.board.JobBoard.subscribe` reuses one computation), and share
    one encoding of it rather than each its own (1.8 MB with 10,000 jobs):
    bytes, which the server sends as they are, where it would encode a text
    afresh for each stream."""

    rows: Sequence[Row] | None = None
    kinds: tuple[str, ...] = ()
    data = b""

    @classmethod
    def event(cls, rows: Sequence[Row], kinds: Sequence[str]) -> bytes:
        if rows is not cls.rows or tuple(kinds) != cls.kinds:
            data = event("snapshot", snapshot(rows, kinds)).encode()
            cls.rows, cls.kinds, cls.data = rows, tuple(kinds), data
        return cls.data


async def stream(
    board: JobBoard, kinds: Sequence[str], keepalive: float = KEEPALIVE_SECONDS
) -> AsyncIterator[bytes]:
    """The snapshot, then each change, until the client goes (the caller
    cancels), each event encoded as UTF-8."""
    loop = asyncio.get_running_loop()
    changes: asyncio.Queue[Change] = asyncio.Queue()

    def listener(change: Change) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the stream is over
            loop.call_soon_threadsafe(changes.put_nowait, change)

    rows, unsubscribe = board.subscribe(listener)
    try:
        yield _LastSnapshot.event(rows, kinds)
        while True:
            try:
                change = await asyncio.wait_for(changes.get(), keepalive)
            except TimeoutError:
                yield KEEPALIVE
                continue
            if change.type == "close":
                return
            yield event(change.type, change.to_json()).encode()
    finally:
        unsubscribe()
