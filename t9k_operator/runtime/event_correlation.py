"""How recorded Events are correlated before they are written, like client-go's
``EventCorrelator`` (minus its per-object spam filter).

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
  long-forgotten repeat starts a new Event.

The caches are not locked: the recorder touches them from one thread at a time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from t9k_operator.objects import digest
from t9k_operator.runtime.event_sink import MAX_MESSAGE_LENGTH, PendingEvent

MAX_SIMILAR_EVENTS: Final = 10
SIMILAR_EVENTS_INTERVAL: Final = 600.0
COMBINED_PREFIX: Final = "(combined from similar events): "
CACHE_SIZE: Final = 4096

V = TypeVar("V")


@dataclass(slots=True)
class LoggedEvent:
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


class EventCorrelator:
    """Decides which Event a recorded event lands in, and remembers those written."""

    def __init__(self, component: str, host: str) -> None:
        self._source = (component, host)
        # Keyed by digests (``_digest``) of what client-go keys them by.
        self.logged: _Recent[LoggedEvent] = _Recent(CACHE_SIZE)
        self._similar: _Recent[_Similar] = _Recent(CACHE_SIZE)

    def correlate(self, p: PendingEvent) -> tuple[bytes, str]:
        """The key of the Event ``p`` folds into, and the message to write."""
        # The object's identity for correlation: everything but resourceVersion.
        ident = tuple(kv for kv in p.involved if kv[0] != "resourceVersion")
        group_key = _digest(ident, p.type_, p.reason, self._source)
        message = p.message
        if self._is_combined(group_key, message, p.mono):
            return _digest("combined", group_key), (COMBINED_PREFIX + message)[:MAX_MESSAGE_LENGTH]
        return _digest("exact", group_key, message), message

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
