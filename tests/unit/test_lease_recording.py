"""The integration tests' record of a Lease (tests/integration/leases.py),
against a Lease API whose watch delivers a write later than a GET answers it,
as the API server's watch cache does."""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

from t9k_operator.objects import Obj
from t9k_operator.resources import LEASES, Resource
from tests.integration.leases import recording

NS, NAME = "t9k-system", "unit-lease"
LAG = 0.5
"""Seconds a write takes to reach a watch."""


def held_by(holder: str, renewed: int) -> Obj:
    return {
        "holderIdentity": holder,
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": f"2026-01-01T00:00:{renewed:02d}.000000Z",
    }


class LaggingWatch:
    """The events of one watch, each delivered ``LAG`` seconds after its write;
    one still on its way when the watch is closed is never delivered."""

    def __init__(self, events: queue.Queue[tuple[float, Obj]]) -> None:
        self.events = events
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[Obj]:
        while not self.closed.is_set():
            try:
                due, event = self.events.get(timeout=0.05)
            except queue.Empty:
                continue
            if self.closed.wait(max(due - time.monotonic(), 0)):
                return
            yield event

    def close(self) -> None:
        self.closed.set()


class LaggingLeases:
    """One Lease, read by a list, a GET and a watch that lags behind them."""

    def __init__(self) -> None:
        self.version = 1
        self.spec = held_by("a", 0)
        self.events: queue.Queue[tuple[float, Obj]] = queue.Queue()

    def lease(self) -> Obj:
        return {
            "metadata": {"name": NAME, "namespace": NS, "resourceVersion": str(self.version)},
            "spec": copy.deepcopy(self.spec),
        }

    def write(self, spec: Obj) -> None:
        self.version += 1
        self.spec = spec
        self.events.put((time.monotonic() + LAG, {"type": "MODIFIED", "object": self.lease()}))

    def list(self, resource: Resource, namespace: str | None = None) -> Obj:
        assert resource == LEASES
        return {"metadata": {"resourceVersion": str(self.version)}, "items": [self.lease()]}

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        assert (resource, name, namespace) == (LEASES, NAME, NS)
        return self.lease()

    def watch(self, resource: Resource, namespace: str | None = None, **_: Any) -> LaggingWatch:
        return LaggingWatch(self.events)


def test_the_record_holds_what_the_lease_said_when_the_block_ended() -> None:
    """A test waits for a hand-over by GETs, then leaves the block: the record
    has the new holder's write, though the watch brought it only after."""
    leases = LaggingLeases()
    with recording(leases, NS, NAME) as record:  # type: ignore[arg-type]
        leases.write(held_by("a", 2))
        leases.write(held_by("b", 9))
        assert leases.get(LEASES, NAME, NS)["spec"]["holderIdentity"] == "b"
    last = record.last_by("a")
    assert last["renewTime"] == "2026-01-01T00:00:02.000000Z"
    assert record.first_after(last, "b") == held_by("b", 9)
    assert [s["holderIdentity"] for s in record.versions()] == ["a", "a", "b"]
