"""Clocks: the one place that reads time.

Everything that waits or measures takes a :class:`Clock` so tests can drive
time by hand (``tests.fakes.FakeClock``) instead of sleeping. Durations use the
monotonic clock; wall-clock time is only for timestamps shown to users.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
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


REAL_CLOCK: Clock = RealClock()
