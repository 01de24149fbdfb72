"""What this process wrote, or could not write, that the informers' caches
do not show: what the next pass of a job must know beyond the caches.

Every reconcile plans from the caches; two of the operator's own writes must
be seen there before the next plan, or it would be made from the past:

* :class:`WrittenStatuses`: the job's last status write (it carries the
  restart count: a plan from the older status would count a restart twice);
* :class:`CreatedPods`: the pods a reconcile created (a plan before the cache
  shows them would list them again and write a status that forgets them).

That is client-go's "expectations" idea, narrowed to these two writes. And
one write that did not happen: :class:`Refusals`, what the API server refused
a pass (a child the job cannot have, an integration's soft action), which the
next pass plans from (the job held or failed, the integration told).

All are shared by a controller's workers, so every use holds a lock, and all
forget what they hold once it is used or seen, or after a TTL, so what is
kept stays as small as the writes in flight.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable

from cachetools import TTLCache

from t9k_operator.objects import Obj, digest
from t9k_operator.reconcilers.pipeline.plan import Recorded

REFUSED_TTL = 300.0
"""How long a refusal is kept, and the longest a held job waits before it
tries again: a record older than this is forgotten and the next pass tries."""
HOLD_BACKOFF = 1.0
"""The first wait of a job held by a refused child, before it tries again."""
CREATED_TTL = 10.0
"""How long a reconcile waits for the cache to show the pods it created before
it plans again; a pod deleted before the cache showed it ends the wait early."""


def _status_digest(obj: Obj) -> bytes:
    return digest(json.dumps(obj.get("status") or {}, sort_keys=True, separators=(",", ":")))


class Written:
    """Our own last status write of a job: its resourceVersion and a digest of
    the status (a few dozen bytes per job, not the status itself)."""

    __slots__ = ("resource_version", "status")

    def __init__(self, obj: Obj) -> None:
        self.resource_version = str(obj["metadata"]["resourceVersion"])
        self.status = _status_digest(obj)

    def seen_in(self, cached: Obj) -> bool:
        """Whether the cached job already shows this write. resourceVersions
        are opaque, so no order is read into them: the cache has caught up when
        it holds this very version, or a later one carrying the status we wrote
        (only the operator writes status)."""
        if str(cached["metadata"].get("resourceVersion")) == self.resource_version:
            return True
        return _status_digest(cached) == self.status


class WrittenStatuses:
    """The status writes of this process that the cache does not show yet, by
    job key. Shared by the controller's workers, so every use holds a lock (a
    cachetools cache is not safe for threads: a write racing another's expiry
    raised KeyError out of a reconcile under load). A write is forgotten as soon
    as the cache shows it, or after ``ttl`` seconds, so what is kept stays as
    small as the writes in flight rather than growing with the jobs."""

    def __init__(
        self, ttl: float = 30.0, maxsize: int = 65536, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self._lock = threading.Lock()
        self._written: TTLCache[str, Written] = TTLCache(maxsize=maxsize, ttl=ttl, timer=timer)

    def remember(self, key: str, obj: Obj) -> None:
        record = Written(obj)
        with self._lock:
            self._written[key] = record

    def forget(self, key: str) -> None:
        with self._lock:
            self._written.pop(key, None)

    def awaited(self, key: str, cached: Obj) -> bool:
        """Whether ``cached`` (the job as the cache has it) still lacks our last
        status write; once it shows it, the write is forgotten."""
        with self._lock:
            written = self._written.get(key)
            if written is None:
                return False
            if written.seen_in(cached):
                del self._written[key]
                return False
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._written)


class CreatedPods:
    """The pods created per job whose creation the cache has not shown yet."""

    def __init__(self, ttl: float = CREATED_TTL, maxsize: int = 65536) -> None:
        self._lock = threading.Lock()
        self._created: TTLCache[str, set[str]] = TTLCache(maxsize=maxsize, ttl=ttl)

    def remember(self, key: str, names: Iterable[str]) -> None:
        with self._lock:
            self._created[key] = set(names)

    def forget(self, key: str) -> None:
        with self._lock:
            self._created.pop(key, None)

    def gone(self, key: str, name: str) -> None:
        """A pod deleted before the cache showed its creation: stop waiting for it."""
        with self._lock:
            names = self._created.get(key)
            if names:
                names.discard(name)

    def awaited(self, key: str, cached: Callable[[str], bool]) -> bool:
        """Whether pods created for the job are still missing from the cache
        (``cached(name)``: whether the cache holds that pod)."""
        with self._lock:
            names = self._created.get(key)
            if not names:
                return False
            names.difference_update([n for n in names if cached(n)])
            if names:
                return True
            self._created.pop(key, None)
            return False


class Refusals:
    """What the API server refused each job's last pass, by job key, until the
    next pass takes it to plan from.

    A child refused for now (the job held: a quota, a namespace being deleted)
    holds the job until its backoff is due, whatever wakes the job meanwhile
    (the held status's own write among them): 1 s after the first refusal,
    doubling with each one after it to REFUSED_TTL, as a workqueue's per-item
    backoff grows. Until then :meth:`take` gives the same record, so every pass
    plans the same held status and writes nothing; once due, the next pass
    tries again. Soft refusals and failures are taken at once."""

    def __init__(
        self,
        ttl: float = REFUSED_TTL,
        maxsize: int = 65536,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._refused: TTLCache[str, tuple[Recorded, float, int]] = TTLCache(
            maxsize=maxsize, ttl=ttl, timer=clock
        )

    def record(self, key: str, refused: Recorded) -> None:
        """Keep ``refused`` for the job's next passes; a hold's backoff doubles
        with each refusal in a row (one since the last try)."""
        with self._lock:
            _, _, before = self._refused.get(key, (None, 0.0, 0))
            in_a_row = before + 1 if refused.problem and not refused.problem.fail else 0
            delay = min(HOLD_BACKOFF * 2 ** max(in_a_row - 1, 0), REFUSED_TTL)
            self._refused[key] = (refused, self._clock() + delay if in_a_row else 0.0, in_a_row)

    def take(self, key: str) -> Recorded:
        """What the job's last pass recorded (nothing: an empty record): a hold
        stays until its backoff is due, and is then given once more as nothing,
        so the pass tries again; anything else is forgotten."""
        with self._lock:
            found = self._refused.get(key)
            if found is None:
                return Recorded()
            refused, due, in_a_row = found
            if not in_a_row:
                del self._refused[key]
                return refused
            if self._clock() < due:
                return refused  # still held
            self._refused[key] = (Recorded(), 0.0, in_a_row)  # retried; the count stays
            return Recorded()

    def due_in(self, key: str) -> float | None:
        """Seconds until a held job's backoff is due (None: it is not held)."""
        with self._lock:
            found = self._refused.get(key)
            if found is None or not found[2] or not found[0].problem:
                return None
            return max(found[1] - self._clock(), 0.0)

    def forget(self, key: str) -> None:
        with self._lock:
            self._refused.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._refused)
