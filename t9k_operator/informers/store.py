"""The informer cache: a thread-safe, indexed map of object key -> object.

Owns the in-memory copy of one resource's objects as last seen by a
:class:`~t9k_operator.informers.reflector.Reflector`, plus secondary indexes
over them. Nothing here talks to the API server.

Design:

* Objects are raw JSON dicts. The key is ``"namespace/name"``, or ``"name"``
  for cluster-scoped objects (:func:`object_key`).
* An *index function* maps an object to zero or more string values
  (``(obj) -> list[str]``); each named index keeps ``value -> {keys}``. Every
  write recomputes the object's index values, drops the key from the values
  of the previous version and adds it to the new ones, so indexes stay right
  when an update changes the indexed value and when an object is deleted.
  The values an object was indexed under are remembered per key, so removal
  never re-runs the index functions. New values are computed before anything
  is changed, so an index function that raises leaves the store as it was.
  Index functions run under the store lock: keep them pure and cheap.
* :meth:`Indexer.replace` swaps the whole content atomically (one lock hold);
  it reports nothing back: the caller (the informer) diffs old and new itself.
* One lock guards everything; reads take it too and return the stored dicts
  without copying. **Stored objects are read-only by contract**: a caller
  that wants to change one must ``copy.deepcopy`` it first, or it would
  corrupt the cache (and the indexes) for every other reader.

Built-in index functions: :func:`by_namespace` (index :data:`NAMESPACE_INDEX`)
and :func:`by_controller_uid` (index :data:`CONTROLLER_UID_INDEX`: the uid of
the ``ownerReference`` with ``controller: true``, i.e. "objects owned by X").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping

from t9k_operator.objects import Obj, ObjList, controller_ref, object_key

IndexFunc = Callable[[Obj], list[str]]
Indexers = Mapping[str, IndexFunc]

# Aliases used inside Indexer, whose ``list`` method shadows the builtin there.
IndexValues = dict[str, list[str]]
KeyList = list[str]

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controller-uid"


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of :func:`make_key`: ``(namespace or None, name)``."""
    namespace, sep, name = key.partition("/")
    if not sep:
        return None, key
    return namespace, name


def by_namespace(obj: Obj) -> list[str]:
    """Index function: the object's namespace (nothing for cluster-scoped objects)."""
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [str(namespace)] if namespace else []


def by_controller_uid(obj: Obj) -> list[str]:
    """Index function: the uid of the object's controller owner reference."""
    ref = controller_ref(obj)
    if ref is None or not ref.get("uid"):
        return []
    return [str(ref["uid"])]


def default_indexers() -> dict[str, IndexFunc]:
    """The built-in indexes: by namespace and by controller uid."""
    return {NAMESPACE_INDEX: by_namespace, CONTROLLER_UID_INDEX: by_controller_uid}


