"""Tests for t9k_operator.runtime.workqueue: the dirty/processing rules and shutdown."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from t9k_operator.runtime.workqueue import Queue
from tests.unit.workqueue.support import JOIN, start


def test_fifo_order() -> None:
    q: Queue[str] = Queue()
    for item in ["a", "b", "c", "d"]:
        q.add(item)
    got = [q.get()[0] for _ in range(4)]
    assert got == ["a", "b", "c", "d"]
    assert q.len() == 0


@pytest.mark.parametrize(
    ("adds", "expected_order"),
    [
        (["a", "a"], ["a"]),
        (["a", "b", "a"], ["a", "b"]),
        (["a", "b", "a", "b", "c", "a"], ["a", "b", "c"]),
    ],
)
def test_add_deduplicates_while_dirty(adds: list[str], expected_order: list[str]) -> None:
    q: Queue[str] = Queue()
    for item in adds:
        q.add(item)
    assert q.len() == len(expected_order)
    assert len(q) == len(expected_order)
    assert [q.get()[0] for _ in expected_order] == expected_order
    assert q.get(timeout=0.001) == (None, False)


def test_item_can_be_added_again_once_handed_out_and_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    assert q.get() == ("a", False)
    q.done("a")
    q.add("a")
    assert q.len() == 1
    assert q.get() == ("a", False)


def test_add_during_processing_is_requeued_only_after_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    assert q.get() == ("a", False)
    q.add("a")
    q.add("a")  # still one pending re-add
    assert q.len() == 0, "must not be queued while being processed"
    assert q.get(timeout=0.01) == (None, False)
    q.done("a")
    assert q.len() == 1
    assert q.get() == ("a", False)
    q.done("a")
    assert q.len() == 0


def test_done_without_readd_does_not_requeue() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    item, _ = q.get()
    assert item == "a"
    q.done("a")
    assert q.len() == 0


def test_done_of_item_not_processing_is_noop() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.done("a")  # queued, not processing: must not duplicate it
    q.done("zzz")
    assert q.len() == 1
    assert q.get() == ("a", False)
    assert q.get(timeout=0.001) == (None, False)


def test_readded_item_not_given_to_second_getter_until_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    assert q.get() == ("a", False)
    results: list[tuple[str | None, bool]] = []
    getter = start(lambda: results.append(q.get(timeout=JOIN)))
    q.add("a")
    getter.join(0.05)
    assert getter.is_alive(), "second worker got the item while the first still holds it"
    assert results == []
    q.done("a")
    getter.join(JOIN)
    assert results == [("a", False)]


def test_concurrent_workers_never_process_the_same_item_twice() -> None:
    q: Queue[int] = Queue()
    in_flight: set[int] = set()
    guard = threading.Lock()
    violations: list[int] = []
    processed: list[int] = []

    def worker() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            assert item is not None
            with guard:
                if item in in_flight:
                    violations.append(item)
                in_flight.add(item)
            time.sleep(0.0005)
            with guard:
                in_flight.discard(item)
                processed.append(item)
            q.done(item)

    workers = [start(worker) for _ in range(6)]
    for i in range(400):
        q.add(i % 5)
        if i % 50 == 0:
            time.sleep(0.001)
    # Wait until the queue is idle, then drain and stop.
    assert q.shut_down_with_drain(timeout=JOIN)
    for w in workers:
        w.join(JOIN)
    assert violations == []
    assert set(processed) == {0, 1, 2, 3, 4}
    assert all(not w.is_alive() for w in workers)


def test_get_timeout_returns_none_not_shutdown() -> None:
    q: Queue[str] = Queue()
    assert q.get(timeout=0.001) == (None, False)


def test_none_is_rejected() -> None:
    q: Queue[Any] = Queue()
    with pytest.raises(ValueError):
        q.add(None)


# --------------------------------------------------------------------------- shutdown


def test_shutdown_wakes_all_blocked_getters() -> None:
    q: Queue[str] = Queue()
    results: list[tuple[str | None, bool]] = []
    lock = threading.Lock()

    def getter() -> None:
        r = q.get()
        with lock:
            results.append(r)

    threads = [start(getter) for _ in range(3)]
    time.sleep(0.01)
    assert all(t.is_alive() for t in threads)
    q.shut_down()
    for t in threads:
        t.join(JOIN)
    assert all(not t.is_alive() for t in threads)
    assert results == [(None, True)] * 3


def test_shutdown_drains_remaining_then_reports_shutdown_and_ignores_adds() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    assert not q.shutting_down()
    q.shut_down()
    assert q.shutting_down()
    q.add("c")
    assert q.len() == 2
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)
    assert q.get(timeout=0.001) == (None, True)


def test_item_dirty_at_shutdown_is_still_handed_out_after_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.get()
    q.add("a")  # dirty while processing
    q.shut_down()
    q.done("a")
    assert q.get() == ("a", False)
    assert q.get() == (None, True)


def test_shut_down_with_drain_waits_for_in_flight_items() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.add("b")
    q.get()
    q.get()
    returned: list[bool] = []
    drainer = start(lambda: returned.append(q.shut_down_with_drain()))
    drainer.join(0.02)
    assert drainer.is_alive()
    assert q.shutting_down()
    q.add("c")
    assert q.len() == 0, "adds are ignored while draining"
    q.done("a")
    drainer.join(0.02)
    assert drainer.is_alive(), "b is still being processed"
    q.done("b")
    drainer.join(JOIN)
    assert not drainer.is_alive()
    assert returned == [True]


def test_shut_down_with_drain_returns_at_once_when_idle() -> None:
    q: Queue[str] = Queue()
    assert q.shut_down_with_drain(timeout=JOIN) is True
    assert q.shutting_down()


def test_shut_down_with_drain_timeout() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.get()
    assert q.shut_down_with_drain(timeout=0.01) is False


def test_shut_down_cancels_drain_wait() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.get()
    returned: list[bool] = []
    drainer = start(lambda: returned.append(q.shut_down_with_drain()))
    drainer.join(0.02)
    assert drainer.is_alive()
    q.shut_down()
    drainer.join(JOIN)
    assert returned == [False]
