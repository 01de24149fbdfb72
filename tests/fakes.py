"""Test doubles of production interfaces, shared by the unit tests.

They live here, not beside what they stand in for, so no production module
carries code that only tests run:

* :class:`FakeClock` - a :class:`~t9k_operator.foundation.clock.Clock` whose
  time moves only when a test says so, or when code under test sleeps.
* :class:`FakeRecorder` - a :class:`~t9k_operator.runtime.events.Recorder`
  that keeps what it is given (as :class:`RecordedEvent` tuples) instead of
  posting Events.
* :class:`StubLimiter` - a :class:`~t9k_operator.runtime.ratelimit.RateLimiter`
  that answers fixed figures and logs the calls it gets.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from t9k_operator.runtime.events import EventType


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


class RecordedEvent(NamedTuple):
    """What :class:`FakeRecorder` keeps: type, reason and message come first."""

    type: str
    reason: str
    message: str
    kind: str
    namespace: str
    name: str


class FakeRecorder:
    """Keeps recorded events in :attr:`events`; for unit tests of other modules."""

    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []
        self._lock = threading.Lock()

    def record(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        event = RecordedEvent(
            type=type_,
            reason=reason,
            message=message,
            kind=str(obj.get("kind") or ""),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
        )
        with self._lock:
            self.events.append(event)

    def reasons(self) -> list[str]:
        with self._lock:
            return [e.reason for e in self.events]

    def start(self) -> None:
        pass

    def stop(self, timeout: float = 5.0) -> None:
        pass


class StubLimiter:
    """Answers ``delay`` and ``requeues`` for every item; logs ``when`` and ``forget``."""

    def __init__(self, delay: float, requeues: int) -> None:
        self.delay = delay
        self.requeues = requeues
        self.calls: list[tuple[str, Hashable]] = []

    def when(self, item: Hashable) -> float:
        self.calls.append(("when", item))
        return self.delay

    def forget(self, item: Hashable) -> None:
        self.calls.append(("forget", item))

    def num_requeues(self, item: Hashable) -> int:
        return self.requeues
