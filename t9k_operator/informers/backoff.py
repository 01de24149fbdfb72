"""The retry delays of the list/watch loop: exponential :class:`Backoff` over
consecutive failures, with upward jitter."""

from __future__ import annotations

import random


class Backoff:
    """Exponential backoff over consecutive failures, with upward jitter.

    The n-th consecutive :meth:`next` returns ``min(cap, initial * factor**(n-1))``
    times a random factor in ``[1, 1 + jitter]``. :meth:`reset` starts over.
    Not thread-safe (one reflector loop owns it).
    """

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.2,
        rng: random.Random | None = None,
    ) -> None:
        if initial <= 0 or cap < initial or factor < 1 or jitter < 0:
            raise ValueError("need 0 < initial <= cap, factor >= 1, jitter >= 0")
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self._rng = rng or random.Random()
        self.failures = 0

    def next(self) -> float:
        """Count one more failure and return how long to wait before retrying."""
        self.failures += 1
        # Cap the exponent too so a long outage cannot overflow the float.
        base = min(self.cap, self.initial * self.factor ** min(self.failures - 1, 64))
        return base * (1.0 + self.jitter * self._rng.random())

    def reset(self) -> None:
        self.failures = 0
