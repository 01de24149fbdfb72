"""The reflector: keeps a handler in step with one resource through list + watch.

Owns the list/watch loop of one resource (client-go's ``cache.Reflector``),
the :class:`ListerWatcher` seam it reads through, the adapter of that seam to
:class:`~t9k_operator.kube.KubeClient`, the retry :class:`Backoff`, and the
object transform applied before anything reaches the cache.

Design of :meth:`Reflector.run`:

1. **List** everything, then hand it to ``handler.on_replace(items, rv)``.
   After the first successful list :meth:`Reflector.has_synced` is true.
2. **Watch** from the last seen resourceVersion with a server-side timeout
   drawn uniformly from ``[min_watch_timeout, max_watch_timeout]`` (5-10 min
   by default) so many watches do not all expire together. ``ADDED``,
   ``MODIFIED`` and ``DELETED`` go to ``on_add``/``on_update``/``on_delete``
   and advance the resourceVersion; ``BOOKMARK`` only advances it.
3. When the watch ends normally (server timeout) re-watch from the last
   resourceVersion at once; when it breaks with :class:`TransportError`, or
   ends within a second without a single event (a server closing watches
   at once must not be hammered), re-watch from there too (no relist),
   after a backoff delay.
4. On :class:`Gone` (410: that resourceVersion is compacted away) or any
   other error, go back to 1 (relist) after a backoff delay.

Backoff is exponential over *consecutive* failures (0.8 s doubling to a 30 s
cap, plus up to 20 % random jitter) and resets after a success: a list that
worked, a watch that delivered an event, or a watch that ended normally.
Delays sleep on the injected :class:`~t9k_operator.foundation.clock.Clock` (a fake clock
makes them instant in tests); with the real clock the wait is on the stop
event instead, so :meth:`Reflector.stop` is never held up by a backoff.

:meth:`Reflector.stop` sets the stop flag and closes the current watch
stream, which ends the blocking read in the loop's thread.

Every object (listed or watched, not bookmarks) passes through ``transform``
first; the default, :func:`compact_for_cache`, drops
``metadata.managedFields``, which is large and never read by the operator,
and shares the strings every object repeats. Transforms may change the
object in place: it was just decoded and is not shared yet.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from t9k_operator.foundation import metrics
from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.kube.client import collect
from t9k_operator.kube.errors import ApiError, Gone, TransportError, error_from_status_object
from t9k_operator.objects import Obj

if TYPE_CHECKING:
    from t9k_operator.kube.client import KubeClient
    from t9k_operator.resources import Resource

Transform = Callable[[Obj], Obj]

log = structlog.get_logger(__name__)

# A watch that ends normally this fast (seconds) with no event counts as a failure.
_SHORT_WATCH = 1.0


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop ``metadata.managedFields`` (in place) and return ``obj``."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


# Strings up to this length are shared between cached objects: field names,
# phases, images, label values. Longer ones (commands, annotations) rarely repeat.
_SHARED_STRING_MAX = 64


def _shared(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {sys.intern(k): _shared(v) for k, v in value.items()}
    if kind is list:
        return [_shared(v) for v in value]
    if kind is str and len(value) <= _SHARED_STRING_MAX:
        return sys.intern(value)
    return value


def compact_for_cache(obj: Obj) -> Obj:
    """Default transform: :func:`strip_managed_fields`, then a copy of ``obj``
    whose field names and short strings are shared with every other cached
    object. Each watch event is decoded on its own, so without this every
    cached pod holds its own copy of ``"metadata"``, ``"Running"``, its image
    name and so on: sharing them takes a third to a half off the cache
    (docs/benchmarks.md). Interned strings are freed with their last object."""
    result: Obj = _shared(strip_managed_fields(obj))
    return result


# -- the seam --------------------------------------------------------------------


class WatchEvents(Protocol):
    """One watch: iterate it for ``{"type": ..., "object": {...}}``; ``close()`` ends it.

    ``close()`` may be called from another thread while iteration blocks; the
    iteration must then end (normally or with an error) soon after.
    """

    def __iter__(self) -> Iterator[Obj]: ...

    def close(self) -> None: ...


class ListerWatcher(Protocol):
    def list(self) -> tuple[list[Obj], str]:
        """Every object and the list's resourceVersion."""
        ...

    def watch(self, resource_version: str, timeout_seconds: int) -> WatchEvents:
        """Watch from ``resource_version``; the server ends it after ``timeout_seconds``."""
        ...


