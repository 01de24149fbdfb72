"""The reflector: keeps a handler in step with one resource through list + watch.

Owns the list/watch loop of one resource (client-go's ``cache.Reflector``).
It reads through the :class:`~t9k_operator.informers.listwatch.ListerWatcher`
seam, waits out failures with a :class:`~t9k_operator.informers.backoff.Backoff`
and passes every object through a transform
(:mod:`t9k_operator.informers.transform`) before anything reaches the cache.

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
first; the default,
:func:`~t9k_operator.informers.transform.compact_for_cache`, drops
``metadata.managedFields``, which is large and never read by the operator,
and shares the strings every object repeats.
"""

from __future__ import annotations

import random
import threading
from typing import Protocol

import structlog

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.informers.backoff import Backoff
from t9k_operator.informers.listwatch import ListerWatcher, WatchEvents
from t9k_operator.informers.transform import Transform, compact_for_cache
from t9k_operator.kube.errors import ApiError, Gone, TransportError, error_from_status_object
from t9k_operator.objects import Obj

log = structlog.get_logger(__name__)

# A watch that ends normally this fast (seconds) with no event counts as a failure.
_SHORT_WATCH = 1.0


class ReflectorHandler(Protocol):
    """What the reflector feeds (the informer implements it)."""

    def on_replace(self, items: list[Obj], resource_version: str) -> None: ...

    def on_add(self, obj: Obj) -> None: ...

    def on_update(self, obj: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


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
