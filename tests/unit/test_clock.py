"""Clock.wait: how stoppable loops (reflector, Event recorder, leader election)
wait out a backoff without a test or a stop() waiting with them."""

from __future__ import annotations

import threading
import time

from t9k_operator.foundation.clock import REAL_CLOCK
from tests.fakes import FakeClock


def test_the_real_wait_ends_when_the_event_is_set() -> None:
    stop = threading.Event()
    threading.Timer(0.05, stop.set).start()
    started = time.monotonic()
    assert REAL_CLOCK.wait(stop, 30.0) is True
    assert time.monotonic() - started < 10.0  # not the 30 s asked for


def test_the_real_wait_ends_after_the_time_when_nothing_is_set() -> None:
    assert REAL_CLOCK.wait(threading.Event(), 0.01) is False


def test_the_fake_wait_moves_the_clock_unless_the_event_is_set() -> None:
    clock = FakeClock()
    start = clock.monotonic()
    assert clock.wait(threading.Event(), 30.0) is False
    assert clock.monotonic() == start + 30.0
    stop = threading.Event()
    stop.set()
    assert clock.wait(stop, 30.0) is True
    assert clock.monotonic() == start + 30.0
