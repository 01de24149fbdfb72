"""The rate-limited layer of the work queue, the one controllers use:
:class:`RateLimitingQueue` delays a failed item as its rate limiter says (see
:mod:`t9k_operator.runtime.workqueue` for how the layers fit)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.runtime.delayingqueue import DelayingQueue
from t9k_operator.runtime.ratelimit import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)


class RateLimitingQueue(DelayingQueue[T]):
    """The queue controllers use: a :class:`DelayingQueue` plus a rate limiter."""

    def __init__(
        self,
        name: str,
        rate_limiter: RateLimiter[T] | None = None,
        clock: Clock = REAL_CLOCK,
        metrics: bool = True,
    ) -> None:
        super().__init__(name, clock=clock, metrics=metrics)
        self.rate_limiter: RateLimiter[T] = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter(clock)
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the rate limiter says (counts as a retry)."""
        delay = self.rate_limiter.when(item)
        if self.shutting_down():
            return
        with self._lock:
            self._metrics.retry()
        self.add_after(item, delay)

    def forget(self, item: T) -> None:
        """Reset the item's failure history (call after it was processed successfully)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
