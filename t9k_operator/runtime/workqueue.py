"""A rate-limited, delaying work queue with client-go ``util/workqueue`` semantics.

Controllers do not process events; they process *keys* (``namespace/name``).
Informer handlers add the key of whatever changed, worker threads take keys out,
reconcile the object's current state and mark the key done. The queue between
them is built from three layers, one module each: this one owns the first,
:mod:`t9k_operator.runtime.delayingqueue` the second,
:mod:`t9k_operator.runtime.ratelimitingqueue` the third, and
:mod:`t9k_operator.runtime.queue_metrics` what they record.

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

import threading
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.runtime.queue_metrics import NoQueueMetrics, QueueMetrics

T = TypeVar("T", bound=Hashable)


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
        self._metrics: NoQueueMetrics = (
            QueueMetrics(name, clock) if metrics and name else NoQueueMetrics()
        )

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
