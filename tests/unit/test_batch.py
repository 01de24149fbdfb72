"""Slow-start batches (runtime/batch.py): sizes 1, 2, 4, ... until a batch
would reach the cap, then the rest as a window of that many in flight; the
items of a batch in parallel, and nothing started after an error."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from t9k_operator.runtime.batch import slow_start


def test_batches_double_up_to_the_cap_and_cover_every_item_once() -> None:
    seen: list[int] = []
    with ThreadPoolExecutor(8) as pool:
        out = slow_start(list(range(40)), lambda i: seen.append(i) or i * 2, pool, max_parallel=8)
    assert out.batches == [1, 2, 4, 33]  # then the window: the 33 items left
    assert sorted(seen) == list(range(40))
    assert out.done == [(i, i * 2) for i in range(40)]
    assert out.failed is None


def test_a_batch_runs_in_parallel() -> None:
    lock = threading.Lock()
    active = peak = 0

    def work(_: int) -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.02)
        with lock:
            active -= 1

    with ThreadPoolExecutor(4) as pool:
        slow_start(list(range(7)), work, pool, max_parallel=4)  # 1, 2, 4
    assert peak == 4


def test_at_the_cap_a_slow_item_does_not_hold_back_the_next_items() -> None:
    # Cap 4: batches 0 | 1-2, then items 3... in a window of 4. Item 3 ends only
    # once item 7 has started: batches of 4 (3-6, then 7-10) would wait for it.
    seventh = threading.Event()
    ran: list[int] = []

    def work(i: int) -> bool:
        ran.append(i)
        if i == 7:
            seventh.set()
        return seventh.wait(5) if i == 3 else True

    with ThreadPoolExecutor(4) as pool:
        out = slow_start(list(range(12)), work, pool, max_parallel=4)
    assert out.done[3] == (3, True)  # item 7 started while item 3 was in flight
    assert sorted(ran) == list(range(12)) and out.batches == [1, 2, 9]


def test_in_the_window_nothing_starts_after_an_error() -> None:
    ran: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> int:
        with lock:
            ran.append(i)
        if i == 10:
            raise RuntimeError("quota exceeded")
        time.sleep(0.02)  # the refusal comes back first, as an admission error does
        return i

    with ThreadPoolExecutor(4) as pool:
        out = slow_start(list(range(100)), work, pool, max_parallel=4)
    # Items in flight when item 10 failed end; none is started after it ends.
    assert out.failed is not None and out.failed[0] == 10
    assert max(ran) <= 10 + 3 and len(ran) == len(set(ran))
    assert [i for i, _ in out.done] == sorted(i for i in ran if i != 10)


def test_no_batch_starts_after_an_error() -> None:
    ran: list[int] = []

    def work(i: int) -> int:
        ran.append(i)
        if i == 4:
            raise RuntimeError("quota exceeded")
        return i

    with ThreadPoolExecutor(8) as pool:
        out = slow_start(list(range(100)), work, pool, max_parallel=8)
    # Batches 0 | 1-2 | 3-6: item 4 fails in the third; nothing after item 6 runs.
    assert sorted(ran) == list(range(7))
    assert out.batches == [1, 2, 4]
    assert out.failed is not None and out.failed[0] == 4
    assert [i for i, _ in out.done] == [0, 1, 2, 3, 5, 6]


def test_the_first_item_failing_costs_one_call() -> None:
    ran: list[int] = []

    def work(i: int) -> None:
        ran.append(i)
        raise RuntimeError("forbidden")

    out = slow_start(list(range(50)), work, None)
    assert ran == [0]
    assert out.failed is not None and out.done == []


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError):
        slow_start([1], lambda i: i, None, initial=0)