class ResourceListerWatcher:
    """:class:`ListerWatcher` over a :class:`KubeClient` for one resource.

    ``namespace=None`` watches all namespaces; ``label_selector`` narrows both
    the list and the watch. Watches ask for bookmarks.
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector

    def list(self) -> tuple[list[Obj], str]:
        """Every object, a page per request, each counted in
        ``t9k_informer_requests_total``."""
        requests = metrics.INFORMER_REQUESTS.labels(resource=self.resource.plural, verb="list")

        def counted() -> Iterator[Obj]:
            for page in self.client.list_pages(
                self.resource, self.namespace, label_selector=self.label_selector
            ):
                requests.inc()
                yield page

        return collect(counted())

    def watch(self, resource_version: str, timeout_seconds: int) -> WatchEvents:
        metrics.INFORMER_REQUESTS.labels(resource=self.resource.plural, verb="watch").inc()
        return self.client.watch(
            self.resource,
            self.namespace,
            resource_version=resource_version or None,
            timeout_seconds=timeout_seconds,
            label_selector=self.label_selector,
            allow_bookmarks=True,
        )

    def __repr__(self) -> str:
        where = self.namespace or "*"
        sel = f" -l {self.label_selector}" if self.label_selector else ""
        return f"<ResourceListerWatcher {self.resource.plural} in {where}{sel}>"


class ReflectorHandler(Protocol):
    """What the reflector feeds (the informer implements it)."""

    def on_replace(self, items: list[Obj], resource_version: str) -> None: ...

    def on_add(self, obj: Obj) -> None: ...

    def on_update(self, obj: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


# -- backoff ---------------------------------------------------------------------


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


# -- the reflector ---------------------------------------------------------------


class Reflector:
    """Runs the list/watch loop of one resource into a :class:`ReflectorHandler`.

    :meth:`run` blocks until :meth:`stop`; run it in a thread of your own (the
    informer does). A stopped reflector cannot be restarted.
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        handler: ReflectorHandler,
        *,
        clock: Clock = REAL_CLOCK,
        min_watch_timeout: int = 300,
        max_watch_timeout: int = 600,
        rng: random.Random | None = None,
        transform: Transform | None = compact_for_cache,
        backoff: Backoff | None = None,
        name: str | None = None,
    ) -> None:
        if not 1 <= min_watch_timeout <= max_watch_timeout:
            raise ValueError(
                f"need 1 <= min_watch_timeout ({min_watch_timeout}) "
                f"<= max_watch_timeout ({max_watch_timeout})"
            )
        self._lw = lister_watcher
        self._handler = handler
        self._clock = clock
        self.min_watch_timeout = min_watch_timeout
        self.max_watch_timeout = max_watch_timeout
        self._rng = rng or random.Random()
        self._transform = transform
        self.backoff = backoff or Backoff(rng=self._rng)
        self.name = name or repr(lister_watcher)
        self._log = log.bind(reflector=self.name)

        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._stream: WatchEvents | None = None
        self._synced = False
        self._last_rv = ""
        # Counters, handy for metrics and tests.
        self.list_count = 0
        self.watch_count = 0

    # -- state -------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first list has been handed to the handler."""
        with self._lock:
            return self._synced

    @property
    def last_sync_resource_version(self) -> str:
        """The newest resourceVersion seen (list, event or bookmark)."""
        with self._lock:
            return self._last_rv

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    # -- control -----------------------------------------------------------------

    def stop(self) -> None:
        """End :meth:`run` promptly: set the flag and close the open watch, if any."""
        self._stopped.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            _close_quietly(stream)

    def run(self) -> None:
        """The list/watch loop; returns when :meth:`stop` is called."""
        self._log.debug("reflector starting")
        need_list = True
        while not self._stopped.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                    self.backoff.reset()
                    if self._stopped.is_set():
                        break
                started = self._clock.monotonic()
                received = self._watch()
                if self._stopped.is_set():
                    break
                if received == 0 and self._clock.monotonic() - started < _SHORT_WATCH:
                    # Ended at once with nothing in it: do not hammer the server.
                    self._log.info("watch ended immediately; re-watching after backoff")
                    self._sleep(self.backoff.next())
                else:
                    # Normal end (server-side timeout): re-watch from the last rv now.
                    self.backoff.reset()
            except TransportError as exc:
                if self._stopped.is_set():
                    break
                # No answer / connection broke: retry the same step (a watch
                # re-watches from the last resourceVersion, which is still good).
                self._log.info(
                    "list/watch connection failed; retrying after backoff",
                    relist=need_list,
                    error=str(exc),
                    resource_version=self.last_sync_resource_version,
                )
                self._sleep(self.backoff.next())
            except Gone as exc:
                if self._stopped.is_set():
                    break
                self._log.info("resourceVersion too old (410); relisting", error=str(exc))
                need_list = True
                self._sleep(self.backoff.next())
            except Exception as exc:
                if self._stopped.is_set():
                    break
                delay = self.backoff.next()
                self._log.warning(
                    "list/watch failed; relisting after backoff",
                    error=f"{type(exc).__name__}: {exc}",
                    failures=self.backoff.failures,
                    delay=round(delay, 3),
                    # A traceback only for what is not an API answer (a bug, likely).
                    exc_info=not isinstance(exc, ApiError),
                )
                need_list = True
                self._sleep(delay)
        self._log.debug("reflector stopped")

    # -- one list, one watch ---------------------------------------------------------

    def _list(self) -> None:
        self.list_count += 1
        items, resource_version = self._lw.list()
        if self._stopped.is_set():
            return
        items = [self._apply_transform(item) for item in items]
        self._handler.on_replace(items, resource_version)
        with self._lock:
            self._last_rv = resource_version
            self._synced = True
        self._log.debug("listed", count=len(items), resource_version=resource_version)

    def _watch(self) -> int:
        """One watch until it ends; returns how many events (bookmarks too) it carried."""
        timeout = self._rng.randint(self.min_watch_timeout, self.max_watch_timeout)
        self.watch_count += 1
        stream = self._lw.watch(self.last_sync_resource_version, timeout)
        with self._lock:
            self._stream = stream
        received = 0
        try:
            # stop() may have run between watch() and publishing the stream.
            if self._stopped.is_set():
                return received
            for event in stream:
                if self._stopped.is_set():
                    break
                received += 1
                if self._handle(event):
                    self.backoff.reset()
            return received
        finally:
            with self._lock:
                self._stream = None
            _close_quietly(stream)

    def _handle(self, event: Obj) -> bool:
        """Apply one watch event; True if it was a real change."""
        kind = event.get("type")
        obj = event.get("object")
        if kind == "ERROR":
            raise error_from_status_object(obj if isinstance(obj, dict) else {})
        if not isinstance(obj, dict):
            self._log.warning("watch event without an object; ignored", type=kind)
            return False
        resource_version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            self._advance(resource_version)
            return False
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            self._log.warning("unknown watch event type; ignored", type=kind)
            return False
        obj = self._apply_transform(obj)
        if kind == "ADDED":
            self._handler.on_add(obj)
        elif kind == "MODIFIED":
            self._handler.on_update(obj)
        else:
            self._handler.on_delete(obj)
        self._advance(resource_version)
        return True

    def _advance(self, resource_version: str) -> None:
        if resource_version:
            with self._lock:
                self._last_rv = resource_version

    def _apply_transform(self, obj: Obj) -> Obj:
        return self._transform(obj) if self._transform is not None else obj

    def _sleep(self, seconds: float) -> None:
        # Interruptible: stop() must not wait out a backoff.
        self._clock.wait(self._stopped, seconds)


def _close_quietly(stream: WatchEvents) -> None:
    try:
        stream.close()
    except Exception:  # closing a dead stream may fail; nothing to do
        log.debug("closing watch stream failed", exc_info=True)
