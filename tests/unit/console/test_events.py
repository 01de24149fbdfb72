"""The live feed: a snapshot, then each change the informers see, pushed as
Server-Sent Events the moment it happens (changes come from other threads)."""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from typing import Any

from t9k_operator.console.events import event, stream
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import board_of


def _parse(data: bytes) -> tuple[str, Any]:
    lines = data.decode().strip().split("\n")
    assert lines[0].startswith("event: ") and lines[1].startswith("data: "), data
    return lines[0][len("event: ") :], json.loads(lines[1][len("data: ") :])


def test_the_wire_format_is_one_event_and_one_json_line() -> None:
    assert event("delete", {"key": "a/B/c"}) == 'event: delete\ndata: {"key":"a/B/c"}\n\n'
    assert event("upsert", {"x": "line\nbreak"}).count("\n") == 3


def test_a_snapshot_then_each_change_as_it_happens() -> None:
    board = board_of([f.MNIST], f.PODS)
    finished = copy.deepcopy(f.MNIST)
    finished["status"]["phase"] = "Succeeded"

    async def read() -> list[tuple[str, Any]]:
        events = stream(board, ["PyTorchTrainingJob"], keepalive=0.05)
        got = [_parse(await anext(events))]
        # The informer's thread changes the job while the stream waits.
        threading.Timer(0.1, board.put_job, [finished]).start()
        got.append(_parse(await asyncio.wait_for(_next_event(events), 2.0)))
        threading.Timer(0.1, board.drop_job, [finished]).start()
        got.append(_parse(await asyncio.wait_for(_next_event(events), 2.0)))
        await events.aclose()
        return got

    (snap_name, snap), (up_name, up), (del_name, gone) = asyncio.run(read())
    assert snap_name == "snapshot"
    assert snap["kinds"] == ["PyTorchTrainingJob"]
    assert [r["cells"][3] for r in snap["rows"]] == ["Running"]
    assert up_name == "upsert"
    assert up["key"] == "team-a/PyTorchTrainingJob/mnist"
    assert up["row"]["cells"][3] == "Succeeded"
    assert (del_name, gone) == ("delete", {"key": "team-a/PyTorchTrainingJob/mnist"})
    # The stream that ended stopped listening.
    board.put_job(f.MNIST)


async def _next_event(events: Any) -> bytes:
    """The next event, past the keep-alive comments."""
    while True:
        data = await anext(events)
        if not data.startswith(b":"):
            return bytes(data)


def test_a_quiet_stream_sends_keepalive_comments() -> None:
    board = board_of([])

    async def read() -> list[bytes]:
        events = stream(board, [], keepalive=0.01)
        got = [await anext(events), await anext(events)]
        await events.aclose()
        return got

    snap, keepalive = asyncio.run(read())
    assert _parse(snap)[1]["rows"] == []
    assert keepalive == b": keep-alive\n\n"


def test_a_closed_stream_unsubscribes() -> None:
    board = board_of([f.MNIST])
    seen: list[object] = []
    _, unsubscribe = board.subscribe(seen.append)

    async def open_and_close() -> None:
        events = stream(board, [])
        await anext(events)
        assert len(board._listeners) == 2
        await events.aclose()

    asyncio.run(open_and_close())
    assert len(board._listeners) == 1
    unsubscribe()
    assert board._listeners == []


def test_closing_the_board_ends_every_stream() -> None:
    board = board_of([f.MNIST])

    async def read() -> list[bytes]:
        events = stream(board, [], keepalive=5)
        got = [await anext(events)]
        threading.Timer(0.1, board.close).start()
        got += [text async for text in events]  # ends, well before the keep-alive
        return got

    (snap,) = asyncio.run(asyncio.wait_for(read(), 2.0))
    assert _parse(snap)[0] == "snapshot"
    assert board._listeners == []


def test_pages_opened_together_are_sent_one_encoding_of_the_snapshot() -> None:
    # With 10,000 jobs the snapshot is 1.8 MB: the server sends bytes as they
    # are, while it would encode a text afresh for each of 20 open pages.
    board = board_of([f.MNIST], f.PODS)

    async def two_pages() -> tuple[object, object]:
        first, second = stream(board, ["PyTorchTrainingJob"]), stream(board, ["PyTorchTrainingJob"])
        got = (await anext(first), await anext(second))
        await first.aclose()
        await second.aclose()
        return got

    one, other = asyncio.run(two_pages())
    assert isinstance(one, bytes) and one is other
    assert _parse(one)[0] == "snapshot"
