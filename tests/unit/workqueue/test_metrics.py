"""Tests for t9k_operator.runtime.queue_metrics: the ``workqueue_*`` figures."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY

from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue
from t9k_operator.runtime.workqueue import Queue
from tests.fakes import FakeClock
from tests.unit.workqueue.support import unique


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
