"""How fast one client sends: its own token bucket, or the API server's pace.

A client either limits itself (``qps`` / ``burst``) or lets the API server
pace it. An API server with API Priority and Fairness queues each flow's
requests and sheds the excess with ``429 Too Many Requests`` and a
``Retry-After``; every one of its answers names the FlowSchema and priority
level that matched (the headers in :data:`APF_HEADERS`). A client told to
(``lift_limit_under_apf``) keeps its bucket only until such an answer
arrives, so against a server without that protection it stays limited.

Whatever the pace, a 429 with a ``Retry-After`` is retried, for every verb
(as client-go does): the server refused the request before processing it, so
a create is never made twice. Each retry waits that ``Retry-After``, never
less than a backoff growing with each attempt (a server answering ``0`` is not
hammered), and a request gives up after ``max_retries`` of them with
:class:`~t9k_operator.kube.errors.TooManyRequests`. A 429 without one (a
disruption budget refusing an eviction) is an answer for the caller.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping

import structlog

from t9k_operator.foundation.clock import Clock
from t9k_operator.foundation.flowcontrol import TokenBucket
from t9k_operator.foundation.metrics_client import API_LIMITER_WAIT, API_QPS_LIMIT, API_RETRIES

APF_HEADERS = ("X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID")
"""Set on every answer of an API server that runs API Priority and Fairness."""

RETRY_BACKOFF_BASE = 0.25
"""The least wait before the first retry of a 429; doubles with each retry."""
RETRY_BACKOFF_CAP = 10.0
"""The longest the backoff grows to; the server's own ``Retry-After`` is honoured beyond it."""
RETRY_AFTER_CAP = 60.0
"""The longest wait taken from a ``Retry-After``: a bad value never parks a worker for long."""

_log = structlog.get_logger("t9k_operator.kube")


def retry_delay(attempt: int, retry_after: float, jitter: float = 1.0) -> float:
    """Seconds to wait before retry ``attempt`` (0 for the first) of a 429.

    The server's ``Retry-After`` (up to :data:`RETRY_AFTER_CAP`), but never less
    than a backoff that doubles from :data:`RETRY_BACKOFF_BASE` up to
    :data:`RETRY_BACKOFF_CAP`: a server answering ``Retry-After: 0`` is not
    hammered. ``jitter`` (1 to 1.1 in use) spreads workers refused at once.
    """
    backoff = min(RETRY_BACKOFF_BASE * 2.0**attempt, RETRY_BACKOFF_CAP)
    told = min(max(retry_after, 0.0), RETRY_AFTER_CAP)
    return max(told, backoff) * jitter


class Pace:
    """One client's pace: its limiter while it has one, and its 429 retries.

    Thread-safe. ``qps < 0`` means no limiter at all; ``lift_under_apf`` drops
    the limiter at the first answer that carries :data:`APF_HEADERS`.
    """

    def __init__(
        self,
        client: str,
        qps: float,
        burst: int,
        *,
        lift_under_apf: bool,
        max_retries: int,
        clock: Clock,
    ) -> None:
        self.client = client
        self.max_retries = max_retries
        self._clock = clock
        self._limiter: TokenBucket | None = TokenBucket(qps, burst, clock) if qps >= 0 else None
        self._watch_for_apf = lift_under_apf and self._limiter is not None
        self._lock = threading.Lock()
        API_QPS_LIMIT.labels(client).set(self._limiter.qps if self._limiter else 0.0)

    @property
    def limiter(self) -> TokenBucket | None:
        """The client-side token bucket in force, or None when there is none."""
        return self._limiter

    def before_send(self, method: str) -> None:
        """Wait for the limiter, if one is in force (and count the wait)."""
        limiter = self._limiter
        if limiter is not None:
            API_LIMITER_WAIT.labels(self.client, method).observe(limiter.accept())

    def answered(self, headers: Mapping[str, str]) -> None:
        """Note an answer's headers: the first one from an API server with API
        Priority and Fairness lifts the limiter, when this client lifts it."""
        if not self._watch_for_apf or not any(headers.get(h) for h in APF_HEADERS):
            return
        with self._lock:
            if not self._watch_for_apf:
                return
            self._watch_for_apf = False
            self._limiter = None
        API_QPS_LIMIT.labels(self.client).set(0.0)
        _log.info(
            "the API server paces this client (API Priority and Fairness): "
            "no client-side limit, its 429 answers are retried",
            client=self.client,
        )

    def retry_wait(self, attempt: int, retry_after: float) -> float | None:
        """After a 429: sleep before retry ``attempt`` and return the seconds
        slept, or None (no sleep) when the request has had its retries."""
        if attempt >= self.max_retries:
            return None
        delay = retry_delay(attempt, retry_after, random.uniform(1.0, 1.1))
        API_RETRIES.labels(self.client, "TooManyRequests").inc()
        self._clock.sleep(delay)
        return delay
