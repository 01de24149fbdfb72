"""Tests for t9k_operator.runtime.ratelimitingqueue: adds as the rate limiter says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import REGISTRY

from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue
from t9k_operator.runtime.workqueue import Queue
from tests.fakes import FakeClock, StubLimiter
from tests.unit.workqueue.support import unique


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
