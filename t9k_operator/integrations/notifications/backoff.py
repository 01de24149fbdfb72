"""When to try a delivery again: exponential backoff with jitter, or the
receiver's ``Retry-After``; which answers are worth another try.

Pure: the randomness and the time are given.
"""

from __future__ import annotations

from datetime import datetime
from email.utils import parsedate_to_datetime

FIRST = 1.0
"""Seconds before the second try (at most; the jitter takes up to half off)."""
CAP = 300.0
"""The longest wait between two tries, seconds, whatever the count."""
RETRY_AFTER_CAP = 3600.0
"""A ``Retry-After`` longer than this is taken as this."""


def backoff(attempt: int, rand: float, cap: float = CAP) -> float:
    """Seconds before try ``attempt + 1`` after ``attempt`` failed (1, 2, ...):
    ``FIRST * 2 ** (attempt - 1)`` up to ``cap`` (``--notification-backoff-cap``,
    :data:`CAP` by default), less up to half of it by ``rand`` (0 <= rand < 1),
    so receivers that failed together are not retried together."""
    ceiling = min(cap, FIRST * 2.0 ** max(0, attempt - 1))
    return ceiling - ceiling / 2 * rand


def retry_after(value: str | None, now: datetime) -> float | None:
    """The seconds a ``Retry-After`` header asks for (delay-seconds or an
    HTTP-date), at most :data:`RETRY_AFTER_CAP`; None without one or when
    malformed."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), RETRY_AFTER_CAP)
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        return None
    return min(max(0.0, (at - now).total_seconds()), RETRY_AFTER_CAP)


def wait(attempt: int, asked: float | None, rand: float, cap: float = CAP) -> float:
    """Seconds before the next try: what the receiver asked (``Retry-After``),
    never sooner; else the backoff, up to ``cap``."""
    return asked if asked is not None else backoff(attempt, rand, cap)


def retryable(status: int) -> bool:
    """An HTTP answer that another try may turn into a success: a timeout,
    too many requests, or the server's own trouble. Any other 4xx is the
    receiver refusing the message: trying again sends the same."""
    return status in (408, 425, 429) or status >= 500
