"""Kubernetes Events (core/v1) for the objects the operator manages.

:class:`EventRecorder` is what reconcilers call; :meth:`EventRecorder.record`
never blocks and never raises. It snapshots the involved object, puts the
event on a bounded queue and returns; when the queue is full the event is
dropped, logged (at most once per 10 s) and counted in
``t9k_events_dropped_total``. A daemon thread (:meth:`EventRecorder.start`)
posts the queued events; :meth:`EventRecorder.stop` posts what it can of the
rest and ends it. :meth:`EventRecorder.flush` does the same work in the
calling thread (tests, or a recorder that was never started).

Before posting, events are correlated like client-go's ``EventCorrelator``
(minus its per-object spam filter):

* **Similar events.** Events with the same involved object, type, reason and
  source but *different messages* are tracked per (object, type, reason,
  source). Once more than :data:`MAX_SIMILAR_EVENTS` (10) distinct messages
  have been seen with no gap longer than :data:`SIMILAR_EVENTS_INTERVAL`
  (10 minutes) between them, every further event of that group is folded
  into a single Event whose message is the newest one prefixed with
  ``"(combined from similar events): "``. A gap longer than the interval
  starts the group afresh.
* **Identical events** (same object, type, reason, message, source) are
  folded into one Event: the first is created with ``count: 1``, later ones
  merge-patch ``count``, ``lastTimestamp`` (and ``message``) of that Event.
  The Event's name and count are kept in an LRU cache of 4096 entries, so a
  long-forgotten repeat starts a new Event. If the patch answers NotFound
  (the API server garbage-collected the Event, 1 h TTL by default) a new
  Event is created with ``count: 1``.

Events are named ``<object name>.<16 hex digits>`` (the record time in
nanoseconds, bumped to stay unique within the process) and live in the
involved object's namespace, or ``default`` for cluster-scoped objects. They
carry ``firstTimestamp``/``lastTimestamp`` (core/v1 style, no ``eventTime``),
``source.component``/``source.host``, ``reportingComponent`` and
``reportingInstance``. Messages longer than 1024 characters are truncated.

Writes that fail with a transient error (transport, 5xx, 429) are retried
twice (1 s, then 2 s later, on the injected clock) unless the recorder is
stopping; an event that still cannot be written is logged and counted as
dropped.

Unit tests of other modules record into ``tests.fakes.FakeRecorder``, which
has the same ``record`` signature and keeps what it is given in a list.
"""

from __future__ import annotations

import queue
import secrets
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Generic, Literal, Protocol, TypeVar

import structlog

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.foundation.metrics import EVENTS_DROPPED
from t9k_operator.kube.errors import (
    AlreadyExists,
    ApiError,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
)
from t9k_operator.objects import Obj, digest
from t9k_operator.resources import EVENTS, Resource

log = structlog.get_logger(__name__)

EventType = Literal["Normal", "Warning"]

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

MAX_SIMILAR_EVENTS: Final = 10
SIMILAR_EVENTS_INTERVAL: Final = 600.0
COMBINED_PREFIX: Final = "(combined from similar events): "
CACHE_SIZE: Final = 4096
MAX_MESSAGE_LENGTH: Final = 1024
# Longest object name that still leaves room for ".<16 hex>" in a 253-char name.
_MAX_NAME_PREFIX: Final = 253 - 17
_RETRY_DELAYS: Final = (1.0, 2.0)
_DROP_LOG_INTERVAL: Final = 10.0
_TRANSIENT = (TransportError, ServerError, TooManyRequests)


class Recorder(Protocol):
    """What code that emits events depends on (a real or a fake recorder)."""

    def record(
        self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str
    ) -> None: ...


class EventClient(Protocol):
    """The part of :class:`~t9k_operator.kube.KubeClient` the recorder uses."""

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj: ...

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
    ) -> Obj: ...


V = TypeVar("V")


@dataclass(frozen=True)
class _Pending:
    """One recorded event, snapshotted at ``record`` time."""

    involved: tuple[tuple[str, str], ...]  # involvedObject fields, in a fixed order
    namespace: str
    name: str
    type_: str
    reason: str
    message: str
    wall: datetime
    mono: float


@dataclass(slots=True)
class _Logged:
    """An Event already written: where it is and its count."""

    name: str
    namespace: str
    count: int


@dataclass(slots=True)
class _Similar:
    """The distinct messages seen for one (object, type, reason, source), by digest."""

    messages: tuple[bytes, ...] = ()  # a tuple: most groups hold one, and a set takes 216 bytes
    last: float = 0.0


