"""The work queues' metrics: controller-runtime's ``workqueue_*`` names on the
default registry, labelled by queue name, and the sink that records nothing
for queues with an empty name or built with ``metrics=False``."""

from __future__ import annotations

from collections.abc import Hashable

from t9k_operator.foundation.clock import Clock
from t9k_operator.foundation.metrics_workqueue import (
    ADDS,
    DEPTH,
    LONGEST_RUNNING,
    QUEUE_LATENCY,
    RETRIES,
    UNFINISHED_WORK,
    WORK_DURATION,
)


class NoQueueMetrics:
    """Metrics sink that records nothing (unnamed queues, ``metrics=False``)."""

    def add(self, item: Hashable) -> None:
        pass

    def get(self, item: Hashable) -> None:
        pass

    def done(self, item: Hashable) -> None:
        pass

    def retry(self) -> None:
        pass

    def update_unfinished_work(self) -> None:
        pass


class QueueMetrics(NoQueueMetrics):
    """Per-queue metrics. Called with the queue's lock held."""

    def __init__(self, name: str, clock: Clock) -> None:
        self._clock = clock
        self._depth = DEPTH.labels(name=name)
        self._adds = ADDS.labels(name=name)
        self._latency = QUEUE_LATENCY.labels(name=name)
        self._work_duration = WORK_DURATION.labels(name=name)
        self._unfinished = UNFINISHED_WORK.labels(name=name)
        self._longest = LONGEST_RUNNING.labels(name=name)
        self._retries = RETRIES.labels(name=name)
        self._add_times: dict[Hashable, float] = {}
        self._processing_start: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        self._add_times.setdefault(item, self._clock.monotonic())

    def get(self, item: Hashable) -> None:
        now = self._clock.monotonic()
        self._depth.dec()
        self._processing_start[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            self._latency.observe(now - added)

    def done(self, item: Hashable) -> None:
        started = self._processing_start.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._clock.monotonic() - started)

    def retry(self) -> None:
        self._retries.inc()

    def update_unfinished_work(self) -> None:
        now = self._clock.monotonic()
        total = 0.0
        oldest = 0.0
        for started in self._processing_start.values():
            age = now - started
            total += age
            oldest = max(oldest, age)
        self._unfinished.set(total)
        self._longest.set(oldest)
