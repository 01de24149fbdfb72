"""The shared informer: one cache and one list/watch per resource, many listeners.

Owns an :class:`~t9k_operator.informers.store.Indexer` (the cache),
a :class:`~t9k_operator.informers.reflector.Reflector` that fills it, the
daemon thread that runs the reflector, and the registered event handlers.
Controllers read objects from :attr:`SharedInformer.store` (or
:meth:`SharedInformer.get` / :meth:`SharedInformer.by_index`) instead of the
API server, and react to changes through handlers that enqueue keys.

Design:

* The informer is the reflector's handler. Each change is written to the
  store and then dispatched to every handler, in the reflector's thread,
  under one dispatch lock: handlers see events in order, and the store
  already reflects an event when its handler runs. Handlers must be quick
  (enqueue a key, no API calls).
* A watch ``ADDED``/``MODIFIED`` for a key the store lacks fires ``add``; for
  a key it has, ``update(old, new)``. Updates fire even when the
  resourceVersion did not change (a relist re-delivers everything).
* On a relist (``on_replace``, after a 410 or any list/watch failure) the new
  list is diffed against the store: keys that vanished while no watch was
  open get a synthesized ``delete`` with the *last known* object (the idea
  of client-go's ``DeletedFinalStateUnknown``: the final state is unknown,
  the object handed over is what the cache last saw); the rest fire
  ``add`` or ``update``.
* :meth:`SharedInformer.add_event_handler` on a running informer first
  delivers a synthetic ``add`` for every cached object, under the dispatch
  lock, so the new handler misses nothing and sees no event twice.
* A handler that raises is logged and skipped; it never stops the informer
  thread nor the other handlers.
* Objects passed to handlers and returned by reads are the cached ones:
  read-only; ``copy.deepcopy`` before changing.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.informers.listwatch import ListerWatcher
from t9k_operator.informers.reflector import Reflector
from t9k_operator.informers.store import Indexer, Indexers
from t9k_operator.informers.transform import Transform, compact_for_cache
from t9k_operator.objects import Obj, ObjList, make_key, object_key

AddFunc = Callable[[Obj], None]
UpdateFunc = Callable[[Obj, Obj], None]
DeleteFunc = Callable[[Obj], None]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, eq=False)
class EventHandlerRegistration:
    """A registered handler; pass it to :meth:`SharedInformer.remove_event_handler`."""

    on_add: AddFunc | None = None
    on_update: UpdateFunc | None = None
    on_delete: DeleteFunc | None = None


class SharedInformer:
    """A cache of one resource kept current by list/watch, with event handlers.

    ``indexers=None`` installs the built-in indexes (namespace, controller
    uid). ``transform`` runs on every object before it is cached (default:
    :func:`compact_for_cache`, which drops ``metadata.managedFields`` and shares
    repeated strings; ``None`` keeps objects as they are).
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        *,
        indexers: Indexers | None = None,
        transform: Transform | None = compact_for_cache,
        clock: Clock = REAL_CLOCK,
        name: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name or repr(lister_watcher)
        self._store = Indexer(indexers)
        self._reflector = Reflector(
            lister_watcher,
            self,
            clock=clock,
            rng=rng,
            transform=transform,
            name=self.name,
        )
        self._log = log.bind(informer=self.name)
        self._handlers: tuple[EventHandlerRegistration, ...] = ()
        # Held while the store changes and the change is dispatched, and while
        # a late handler gets its synthetic adds: one total order of events.
        self._dispatch_lock = threading.RLock()
        self._state = threading.Condition()
        self._synced = False
        self._finished = False
        self._started = False
        self._thread: threading.Thread | None = None

    # -- cached reads ------------------------------------------------------------

    @property
    def store(self) -> Indexer:
        return self._store

    @property
    def indexer(self) -> Indexer:
        return self._store

    @property
    def reflector(self) -> Reflector:
        return self._reflector

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """The cached object ``namespace/name`` (``namespace=None`` when cluster-scoped)."""
        return self._store.get_by_key(make_key(namespace, name))

    def get_by_key(self, key: str) -> Obj | None:
        return self._store.get_by_key(key)

    def list(self) -> ObjList:
        return self._store.list()

    def by_index(self, index_name: str, value: str) -> ObjList:
        return self._store.by_index(index_name, value)

    @property
    def last_sync_resource_version(self) -> str:
        return self._reflector.last_sync_resource_version

    # -- handlers ----------------------------------------------------------------

    def add_event_handler(
        self,
        on_add: AddFunc | None = None,
        on_update: UpdateFunc | None = None,
        on_delete: DeleteFunc | None = None,
    ) -> EventHandlerRegistration:
        """Register callbacks; objects already cached are delivered as adds first."""
        registration = EventHandlerRegistration(on_add, on_update, on_delete)
        with self._dispatch_lock:
            for obj in self._store.list():
                self._call(registration, "add", obj)
            self._handlers = (*self._handlers, registration)
        return registration

    def remove_event_handler(self, registration: EventHandlerRegistration) -> None:
        with self._dispatch_lock:
            self._handlers = tuple(h for h in self._handlers if h is not registration)

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        """Run the reflector in a daemon thread (once)."""
        self._mark_started()
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)
        self._thread.start()

    def run(self) -> None:
        """Run the reflector in the calling thread until :meth:`stop` (instead of start)."""
        self._mark_started()
        self._run()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop the reflector and wait up to ``timeout`` seconds for the thread to end."""
        self._reflector.stop()
        with self._state:
            self._state.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        with self._state:
            return self._started and not self._finished

    def has_synced(self) -> bool:
        """True once the first full list is in the store and was dispatched."""
        with self._state:
            return self._synced

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until synced; False on timeout or if the informer stopped first."""
        with self._state:
            self._state.wait_for(
                lambda: self._synced or self._finished or self._reflector.stopped, timeout
            )
            return self._synced

    def _mark_started(self) -> None:
        with self._state:
            if self._started:
                raise RuntimeError(f"informer {self.name} was already started")
            self._started = True

    def _run(self) -> None:
        try:
            self._reflector.run()
        except BaseException:
            self._log.exception("informer thread crashed")
            raise
        finally:
            with self._state:
                self._finished = True
                self._state.notify_all()

    # -- ReflectorHandler --------------------------------------------------------

    def on_replace(self, items: ObjList, resource_version: str) -> None:
        with self._dispatch_lock:
            old = self._store.items()
            self._store.replace(items, resource_version)
            new = self._store.items()
            for key, last_known in old.items():
                if key not in new:
                    # Deleted while no watch was open: hand over the last state seen.
                    self._dispatch("delete", last_known)
            for key, obj in new.items():
                previous = old.get(key)
                if previous is None:
                    self._dispatch("add", obj)
                else:
                    self._dispatch("update", obj, previous)
        with self._state:
            if not self._synced:
                self._synced = True
                self._state.notify_all()

    def on_add(self, obj: Obj) -> None:
        self._upsert(obj)

    def on_update(self, obj: Obj) -> None:
        self._upsert(obj)

    def on_delete(self, obj: Obj) -> None:
        with self._dispatch_lock:
            self._store.delete_key(object_key(obj))
            self._dispatch("delete", obj)

    def _upsert(self, obj: Obj) -> None:
        with self._dispatch_lock:
            previous = self._store.get_by_key(object_key(obj))
            self._store.add(obj)
            if previous is None:
                self._dispatch("add", obj)
            else:
                self._dispatch("update", obj, previous)

    # -- dispatch ----------------------------------------------------------------

    def _dispatch(self, kind: str, obj: Obj, old: Obj | None = None) -> None:
        for registration in self._handlers:
            self._call(registration, kind, obj, old)

    def _call(
        self, registration: EventHandlerRegistration, kind: str, obj: Obj, old: Obj | None = None
    ) -> None:
        try:
            if kind == "add" and registration.on_add is not None:
                registration.on_add(obj)
            elif kind == "update" and registration.on_update is not None:
                registration.on_update(obj if old is None else old, obj)
            elif kind == "delete" and registration.on_delete is not None:
                registration.on_delete(obj)
        except Exception:
            meta = obj.get("metadata") or {}
            self._log.exception(
                "event handler failed",
                change=kind,
                namespace=meta.get("namespace"),
                name=meta.get("name"),
            )
