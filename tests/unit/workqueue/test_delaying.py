"""Tests for t9k_operator.runtime.delayingqueue: adds after a delay."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from t9k_operator.foundation.clock import RealClock
from t9k_operator.runtime.delayingqueue import DelayingQueue
from t9k_operator.runtime.workqueue import Queue
from tests.fakes import FakeClock
from tests.unit.workqueue.support import JOIN, unique


def test_add_after_not_ready_before_delay_ready_after(
    dq: DelayingQueue[str], clock: FakeClock
) -> None:
    dq.add_after("a", 5.0)
    assert dq.len() == 0
    assert dq.num_waiting() == 1
    assert dq.move_ready_items() == 0
    clock.step(4.0)
    assert dq.move_ready_items() == 0
    assert dq.len() == 0
    clock.step(1.0)  # exactly at the ready time counts as ready
    assert dq.move_ready_items() == 1
    assert dq.num_waiting() == 0
    assert dq.get(timeout=0) == ("a", False)


@pytest.mark.parametrize(
    ("first", "second", "ready_at"),
    [
        pytest.param(10.0, 2.0, 2.0, id="earlier-moves-up"),
        pytest.param(2.0, 10.0, 2.0, id="later-ignored"),
        pytest.param(3.0, 3.0, 3.0, id="same"),
    ],
)
def test_earliest_ready_time_wins(
    dq: DelayingQueue[str], clock: FakeClock, first: float, second: float, ready_at: float
) -> None:
    dq.add_after("a", first)
    dq.add_after("a", second)
    assert dq.num_waiting() == 1
    clock.step(ready_at - 1.0)
    assert dq.move_ready_items() == 0
    clock.step(1.0)
    assert dq.move_ready_items() == 1
    assert dq.get(timeout=0) == ("a", False)
    dq.done("a")
    clock.step(max(first, second))
    assert dq.move_ready_items() == 0, "the superseded entry must not fire again"
    assert dq.len() == 0


def test_later_add_after_uses_time_of_call(dq: DelayingQueue[str], clock: FakeClock) -> None:
    dq.add_after("a", 5.0)  # ready at t+5
    clock.step(4.0)
    dq.add_after("a", 2.0)  # ready at t+6: later, ignored
    clock.step(1.0)
    assert dq.move_ready_items() == 1


@pytest.mark.parametrize("delay", [0.0, -0.0, -1.0, -1e9])
def test_non_positive_delay_adds_immediately(dq: DelayingQueue[str], delay: float) -> None:
    dq.add_after("a", delay)
    assert dq.num_waiting() == 0
    assert dq.len() == 1
    assert dq.get(timeout=0) == ("a", False)


def test_ready_items_are_queued_in_ready_time_order(
    dq: DelayingQueue[str], clock: FakeClock
) -> None:
    dq.add_after("c", 3.0)
    dq.add_after("a", 1.0)
    dq.add_after("b", 2.0)
    dq.add_after("d", 9.0)
    clock.step(3.0)
    assert dq.move_ready_items() == 3
    assert [dq.get(timeout=0)[0] for _ in range(3)] == ["a", "b", "c"]
    assert dq.num_waiting() == 1


def test_ready_item_already_dirty_is_deduplicated(dq: DelayingQueue[str], clock: FakeClock) -> None:
    dq.add("a")
    dq.add_after("a", 1.0)
    clock.step(1.0)
    dq.move_ready_items()
    assert dq.len() == 1


class CountingWakes(DelayingQueue[str]):
    """Counts the background thread's looks at the heap; ``asleep`` is set by
    the first look that found an item waiting, after which the thread sleeps
    until that item is due (or the heartbeat), unless an earlier one wakes it."""

    def __init__(self, **kwargs: Any) -> None:
        self.looks = 0
        self.asleep = threading.Event()
        super().__init__(**kwargs)  # starts the thread

    def _move_ready_locked(self) -> tuple[int, float | None]:
        self.looks += 1
        moved, wait = super()._move_ready_locked()
        if wait is not None:
            self.asleep.set()
        return moved, wait


class SlowToLook(CountingWakes):
    """The thread of a busy machine: slow over its first look at a waiting item."""

    def __init__(self, **kwargs: Any) -> None:
        self.slowed = False
        super().__init__(**kwargs)

    def _move_ready_locked(self) -> tuple[int, float | None]:
        if self._waiting and not self.slowed:
            self.slowed = True
            time.sleep(0.3)
        return super()._move_ready_locked()


def test_background_thread_moves_items_and_is_woken_by_earlier_item(
    shutdown_later: Callable[[Queue[Any]], Queue[Any]],
) -> None:
    q = CountingWakes(clock=RealClock())
    shutdown_later(q)
    q.add_after("late", 60.0)
    assert q.asleep.wait(JOIN)  # the thread sleeps until "late" is due (or the heartbeat)
    q.add_after("soon", 0.01)
    t0 = time.monotonic()
    assert q.get(timeout=JOIN) == ("soon", False)
    assert time.monotonic() - t0 < 1.0  # woken, not the 10 s heartbeat or 60 s
    assert q.num_waiting() == 1


@pytest.mark.parametrize("kind", [CountingWakes, SlowToLook])
def test_an_item_due_after_the_earliest_does_not_wake_the_background_thread(
    shutdown_later: Callable[[Queue[Any]], Queue[Any]], kind: type[CountingWakes]
) -> None:
    q = kind(clock=RealClock())
    shutdown_later(q)
    q.add_after("first", 60.0)
    assert q.asleep.wait(JOIN)  # the thread has seen it, and sleeps until it is due
    looks = q.looks
    for i in range(50):  # a pod's changes, each after the batch period
        q.add_after(f"later-{i}", 61.0 + i)
        time.sleep(0.001)
    time.sleep(0.05)
    assert q.looks == looks
    assert q.num_waiting() == 51
    q.add_after("soon", 0.01)  # earlier than all: it wakes the thread
    assert q.get(timeout=JOIN) == ("soon", False)
    assert q.looks > looks


def test_shutdown_stops_background_thread_and_drops_waiting(
    clock: FakeClock,
) -> None:
    name = unique("delay")
    q: DelayingQueue[str] = DelayingQueue(name, clock=clock, metrics=False)
    threads = [t for t in threading.enumerate() if t.name == f"workqueue-delay-{name}"]
    assert len(threads) == 1 and threads[0].daemon and threads[0].is_alive()
    q.add_after("a", 1.0)
    q.shut_down()
    threads[0].join(JOIN)
    assert not threads[0].is_alive()
    assert q.num_waiting() == 0
    q.add_after("b", 1.0)
    q.add_after("c", 0)
    assert q.num_waiting() == 0
    clock.step(2.0)
    assert q.move_ready_items() == 0
    assert q.get() == (None, True)


def test_shut_down_with_drain_also_stops_background_thread(clock: FakeClock) -> None:
    name = unique("drain")
    q: DelayingQueue[str] = DelayingQueue(name, clock=clock, metrics=False)
    (thread,) = [t for t in threading.enumerate() if t.name == f"workqueue-delay-{name}"]
    assert q.shut_down_with_drain(timeout=JOIN)
    thread.join(JOIN)
    assert not thread.is_alive()
