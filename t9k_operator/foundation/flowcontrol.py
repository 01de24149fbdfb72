"""Token-bucket rate limiting, shared by the API client and the workqueue's rate limiters.

The bucket holds up to ``burst`` tokens and refills at ``qps`` tokens per
second. :meth:`TokenBucket.reserve` takes a token now or books the next free
one and returns how long the caller must wait for it, like
``golang.org/x/time/rate``'s ``Reserve().Delay()``: reservations queue up, so
N callers at an empty bucket wait 1/qps, 2/qps, ... seconds.
"""

from __future__ import annotations

import threading

from t9k_operator.foundation.clock import REAL_CLOCK, Clock


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Clock = REAL_CLOCK) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be > 0, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.qps = float(qps)
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._last)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take one token; return the seconds to wait before using it (0 if now)."""
        with self._lock:
            now = self._clock.monotonic()
            self._refill(now)
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def try_take(self) -> bool:
        """Take one token if one is there now; whether it was (nothing is booked)."""
        with self._lock:
            self._refill(self._clock.monotonic())
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def accept(self) -> float:
        """Block until a token is available, then take it; return the seconds waited."""
        delay = self.reserve()
        self._clock.sleep(delay)
        return delay
