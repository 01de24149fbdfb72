"""A rate-limited, delaying work queue with client-go ``util/workqueue`` semantics.

Controllers do not process events; they process *keys* (``namespace/name``).
Informer handlers add the key of whatever changed, worker threads take keys out,
reconcile the object's current state and mark the key done. This module provides
the queue between them, built from three layers:

:class:`Queue`
    A FIFO of hashable items plus two sets:

    * ``dirty`` -- items that need processing (queued, or waiting for their
      current processing to finish). Adding an item that is already dirty is a
      no-op, so a burst of events for one key collapses into a single reconcile.
    * ``processing`` -- items handed out by :meth:`Queue.get` and not yet
      :meth:`Queue.done`.

    :meth:`Queue.add` of an item that is being processed only marks it dirty; it
    is *not* put in the FIFO. :meth:`Queue.done` puts it back in the FIFO if it
    became dirty meanwhile. Because an item is in the FIFO only while it is not
    being processed, and :meth:`Queue.get` moves it from the FIFO into
    ``processing``, no two workers ever hold the same item at once; and because
    the add during processing is remembered in ``dirty``, the change that caused
    it is still seen by a later reconcile.

:class:`DelayingQueue`
    Adds :meth:`DelayingQueue.add_after`. Items waiting for their time sit on a
    min-heap keyed by ready time (ties broken by insertion order), with a dict
    from item to its live heap entry. Adding an item that is already waiting
    keeps the *earliest* ready time: an earlier one replaces the entry (the old
    heap entry is left behind and skipped when popped), a later one is ignored.
    A daemon thread sleeps until the head of the heap is due (at most
    ``MAX_WAIT`` seconds, as a heartbeat), then moves every due item into the
    queue via :meth:`DelayingQueue.move_ready_items`; a new item wakes it so an
    earlier deadline is not missed. Time comes from the injected
    :class:`~t9k_operator.foundation.clock.Clock`; with a fake clock
    (``tests.fakes.FakeClock``) tests step the clock and call
    :meth:`DelayingQueue.move_ready_items` themselves instead of waiting for
    the thread.

:class:`RateLimitingQueue`
    Adds :meth:`RateLimitingQueue.add_rate_limited`, which asks a rate limiter
    how long the item should wait (``add_after(item, limiter.when(item))``), and
    :meth:`RateLimitingQueue.forget` to reset the item's failure history after a
    successful reconcile. The limiters live in :mod:`t9k_operator.runtime.ratelimit`
    (client-go's); without one, the queue uses controller-runtime's default,
    :func:`~t9k_operator.runtime.ratelimit.default_controller_rate_limiter`.

Metrics use controller-runtime's ``workqueue_*`` names on the default registry,
labelled by queue name. Queues with an empty name, or built with
``metrics=False``, record nothing.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.foundation.metrics import (
    ADDS,
    DEPTH,
    LONGEST_RUNNING,
    QUEUE_LATENCY,
    RETRIES,
    UNFINISHED_WORK,
    WORK_DURATION,
)
from t9k_operator.runtime.ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = [
    "MAX_WAIT",
    "DelayingQueue",
    "Queue",
    "RateLimitingQueue",
]

T = TypeVar("T", bound=Hashable)

MAX_WAIT = 10.0
"""Longest the delaying thread sleeps without re-checking the heap (client-go's heartbeat)."""

# --------------------------------------------------------------------------- metrics


class _NoMetrics:
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


class _QueueMetrics(_NoMetrics):
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


# --------------------------------------------------------------------------- queue


class Queue(Generic[T]):
    """FIFO work queue that deduplicates items and never hands one item to two workers.

    See the module docstring for the dirty/processing rules. ``None`` is not a
    valid item: :meth:`get` uses it to mean "no item".
    """

    def __init__(self, name: str = "", *, clock: Clock = REAL_CLOCK, metrics: bool = True) -> None:
        self.name = name
        self._clock = clock
        self._lock = threading.Lock()
        # Signalled when an item enters the FIFO or the queue shuts down.
        self._has_items = threading.Condition(self._lock)
        # Signalled when ``processing`` becomes empty or a drain is cancelled.
        self._idle = threading.Condition(self._lock)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._metrics: _NoMetrics = _QueueMetrics(name, clock) if metrics and name else _NoMetrics()

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing.

        Ignored after shutdown or if the item is already dirty. If the item is
        being processed it is only marked dirty; :meth:`done` queues it again.
        """
        if item is None:
            raise ValueError("None cannot be queued")
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                return
            self._queue.append(item)
            self._has_items.notify()

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Block until an item is available; return ``(item, shutdown)``.

        After shutdown the remaining items are still handed out, then
        ``(None, True)`` is returned. If ``timeout`` seconds pass with no item
        and no shutdown, ``(None, False)`` is returned. The caller must call
        :meth:`done` with the item when finished with it.
        """
        with self._lock:
            ready = self._has_items.wait_for(
                lambda: bool(self._queue) or self._shutting_down, timeout
            )
            if not ready:
                return None, False
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item, False

    def done(self, item: T) -> None:
        """Mark ``item`` as no longer being processed; requeue it if it was re-added.

        A no-op for an item that is not being processed.
        """
        with self._lock:
            if item not in self._processing:
                return
            self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._has_items.notify()
            elif not self._processing:
                self._idle.notify_all()

    def len(self) -> int:
        """Number of items waiting to be handed out (not counting in-flight ones)."""
        with self._lock:
            return len(self._queue)

    def __len__(self) -> int:
        return self.len()

    def shut_down(self) -> None:
        """Stop accepting items and wake every blocked :meth:`get`.

        Items already queued are still handed out. Cancels a pending
        :meth:`shut_down_with_drain` wait.
        """
        with self._lock:
            self._drain = False
            self._shutting_down = True
            self._has_items.notify_all()
            self._idle.notify_all()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Like :meth:`shut_down`, then wait until every in-flight item is :meth:`done`.

        Returns ``True`` once nothing is being processed, ``False`` if
        ``timeout`` seconds passed first or :meth:`shut_down` cancelled the wait.
        """
        with self._lock:
            self._drain = True
            self._shutting_down = True
            self._has_items.notify_all()
            self._idle.wait_for(lambda: not self._processing or not self._drain, timeout)
            return not self._processing

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def update_unfinished_work(self) -> None:
        """Refresh the unfinished-work and longest-running-processor gauges.

        Meant to be called periodically (controller-runtime does it every 500 ms).
        """
        with self._lock:
            self._metrics.update_unfinished_work()


# --------------------------------------------------------------------------- delaying


class DelayingQueue(Queue[T]):
    """A :class:`Queue` that can also add items after a delay.

    Starts a daemon thread that moves due items into the queue; it stops on
    shutdown, and items still waiting are dropped.
    """

    def __init__(self, name: str = "", *, clock: Clock = REAL_CLOCK, metrics: bool = True) -> None:
        super().__init__(name, clock=clock, metrics=metrics)
        self._waiting_cond = threading.Condition()
        # Entries are (ready_at, seq, item); seq is unique, so items are never compared.
        self._heap: list[tuple[float, int, T]] = []
        self._waiting: dict[T, tuple[float, int, T]] = {}
        self._seq = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(
            target=self._waiting_loop,
            name=f"workqueue-delay-{name or id(self)}",
            daemon=True,
        )
        self._thread.start()

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed (now if ``delay <= 0``).

        If the item is already waiting, the earlier of the two ready times wins.
        Ignored after shutdown.
        """
        if self.shutting_down():
            return
        if delay <= 0:
            self.add(item)
            return
        if item is None:
            raise ValueError("None cannot be queued")
        with self._waiting_cond:
            if self._stopped:
                return
            ready_at = self._clock.monotonic() + delay
            existing = self._waiting.get(item)
            if existing is not None and existing[0] <= ready_at:
                return
            entry = (ready_at, next(self._seq), item)
            self._waiting[item] = entry
            heapq.heappush(self._heap, entry)
            self._waiting_cond.notify()

    def move_ready_items(self) -> int:
        """Move every item whose ready time has come into the queue; return how many.

        The background thread calls this; tests using a FakeClock call it after
        stepping the clock.
        """
        with self._waiting_cond:
            moved, _ = self._move_ready_locked()
            return moved

    def num_waiting(self) -> int:
        """Number of items waiting for their ready time."""
        with self._waiting_cond:
            return len(self._waiting)

    def shut_down(self) -> None:
        self._stop_waiting_loop()
        super().shut_down()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        self._stop_waiting_loop()
        return super().shut_down_with_drain(timeout)

    def _stop_waiting_loop(self) -> None:
        with self._waiting_cond:
            self._stopped = True
            self._heap.clear()
            self._waiting.clear()
            self._waiting_cond.notify_all()

    def _move_ready_locked(self) -> tuple[int, float | None]:
        """Move due items; return (count moved, seconds until the next one or None)."""
        now = self._clock.monotonic()
        moved = 0
        while self._heap:
            entry = self._heap[0]
            ready_at, _, item = entry
            if self._waiting.get(item) is not entry:
                heapq.heappop(self._heap)  # superseded by an earlier ready time
                continue
            if ready_at > now:
                return moved, ready_at - now
            heapq.heappop(self._heap)
            del self._waiting[item]
            self.add(item)
            moved += 1
        return moved, None

    def _waiting_loop(self) -> None:
        with self._waiting_cond:
            while not self._stopped:
                _, wait = self._move_ready_locked()
                self._waiting_cond.wait(MAX_WAIT if wait is None else min(wait, MAX_WAIT))


# --------------------------------------------------------------------------- rate limiting


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
