"""The delaying layer of the work queue: :class:`DelayingQueue` adds items
after a delay, from a min-heap drained by a daemon thread (see
:mod:`t9k_operator.runtime.workqueue` for how the layers fit)."""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Hashable
from typing import TypeVar

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.runtime.workqueue import Queue

T = TypeVar("T", bound=Hashable)

MAX_WAIT = 10.0
"""Longest the delaying thread sleeps without re-checking the heap (client-go's heartbeat)."""


class DelayingQueue(Queue[T]):
    """A :class:`Queue` that can also add items after a delay.

    Starts a daemon thread that moves due items into the queue; it stops on
    shutdown, and items still waiting are dropped.
    """

    def __init__(self, name: str = "", *, clock: Clock = REAL_CLOCK, metrics: bool = True) -> None:
        super().__init__(name, clock=clock, metrics=metrics)
        self._waiting_cond = threading.Condition()
        # Entries are (ready_at, seq, item); seq is unique, so items are never compared.
        self._heap: list[tuple[float, int, T]] = []
        self._waiting: dict[T, tuple[float, int, T]] = {}
        self._seq = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(
            target=self._waiting_loop,
            name=f"workqueue-delay-{name or id(self)}",
            daemon=True,
        )
        self._thread.start()

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed (now if ``delay <= 0``).

        If the item is already waiting, the earlier of the two ready times wins.
        Ignored after shutdown.
        """
        if self.shutting_down():
            return
        if delay <= 0:
            self.add(item)
            return
        if item is None:
            raise ValueError("None cannot be queued")
        with self._waiting_cond:
            if self._stopped:
                return
            ready_at = self._clock.monotonic() + delay
            existing = self._waiting.get(item)
            if existing is not None and existing[0] <= ready_at:
                return
            entry = (ready_at, next(self._seq), item)
            self._waiting[item] = entry
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                # Due before every other item: the thread sleeps until the
                # earliest one it saw, so only an earlier one must wake it (a
                # child's changes, each after the same batch period, never do).
                self._waiting_cond.notify()

    def move_ready_items(self) -> int:
        """Move every item whose ready time has come into the queue; return how many.

        The background thread calls this; tests using a FakeClock call it after
        stepping the clock.
        """
        with self._waiting_cond:
            moved, _ = self._move_ready_locked()
            return moved

    def num_waiting(self) -> int:
        """Number of items waiting for their ready time."""
        with self._waiting_cond:
            return len(self._waiting)

    def shut_down(self) -> None:
        self._stop_waiting_loop()
        super().shut_down()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        self._stop_waiting_loop()
        return super().shut_down_with_drain(timeout)

    def _stop_waiting_loop(self) -> None:
        with self._waiting_cond:
            self._stopped = True
            self._heap.clear()
            self._waiting.clear()
            self._waiting_cond.notify_all()

    def _move_ready_locked(self) -> tuple[int, float | None]:
        """Move due items; return (count moved, seconds until the next one or None)."""
        now = self._clock.monotonic()
        moved = 0
        while self._heap:
            entry = self._heap[0]
            ready_at, _, item = entry
            if self._waiting.get(item) is not entry:
                heapq.heappop(self._heap)  # superseded by an earlier ready time
                continue
            if ready_at > now:
                return moved, ready_at - now
            heapq.heappop(self._heap)
            del self._waiting[item]
            self.add(item)
            moved += 1
        return moved, None

    def _waiting_loop(self) -> None:
        with self._waiting_cond:
            while not self._stopped:
                _, wait = self._move_ready_locked()
                self._waiting_cond.wait(MAX_WAIT if wait is None else min(wait, MAX_WAIT))