class _Recent(Generic[V]):
    """The ``size`` most recently used entries (a read counts as a use), in one
    ordered dict (cachetools' LRUCache keeps three structures per entry)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[bytes, V] = OrderedDict()

    def get(self, key: bytes) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def __setitem__(self, key: bytes, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def pop(self, key: bytes) -> None:
        self._items.pop(key, None)


def _digest(*parts: object) -> bytes:
    """The cache key standing for ``parts`` (strings and tuples of them)."""
    return digest(repr(parts))


def format_time(ts: datetime) -> str:
    """RFC 3339 with seconds, UTC (``metav1.Time``)."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
        self._client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self._clock = clock
        self._queue: queue.Queue[_Pending] = queue.Queue(maxsize=max(1, queue_size))
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        # Correlation state, touched only while holding _process_lock.
        self._process_lock = threading.Lock()
        # Keyed by digests (``_digest``) of what client-go keys them by.
        self._logged: _Recent[_Logged] = _Recent(CACHE_SIZE)
        self._similar: _Recent[_Similar] = _Recent(CACHE_SIZE)
        self._last_name_ns = 0
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
    ) -> _Pending | None:
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
        return _Pending(
            involved=tuple(involved),
            namespace=namespace or "default",
            name=name,
            type_=str(type_),
            reason=str(reason),
            message=str(message),
            wall=self._clock.now(),
            mono=self._clock.monotonic(),
        )

    def _note_drop(self, pending: _Pending, why: str) -> None:
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

    def _process_safely(self, pending: _Pending) -> None:
        try:
            with self._process_lock:
                self._process(pending)
        except Exception:
            log.exception("unexpected error while posting an event", reason=pending.reason)
            self._note_drop(pending, "unexpected error")

    # -- correlation and writing ------------------------------------------------

    def _process(self, p: _Pending) -> None:
        source = (self.component, self.host)
        # The object's identity for correlation: everything but resourceVersion.
        ident = tuple(kv for kv in p.involved if kv[0] != "resourceVersion")
        group_key = _digest(ident, p.type_, p.reason, source)
        message = p.message
        if self._is_combined(group_key, message, p.mono):
            key = _digest("combined", group_key)
            message = (COMBINED_PREFIX + message)[:MAX_MESSAGE_LENGTH]
        else:
            key = _digest("exact", group_key, message)

        ts = format_time(p.wall)
        logged = self._logged.get(key)
        if logged is not None:
            patch = {"count": logged.count + 1, "lastTimestamp": ts, "message": message}
            try:
                self._write(
                    lambda: self._client.patch(
                        EVENTS, logged.name, patch, logged.namespace, patch_type="merge"
                    )
                )
            except NotFound:
                log.debug("event to update is gone; creating a new one", event_name=logged.name)
                self._logged.pop(key)
            except ApiError as exc:
                log.warning("could not update event", event_name=logged.name, error=str(exc))
                self._note_drop(p, "write failed")
                return
            else:
                logged.count += 1
                return

        body = self._build(p, message, ts)
        try:
            created = self._create(body)
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
        name = str((created.get("metadata") or {}).get("name") or body["metadata"]["name"])
        self._logged[key] = _Logged(name=name, namespace=p.namespace, count=1)

    def _is_combined(self, group_key: bytes, message: str, now: float) -> bool:
        rec = self._similar.get(group_key)
        if rec is None or now - rec.last > SIMILAR_EVENTS_INTERVAL:
            rec = _Similar()
            self._similar[group_key] = rec
        rec.last = now
        # Past the limit the set stops growing: the group is combined from then on.
        seen = _digest(message)
        if seen not in rec.messages and len(rec.messages) <= MAX_SIMILAR_EVENTS:
            rec.messages = (*rec.messages, seen)
        return len(rec.messages) > MAX_SIMILAR_EVENTS

    def _create(self, body: Obj) -> Obj:
        try:
            return self._write(
                lambda: self._client.create(EVENTS, body, body["metadata"]["namespace"])
            )
        except AlreadyExists:
            # Another writer picked the same name: try once more with a random suffix.
            prefix = body["metadata"]["name"].rsplit(".", 1)[0]
            body["metadata"]["name"] = f"{prefix}.{secrets.token_hex(8)}"
            return self._write(
                lambda: self._client.create(EVENTS, body, body["metadata"]["namespace"])
            )

    def _write(self, call: Callable[[], Obj]) -> Obj:
        """Run ``call``; retry transient failures unless stopping."""
        attempt = 0
        while True:
            try:
                return call()
            except _TRANSIENT as exc:
                if attempt >= len(_RETRY_DELAYS) or self._stopping.is_set():
                    raise
                delay = _RETRY_DELAYS[attempt]
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, 10.0))
                attempt += 1
                log.debug("event write failed; retrying", error=str(exc), delay=delay)
                self._sleep(delay)

    def _sleep(self, seconds: float) -> None:
        # Interruptible: stop() must not wait out a backoff.
        self._clock.wait(self._stopping, seconds)

    def _event_name(self, obj_name: str, wall: datetime) -> str:
        ns = int(wall.timestamp() * 1_000_000) * 1000
        ns = max(ns, self._last_name_ns + 1)
        self._last_name_ns = ns
        return f"{obj_name[:_MAX_NAME_PREFIX]}.{ns & 0xFFFFFFFFFFFFFFFF:016x}"

    def _build(self, p: _Pending, message: str, ts: str) -> Obj:
        involved = {k: v for k, v in p.involved if v}
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self._event_name(p.name, p.wall), "namespace": p.namespace},
            "involvedObject": involved,
            "type": p.type_,
            "reason": p.reason,
            "message": message,
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
