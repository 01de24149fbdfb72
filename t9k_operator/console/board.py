"""The Jobs page's state: every job watched, its pods, its row, and listeners.

Informer handlers (in their threads) put and drop jobs and pods; each change
that moves a job's row is handed to every listener as a :class:`Change`, in
the order the changes happened. :meth:`JobBoard.subscribe` returns the rows of
that moment together with the registration, under one lock, so a listener
misses no change and sees none twice. Listeners run under that lock and must
be quick (hand the change to an event loop, no I/O). A Job page
watches one job (:meth:`~JobBoard.watch`): it is told of every change to the
job or its pods, even one that leaves the row as it was.

Objects given to the board are the informers' cached ones: read, never changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from t9k_operator.builders.common import JOB_KIND, JOB_NAME
from t9k_operator.console.progress_history import ProgressHistory
from t9k_operator.console.rows import Row, job_key, key_of, row_of
from t9k_operator.sdk import views

Obj = Mapping[str, Any]
REUSE = timedelta(seconds=1)
"""Pages opened within this long of each other, with no change between, share
one computation of the rows (and their durations)."""


def remover(lock: threading.Lock, listeners: list[Any], listener: Any) -> Callable[[], None]:
    """A function that takes ``listener`` (added before) out of ``listeners``,
    under ``lock``; calling it again does nothing."""

    def remove() -> None:
        with lock:
            if listener in listeners:
                listeners.remove(listener)

    return remove


@dataclass(frozen=True)
class Change:
    """A row added or changed (``upsert``, with the row), or gone (``delete``);
    or the console closing (``close``: every stream ends)."""

    type: Literal["upsert", "delete", "close"]
    key: str
    row: Row | None = None

    def to_json(self) -> dict[str, Any]:
        if self.row is not None:
            return {"key": self.key, "row": self.row.to_json()}
        return {"key": self.key}


Listener = Callable[[Change], None]
Watcher = Callable[[bool], None]
"""Told each time one job or one of its pods is put or dropped (``False``), or
that the console closes (``True``); run under the board's lock, as listeners."""


def _pod_key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _job_of_pod(pod: Obj) -> str | None:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if not labels.get(JOB_NAME) or not labels.get(JOB_KIND):
        return None
    return job_key(str(meta.get("namespace") or ""), labels[JOB_KIND], labels[JOB_NAME])


class JobBoard:
    """The rows of the watched jobs, kept current; thread-safe."""

    def __init__(self, now: Callable[[], datetime] = views.now_utc) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._jobs: dict[str, Obj] = {}
        self._pods: dict[str, dict[str, Obj]] = {}  # job key -> pod key -> pod
        self._rows: dict[str, Row] = {}
        self._listeners: list[Listener] = []
        self._watchers: dict[str, list[Watcher]] = {}  # job key -> a Job page's watchers
        self._changes = 0  # rows moved so far
        self._fresh: tuple[int, datetime, list[Row]] | None = None
        self.progress = ProgressHistory()  # each job's steps, as the console saw them

    # -- what the page reads ---------------------------------------------------------

    def rows(self) -> list[Row]:
        """Every job's row as of now (durations and ages computed afresh)."""
        with self._lock:
            return self._fresh_rows()

    def subscribe(self, listener: Listener) -> tuple[list[Row], Callable[[], None]]:
        """The rows as of now, and from then on each change; call the returned
        function to stop listening."""
        with self._lock:
            self._listeners.append(listener)
            rows = self._fresh_rows()
        return rows, remover(self._lock, self._listeners, listener)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Each change from now on, without the rows (the GPUs page reads
        :meth:`objects`); call the returned function to stop listening."""
        with self._lock:
            self._listeners.append(listener)
        return remover(self._lock, self._listeners, listener)

    def objects(self) -> list[tuple[Obj, list[Obj]]]:
        """Every job and its pods, as the informers have them."""
        with self._lock:
            return [(job, list(self._pods.get(k, {}).values())) for k, job in self._jobs.items()]

    def job(self, key: str) -> tuple[Obj, list[Obj]] | None:
        """The job of that key and its pods, as the informers have them; ``None``
        for a job not watched (or gone)."""
        with self._lock:
            if key not in self._jobs:
                return None
            return self._jobs[key], list(self._pods.get(key, {}).values())

    def watch(self, key: str, watcher: Watcher) -> Callable[[], None]:
        """Tell ``watcher`` of every change to the job of that key or its pods
        (a Job page); call the returned function to stop."""
        with self._lock:
            self._watchers.setdefault(key, []).append(watcher)

        def unwatch() -> None:
            with self._lock:
                watchers = self._watchers.get(key, [])
                if watcher in watchers:
                    watchers.remove(watcher)
                if not watchers:
                    self._watchers.pop(key, None)

        return unwatch

    def close(self) -> None:
        """Tell every listener the console is closing (its streams end)."""
        with self._lock:
            self._emit(Change("close", ""))
            for watchers in self._watchers.values():
                for watcher in list(watchers):
                    watcher(True)

    # -- what the informers write -------------------------------------------------------

    def put_job(self, job: Obj) -> None:
        key = key_of(job)
        self.progress.record(key, job, self._now())
        with self._lock:
            self._jobs[key] = job
            self._refresh(key)
            self._touch(key)

    def drop_job(self, job: Obj) -> None:
        key = key_of(job)
        self.progress.forget(key)
        with self._lock:
            self._jobs.pop(key, None)
            if self._rows.pop(key, None) is not None:
                self._emit(Change("delete", key))
            self._touch(key)

    def put_pod(self, pod: Obj) -> None:
        job = _job_of_pod(pod)
        if job is None:
            return
        with self._lock:
            self._pods.setdefault(job, {})[_pod_key(pod)] = pod
            self._refresh(job)
            self._touch(job)

    def drop_pod(self, pod: Obj) -> None:
        job = _job_of_pod(pod)
        if job is None:
            return
        with self._lock:
            pods = self._pods.get(job, {})
            pods.pop(_pod_key(pod), None)
            if not pods:
                self._pods.pop(job, None)
            self._refresh(job)
            self._touch(job)

    # -- under the lock -----------------------------------------------------------------

    def _fresh_rows(self) -> list[Row]:
        """Every row, sorted; the same list (not to be changed) as the last
        call's when no row moved since and it is under :data:`REUSE` old. A row
        equal to the one kept is that one: the rows kept live on, the new
        ones made here go (thousands of them, at each page opened)."""
        now = self._now()
        if (fresh := self._fresh) and fresh[0] == self._changes and abs(now - fresh[1]) < REUSE:
            return fresh[2]
        rows = []
        for key in self._jobs:
            row = self._row(key, now)
            kept = self._rows.get(key)
            if kept == row:
                row = kept
            else:
                self._rows[key] = row
            rows.append(row)
        rows.sort(key=lambda r: r.key)
        self._fresh = (self._changes, now, rows)
        return rows

    def _row(self, key: str, now: datetime) -> Row:
        return row_of(self._jobs[key], list(self._pods.get(key, {}).values()), now)

    def _refresh(self, key: str) -> None:
        if key not in self._jobs:
            return
        row = self._row(key, self._now())
        if self._rows.get(key) != row:
            self._rows[key] = row
            self._emit(Change("upsert", key, row))

    def _emit(self, change: Change) -> None:
        self._changes += 1
        for listener in list(self._listeners):
            listener(change)

    def _touch(self, key: str) -> None:
        for watcher in list(self._watchers.get(key, ())):
            watcher(False)