class Indexer:
    """Thread-safe ``key -> object`` map with named secondary indexes.

    ``indexers=None`` installs :func:`default_indexers`; pass ``{}`` for none.
    Returned objects are the stored ones: treat them as read-only.
    """

    def __init__(self, indexers: Indexers | None = None) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = dict(
            default_indexers() if indexers is None else indexers
        )
        # index name -> index value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        # key -> index name -> the values the object had when it was written
        self._values: dict[str, IndexValues] = {}
        self._resource_version = ""

    # -- writes ------------------------------------------------------------------

    def add(self, obj: Obj) -> None:
        """Insert or replace ``obj`` under its key."""
        key = object_key(obj)
        with self._lock:
            # Computed before anything changes: a failing index function
            # leaves the store untouched.
            values = self._index_values(obj)
            self._put(key, obj, values)

    def update(self, obj: Obj) -> None:
        """Same as :meth:`add`: the store does not care whether the key existed."""
        self.add(obj)

    def delete(self, obj: Obj) -> None:
        """Remove the object with ``obj``'s key (no error if absent)."""
        self.delete_key(object_key(obj))

    def delete_key(self, key: str) -> None:
        """Remove the object stored under ``key`` (no error if absent)."""
        with self._lock:
            self._remove(key)

    def replace(self, objects: Iterable[Obj], resource_version: str) -> None:
        """Swap the whole content for ``objects`` in one atomic step.

        Returns nothing: callers that need to know what vanished diff
        :meth:`items` taken before the call against ``objects``.
        """
        items: dict[str, Obj] = {}
        for obj in objects:
            items[object_key(obj)] = obj
        with self._lock:
            indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
            all_values: dict[str, IndexValues] = {}
            for key, obj in items.items():
                values = all_values[key] = self._index_values(obj)
                for name, index_values in values.items():
                    index = indices[name]
                    for value in index_values:
                        index.setdefault(value, set()).add(key)
            self._items = items
            self._indices = indices
            self._values = all_values
            self._resource_version = resource_version

    def add_indexers(self, indexers: Indexers) -> None:
        """Register more index functions and build them over the current content."""
        with self._lock:
            for name in indexers:
                if name in self._indexers:
                    raise ValueError(f"indexer {name!r} already exists")
            built: dict[str, IndexValues] = {}
            for name, func in indexers.items():
                for key, obj in self._items.items():
                    built.setdefault(key, {})[name] = list(func(obj))
            for name, func in indexers.items():
                self._indexers[name] = func
                index = self._indices[name] = {}
                for key in self._items:
                    for value in built[key][name]:
                        index.setdefault(value, set()).add(key)
            for key, values in built.items():
                self._values[key].update(values)

    def set_resource_version(self, resource_version: str) -> None:
        with self._lock:
            self._resource_version = resource_version

    # -- reads -------------------------------------------------------------------

    def get(self, key_or_obj: str | Obj) -> Obj | None:
        """The stored object for a key (or for another version of ``obj``), else ``None``."""
        key = key_or_obj if isinstance(key_or_obj, str) else object_key(key_or_obj)
        with self._lock:
            return self._items.get(key)

    def get_by_key(self, key: str) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> ObjList:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> KeyList:
        with self._lock:
            return list(self._items)

    def items(self) -> dict[str, Obj]:
        """A snapshot ``key -> object`` (a new dict; the objects are shared)."""
        with self._lock:
            return dict(self._items)

    def by_index(self, index_name: str, value: str) -> ObjList:
        """Objects whose index function ``index_name`` yields ``value``."""
        with self._lock:
            keys = self._index(index_name).get(value, ())
            return [self._items[key] for key in sorted(keys)]

    def index_keys(self, index_name: str, value: str) -> KeyList:
        """Keys of the objects whose index function ``index_name`` yields ``value``."""
        with self._lock:
            return sorted(self._index(index_name).get(value, ()))

    def index_values(self, index_name: str) -> KeyList:
        """Every value currently present in index ``index_name``."""
        with self._lock:
            return sorted(self._index(index_name))

    @property
    def indexer_names(self) -> KeyList:
        with self._lock:
            return list(self._indexers)

    @property
    def resource_version(self) -> str:
        """The resourceVersion given to the last :meth:`replace` (or set explicitly)."""
        with self._lock:
            return self._resource_version

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    # -- internals (callers hold the lock) --------------------------------------

    def _index(self, index_name: str) -> dict[str, set[str]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"no index named {index_name!r}") from None

    def _index_values(self, obj: Obj) -> IndexValues:
        return {name: list(func(obj)) for name, func in self._indexers.items()}

    def _put(self, key: str, obj: Obj, values: IndexValues) -> None:
        self._remove(key)
        self._items[key] = obj
        self._values[key] = values
        for name, index_values in values.items():
            index = self._indices[name]
            for value in index_values:
                index.setdefault(value, set()).add(key)

    def _remove(self, key: str) -> None:
        if self._items.pop(key, None) is None:
            return
        # Use the values recorded at write time, not a fresh call of the index
        # functions, so removal is exact whatever the functions do.
        for name, index_values in self._values.pop(key, {}).items():
            index = self._indices[name]
            for value in index_values:
                keys = index.get(value)
                if keys is None:
                    continue
                keys.discard(key)
                if not keys:
                    del index[value]


Store = Indexer
"""Alias: every store is an indexer (possibly with no indexes)."""
