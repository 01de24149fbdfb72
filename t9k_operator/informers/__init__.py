"""Informers: client-go ``tools/cache`` style caches over raw JSON objects.
May import ``kube``, ``foundation``, ``resources`` and ``objects``; never the runtime or a job kind.

* :mod:`~t9k_operator.informers.store` - the thread-safe indexed cache.
* :mod:`~t9k_operator.informers.reflector` - the list/watch loop feeding it,
  through the seam in :mod:`~t9k_operator.informers.listwatch`, with the
  retry delays of :mod:`~t9k_operator.informers.backoff` and the object
  transforms of :mod:`~t9k_operator.informers.transform`.
* :mod:`~t9k_operator.informers.informer` - :class:`SharedInformer`, which
  ties the two together in a daemon thread and dispatches events to handlers.

Threads, not asyncio. Cached objects are read-only: copy before changing.
This package knows nothing about job kinds.
"""

from t9k_operator.informers.backoff import Backoff
from t9k_operator.informers.informer import EventHandlerRegistration, SharedInformer
from t9k_operator.informers.listwatch import ListerWatcher, ResourceListerWatcher, WatchEvents
from t9k_operator.informers.reflector import Reflector, ReflectorHandler
from t9k_operator.informers.store import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    Indexer,
    Indexers,
    IndexFunc,
    Store,
    by_controller_uid,
    by_namespace,
    default_indexers,
    split_key,
)
from t9k_operator.informers.transform import (
    Transform,
    compact_for_cache,
    compact_pod_for_cache,
    strip_managed_fields,
    transform_for,
)
from t9k_operator.objects import controller_ref, make_key, object_key

__all__ = [
    "CONTROLLER_UID_INDEX",
    "NAMESPACE_INDEX",
    "Backoff",
    "EventHandlerRegistration",
    "IndexFunc",
    "Indexer",
    "Indexers",
    "ListerWatcher",
    "Reflector",
    "ReflectorHandler",
    "ResourceListerWatcher",
    "SharedInformer",
    "Store",
    "Transform",
    "WatchEvents",
    "by_controller_uid",
    "by_namespace",
    "compact_for_cache",
    "compact_pod_for_cache",
    "controller_ref",
    "default_indexers",
    "make_key",
    "object_key",
    "split_key",
    "strip_managed_fields",
    "transform_for",
]
