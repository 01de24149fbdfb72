"""Clocks: the one place that reads time.

Everything that waits or measures takes a :class:`Clock` so tests can drive
time by hand (:class:`FakeClock`) instead of sleeping. Durations use the
monotonic clock; wall-clock time is only for timestamps shown to users.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    def now(self) -> datetime:
        """Timezone-aware wall-clock time (UTC)."""
        ...

    def sleep(self, seconds: float) -> None: ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Sleep ``seconds`` or until ``event`` is set, whichever comes first;
        whether it is set. How a stoppable loop waits out a backoff."""
        ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(max(seconds, 0.0))


class FakeClock:
    """A clock that moves only when told to (``step``) or when slept on.

    ``sleep`` advances the clock instead of blocking, so code under test that
    sleeps runs instantly and deterministically.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._mono = 1000.0
        self._wall = start or datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def now(self) -> datetime:
        with self._lock:
            return self._wall

    def step(self, seconds: float) -> None:
        with self._lock:
            self._mono += seconds
            self._wall += timedelta(seconds=seconds)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.step(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Returns at once: set, or the clock moved on by ``seconds``."""
        if not event.is_set():
            self.sleep(seconds)
        return event.is_set()


REAL_CLOCK: Clock = RealClock()
