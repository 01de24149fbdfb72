"""Kubernetes Events (core/v1) for the objects the operator manages.

:class:`EventRecorder` is what reconcilers call; :meth:`EventRecorder.record`
never blocks and never raises. It snapshots the involved object, puts the
event on a bounded queue and returns; when the queue is full the event is
dropped, logged (at most once per 10 s) and counted in
``t9k_events_dropped_total``. A daemon thread (:meth:`EventRecorder.start`)
posts the queued events; :meth:`EventRecorder.stop` posts what it can of the
rest and ends it. :meth:`EventRecorder.flush` does the same work in the
calling thread (tests, or a recorder that was never started).

Before posting, :mod:`t9k_operator.runtime.event_correlation` folds similar
and identical events into one Event, and :mod:`t9k_operator.runtime.event_sink`
writes it (names, bodies, retries). If a patch answers NotFound (the API server
garbage-collected the Event, 1 h TTL by default) a new Event is created with
``count: 1``; an event that still cannot be written is logged and counted as
dropped.

Unit tests of other modules record into ``tests.fakes.FakeRecorder``, which
has the same ``record`` signature and keeps what it is given in a list.
"""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Mapping
from typing import Any, Final, Literal, Protocol

import structlog

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.foundation.metrics import EVENTS_DROPPED
from t9k_operator.kube.errors import ApiError, NotFound
from t9k_operator.objects import format_time
from t9k_operator.runtime.event_correlation import EventCorrelator, LoggedEvent
from t9k_operator.runtime.event_sink import (
    MAX_MESSAGE_LENGTH,
    EventClient,
    EventSink,
    PendingEvent,
)

log = structlog.get_logger(__name__)

EventType = Literal["Normal", "Warning"]

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

_DROP_LOG_INTERVAL: Final = 10.0


class Recorder(Protocol):
    """What code that emits events depends on (a real or a fake recorder)."""

    def record(
        self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str
    ) -> None: ...


class EventRecorder:
    """Posts core/v1 Events from a background thread; see the module docstring."""

    def __init__(
        self,
        client: EventClient,
        component: str = "t9k-operator",
        *,
        clock: Clock = REAL_CLOCK,
        queue_size: int = 1000,
        host: str | None = None,
    ) -> None:
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self._clock = clock
        self._queue: queue.Queue[PendingEvent] = queue.Queue(maxsize=max(1, queue_size))
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._sink = EventSink(
            client, self.component, self.host, clock=clock, stopping=self._stopping
        )
        # Correlation state, touched only while holding _process_lock.
        self._process_lock = threading.Lock()
        self._correlator = EventCorrelator(self.component, self.host)
        # Drop accounting (record() may run on many threads).
        self._drop_lock = threading.Lock()
        self._dropped_since_log = 0
        self._last_drop_log: float | None = None
        self.dropped = 0

    # -- the producer side -------------------------------------------------------

    def record(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        """Queue an Event about ``obj``. Never blocks, never raises."""
        try:
            if self._stopping.is_set():
                log.debug("event recorder stopped; event ignored", reason=reason)
                return
            pending = self._snapshot(obj, type_, reason, message)
            if pending is None:
                return
            try:
                self._queue.put_nowait(pending)
            except queue.Full:
                self._note_drop(pending, "queue full")
        except Exception:  # record() must never take down a reconcile
            log.exception("failed to record event", reason=reason)

    def _snapshot(
        self, obj: Mapping[str, Any], type_: str, reason: str, message: str
    ) -> PendingEvent | None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            log.warning("event about an object without a name; ignored", reason=reason)
            return None
        namespace = str(meta.get("namespace") or "")
        involved = [
            ("apiVersion", str(obj.get("apiVersion") or "")),
            ("kind", str(obj.get("kind") or "")),
            ("namespace", namespace),
            ("name", name),
            ("uid", str(meta.get("uid") or "")),
            ("resourceVersion", str(meta.get("resourceVersion") or "")),
        ]
        if len(message) > MAX_MESSAGE_LENGTH:
            message = message[: MAX_MESSAGE_LENGTH - 3] + "..."
        return PendingEvent(
            involved=tuple(involved),
            namespace=namespace or "default",
            name=name,
            type_=str(type_),
            reason=str(reason),
            message=str(message),
            wall=self._clock.now(),
            mono=self._clock.monotonic(),
        )

    def _note_drop(self, pending: PendingEvent, why: str) -> None:
        EVENTS_DROPPED.inc()
        with self._drop_lock:
            self.dropped += 1
            self._dropped_since_log += 1
            now = self._clock.monotonic()
            if self._last_drop_log is not None and now - self._last_drop_log < _DROP_LOG_INTERVAL:
                return
            count, self._dropped_since_log = self._dropped_since_log, 0
            self._last_drop_log = now
        log.warning(
            "event dropped",
            why=why,
            dropped_since_last_log=count,
            object=pending.name,
            namespace=pending.namespace,
            reason=pending.reason,
        )

    # -- the consumer side -------------------------------------------------------

    def start(self) -> None:
        """Start the posting thread (idempotent)."""
        with self._start_lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting events, post what is queued for up to ``timeout`` seconds."""
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("event recorder did not finish in time", queued=self._queue.qsize())
        else:
            self.flush()

    def flush(self) -> int:
        """Post everything queued now, in the calling thread; return how many were taken."""
        taken = 0
        while True:
            try:
                pending = self._queue.get_nowait()
            except queue.Empty:
                return taken
            taken += 1
            self._process_safely(pending)

    def _run(self) -> None:
        log.debug("event recorder started", component=self.component, host=self.host)
        while not self._stopping.is_set():
            try:
                pending = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            self._process_safely(pending)
        left = self.flush()
        log.debug("event recorder stopped", flushed=left)

    def _process_safely(self, pending: PendingEvent) -> None:
        try:
            with self._process_lock:
                self._process(pending)
        except Exception:
            log.exception("unexpected error while posting an event", reason=pending.reason)
            self._note_drop(pending, "unexpected error")

    # -- correlation and writing ------------------------------------------------

    def _process(self, p: PendingEvent) -> None:
        key, message = self._correlator.correlate(p)
        ts = format_time(p.wall)
        logged = self._correlator.logged.get(key)
        if logged is not None:
            patch = {"count": logged.count + 1, "lastTimestamp": ts, "message": message}
            try:
                self._sink.patch(logged.name, logged.namespace, patch)
            except NotFound:
                log.debug("event to update is gone; creating a new one", event_name=logged.name)
                self._correlator.logged.pop(key)
            except ApiError as exc:
                log.warning("could not update event", event_name=logged.name, error=str(exc))
                self._note_drop(p, "write failed")
                return
            else:
                logged.count += 1
                return

        try:
            name = self._sink.create(p, message, ts)
        except ApiError as exc:
            log.warning(
                "could not create event",
                object=p.name,
                namespace=p.namespace,
                reason=p.reason,
                error=str(exc),
            )
            self._note_drop(p, "write failed")
            return
        self._correlator.logged[key] = LoggedEvent(name=name, namespace=p.namespace, count=1)
