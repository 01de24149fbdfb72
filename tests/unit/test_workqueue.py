"""Tests for t9k_operator.runtime.workqueue: client-go workqueue semantics, metrics."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from t9k_operator.foundation.clock import RealClock
from t9k_operator.runtime.delayingqueue import DelayingQueue
from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue
from t9k_operator.runtime.workqueue import Queue
from tests.fakes import FakeClock, StubLimiter

JOIN = 5.0  # generous bound for thread joins; tests normally finish in milliseconds


def unique(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def shutdown_later() -> Iterator[Callable[[Queue[Any]], Queue[Any]]]:
    """Register queues to be shut down after the test (stops delaying threads)."""
    queues: list[Queue[Any]] = []

    def register(q: Queue[Any]) -> Queue[Any]:
        queues.append(q)
        return q

    yield register
    for q in queues:
        q.shut_down()


@pytest.fixture
def dq(clock: FakeClock, shutdown_later: Callable[[Queue[Any]], Queue[Any]]) -> DelayingQueue[str]:
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    shutdown_later(q)
    return q


def start(target: Callable[[], Any]) -> threading.Thread:
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


# --------------------------------------------------------------------------- basic queue


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


# --------------------------------------------------------------------------- delaying queue


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


def test_background_thread_moves_items_and_is_woken_by_earlier_item(
    shutdown_later: Callable[[Queue[Any]], Queue[Any]],
) -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=RealClock())
    shutdown_later(q)
    q.add_after("late", 60.0)
    time.sleep(0.005)  # let the thread go to sleep on the 60 s deadline
    q.add_after("soon", 0.01)
    t0 = time.monotonic()
    assert q.get(timeout=JOIN) == ("soon", False)
    assert time.monotonic() - t0 < 1.0  # woken, not the 10 s heartbeat or 60 s
    assert q.num_waiting() == 1


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


# --------------------------------------------------------------------------- rate limiting queue


def test_rate_limiting_queue_add_rate_limited_forget_num_requeues(
    clock: FakeClock, shutdown_later: Callable[[Queue[Any]], Queue[Any]]
) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(unique(), clock=clock, metrics=False)
    shutdown_later(q)
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 1
    assert q.len() == 0 and q.num_waiting() == 1
    clock.step(0.005)
    assert q.move_ready_items() == 1
    assert q.get(timeout=0) == ("a", False)
    q.done("a")
    q.add_rate_limited("a")  # second failure: 10 ms
    assert q.num_requeues("a") == 2
    clock.step(0.005)
    assert q.move_ready_items() == 0
    clock.step(0.005)
    assert q.move_ready_items() == 1
    q.forget("a")
    assert q.num_requeues("a") == 0


def test_rate_limiting_queue_uses_given_limiter(
    clock: FakeClock, shutdown_later: Callable[[Queue[Any]], Queue[Any]]
) -> None:
    stub = StubLimiter(0.0, 4)
    q: RateLimitingQueue[str] = RateLimitingQueue("", stub, clock, False)
    shutdown_later(q)
    q.add_rate_limited("a")
    assert q.len() == 1  # zero delay: immediate
    assert q.num_requeues("a") == 4
    q.forget("a")
    assert stub.calls == [("when", "a"), ("forget", "a")]


def test_rate_limiting_queue_ignores_add_rate_limited_after_shutdown(clock: FakeClock) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(unique(), clock=clock)
    q.shut_down()
    q.add_rate_limited("a")
    assert q.num_waiting() == 0 and q.len() == 0
    assert REGISTRY.get_sample_value("workqueue_retries_total", {"name": q.name}) == 0.0


# --------------------------------------------------------------------------- metrics


def sample(metric: str, name: str) -> float | None:
    return REGISTRY.get_sample_value(metric, {"name": name})


def test_metrics_track_adds_depth_latency_and_work_duration(clock: FakeClock) -> None:
    q: Queue[str] = Queue(unique(), clock=clock)
    n = q.name
    q.add("a")
    q.add("a")  # deduplicated: not counted
    q.add("b")
    assert sample("workqueue_adds_total", n) == 2.0
    assert sample("workqueue_depth", n) == 2.0

    clock.step(2.0)
    assert q.get() == ("a", False)
    assert sample("workqueue_depth", n) == 1.0
    assert sample("workqueue_queue_duration_seconds_count", n) == 1.0
    assert sample("workqueue_queue_duration_seconds_sum", n) == 2.0

    clock.step(3.0)
    q.done("a")
    assert sample("workqueue_work_duration_seconds_count", n) == 1.0
    assert sample("workqueue_work_duration_seconds_sum", n) == 3.0

    assert q.get() == ("b", False)  # waited 5 s
    assert sample("workqueue_queue_duration_seconds_count", n) == 2.0
    assert sample("workqueue_queue_duration_seconds_sum", n) == 7.0
    assert sample("workqueue_depth", n) == 0.0


def test_metrics_depth_counts_add_during_processing(clock: FakeClock) -> None:
    q: Queue[str] = Queue(unique(), clock=clock)
    n = q.name
    q.add("a")
    q.get()
    q.add("a")  # dirty while processing: counted as an add and as depth
    assert sample("workqueue_adds_total", n) == 2.0
    assert sample("workqueue_depth", n) == 1.0
    q.done("a")
    assert sample("workqueue_depth", n) == 1.0
    q.get()
    assert sample("workqueue_depth", n) == 0.0


def test_metrics_unfinished_work_and_longest_running(clock: FakeClock) -> None:
    q: Queue[str] = Queue(unique(), clock=clock)
    n = q.name
    q.add("a")
    q.add("b")
    q.update_unfinished_work()
    assert sample("workqueue_unfinished_work_seconds", n) == 0.0
    q.get()  # a starts at t0
    clock.step(3.0)
    q.get()  # b starts at t0+3
    clock.step(2.0)
    assert sample("workqueue_unfinished_work_seconds", n) == 0.0, "only updated on demand"
    q.update_unfinished_work()
    assert sample("workqueue_unfinished_work_seconds", n) == 7.0  # 5 + 2
    assert sample("workqueue_longest_running_processor_seconds", n) == 5.0
    q.done("a")
    q.update_unfinished_work()
    assert sample("workqueue_unfinished_work_seconds", n) == 2.0
    assert sample("workqueue_longest_running_processor_seconds", n) == 2.0
    q.done("b")
    q.update_unfinished_work()
    assert sample("workqueue_unfinished_work_seconds", n) == 0.0
    assert sample("workqueue_longest_running_processor_seconds", n) == 0.0


def test_metrics_retries_count_each_add_rate_limited(
    clock: FakeClock, shutdown_later: Callable[[Queue[Any]], Queue[Any]]
) -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(unique(), clock=clock)
    shutdown_later(q)
    n = q.name
    assert sample("workqueue_retries_total", n) == 0.0
    q.add_rate_limited("a")
    q.add_rate_limited("a")
    q.add_rate_limited("b")
    assert sample("workqueue_retries_total", n) == 3.0
    q.add("c")
    q.add_after("d", 1.0)
    assert sample("workqueue_retries_total", n) == 3.0
    assert sample("workqueue_adds_total", n) == 1.0  # only c so far
    clock.step(1.0)
    q.move_ready_items()  # a, b (10 ms / 5 ms) and d become ready
    assert sample("workqueue_adds_total", n) == 4.0
    assert sample("workqueue_depth", n) == 4.0


def test_metrics_duration_buckets_are_exponential_1e_8_to_10(clock: FakeClock) -> None:
    q: Queue[str] = Queue(unique(), clock=clock)
    q.add("a")
    clock.step(0.5)
    q.get()
    labels = {"name": q.name}
    metric = "workqueue_queue_duration_seconds_bucket"
    les = ["1e-08", "1e-07", "1e-06", "1e-05", "0.0001", "0.001", "0.01", "0.1", "1.0", "10.0"]
    counts = [REGISTRY.get_sample_value(metric, {**labels, "le": le}) for le in les]
    assert counts == [0.0] * 8 + [1.0, 1.0]
    assert REGISTRY.get_sample_value(metric, {**labels, "le": "+Inf"}) == 1.0
    assert REGISTRY.get_sample_value(metric, {**labels, "le": "100.0"}) is None
    work = "workqueue_work_duration_seconds_bucket"
    assert REGISTRY.get_sample_value(work, {**labels, "le": "1e-08"}) == 0.0


@pytest.mark.parametrize(
    ("name", "metrics"),
    [pytest.param(unique("off"), False, id="metrics-false"), pytest.param("", True, id="unnamed")],
)
def test_metrics_disabled(name: str, metrics: bool, clock: FakeClock) -> None:
    q: Queue[str] = Queue(name, clock=clock, metrics=metrics)
    q.add("a")
    q.get()
    q.done("a")
    q.update_unfinished_work()
    for metric in ("workqueue_adds_total", "workqueue_depth", "workqueue_unfinished_work_seconds"):
        assert REGISTRY.get_sample_value(metric, {"name": name}) is None


def test_module_reload_does_not_register_metrics_twice() -> None:
    code = (
        "import importlib\n"
        "import t9k_operator.runtime.queue_metrics as w\n"
        "depth = w.DEPTH\n"
        "w = importlib.reload(w)\n"
        "assert w.DEPTH is depth\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
