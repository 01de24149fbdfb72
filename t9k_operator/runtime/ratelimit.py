"""Rate limiters: how long a failed item waits before it is retried.

:class:`~t9k_operator.runtime.workqueue.RateLimitingQueue` asks its limiter
:meth:`RateLimiter.when` each time an item fails, and calls
:meth:`RateLimiter.forget` once the item succeeds. The limiters mirror
client-go's ``util/workqueue`` ones:

:class:`ItemExponentialFailureRateLimiter`
    Per item: ``base * 2**failures`` seconds, capped at ``max_delay``; an item
    that keeps failing backs off, and one item's failures never slow another.

:class:`BucketRateLimiter`
    For all items together: a :class:`~t9k_operator.foundation.flowcontrol.TokenBucket`
    of ``qps`` and ``burst``, so a mass failure cannot retry faster than that.

:class:`MaxOfRateLimiter`
    Combines limiters: every limiter sees every failure, and the longest delay
    wins.

:func:`default_controller_rate_limiter` is controller-runtime's default, the
per-item backoff and the overall bucket combined. The limiters keep no queue
of their own and know nothing of the queue that uses them.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.foundation.flowcontrol import TokenBucket

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", contravariant=True)


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """Seconds ``item`` should wait before it is processed again."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many times ``item`` has been requeued (failed)."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per-item exponential backoff: ``base * 2**failures``, capped at ``max_delay``."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base = base
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        if self.base <= 0:
            return 0.0
        try:
            backoff = self.base * 2.0**exp
        except OverflowError:
            return self.max_delay
        return min(backoff, self.max_delay)  # also caps inf

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """Overall rate limit shared by all items: a token bucket of ``qps`` and ``burst``."""

    def __init__(self, qps: float = 10, burst: int = 100, clock: Clock = REAL_CLOCK) -> None:
        self.bucket = TokenBucket(qps, burst, clock)

    def when(self, item: object) -> float:
        return self.bucket.reserve()

    def forget(self, item: object) -> None:
        pass

    def num_requeues(self, item: object) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """Combines limiters: the longest delay and the highest requeue count win."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: T) -> float:
        # Every limiter sees every failure, as in client-go.
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock = REAL_CLOCK) -> MaxOfRateLimiter[Hashable]:
    """controller-runtime's default: per-item 5 ms..1000 s backoff, overall 10 qps burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10, 100, clock),
    )
