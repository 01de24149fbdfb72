"""Fixtures of the work queue tests: a fake clock, queues shut down after the
test, and a delaying queue on the fake clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from t9k_operator.runtime.delayingqueue import DelayingQueue
from t9k_operator.runtime.workqueue import Queue
from tests.fakes import FakeClock


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
