"""Which waiting jobs to estimate at once, between the periodic passes.

The poller estimates every waiting job once a period. So that a job that
starts to wait has its estimate within a second or two, not a period later,
the informers' events (of a job, its pods, its Workload) mark the job
(:class:`Wakes`: its key, cheaply, on the informer's thread); the poller's
thread wakes, lets a burst gather for :data:`DEBOUNCE` seconds, and
estimates at once those of the marked jobs that wait in a state they were
not estimated in lately (:class:`Seen`): one round of reads for them all.

What a job waits in (:func:`waiting_state`) decides: its Workload not
admitted (and what Kueue last said of it), or its pods turned down by their
scheduler. Its own status writes, its pods' updates, any event that leaves
it waiting as it was: nothing to estimate. A job is estimated on its events
at most once per state and period, whatever its estimate (one that could
not be made too); the periodic pass refreshes the rest.

Pure but for the two classes' state and :func:`watch`'s handlers; the clock
is given.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from t9k_operator.builders.common import JOB_KIND, JOB_NAME
from t9k_operator.integrations.start_estimate.build import KUEUE, SCHEDULER
from t9k_operator.integrations.start_estimate.inputs import job_key
from t9k_operator.objects import Obj, controller_ref

JobKey = tuple[str, str, str]
"""(kind, namespace, name) of a job."""
State = tuple[str, str]
"""What a job waits in: where (``Kueue``, ``scheduler``) and what was last said."""

NOT_WAITING: State = ("", "")
"""The state of a job that waits in none of these (gone, placed, running)."""

DEBOUNCE = 0.5
"""Seconds the thread waits, once woken, for the rest of a burst of events."""


def _condition(obj: Obj, kind: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def turned_down(pod: Obj) -> bool:
    """A pod its scheduler found no node for (its PodScheduled condition False)."""
    return (_condition(pod, "PodScheduled") or {}).get("status") == "False"


def _unplaced(pod: Obj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return not (pod.get("spec") or {}).get("nodeName") and phase not in ("Succeeded", "Failed")


def waiting_state(job: Obj, pods: Sequence[Obj], workload: Obj | None) -> State | None:
    """What the ``Pending`` ``job`` waits in: its ``workload`` that Kueue has not
    admitted (with its QuotaReserved condition's status and reason, empty before
    Kueue has looked at it), or its ``pods`` that their scheduler turned down
    (a pod's PodScheduled condition False, or a message on its PodGroup; with
    the PodGroup's phase). None when it does not wait, or its pods are placed or
    not yet looked at (their scheduler places them in a moment, or the periodic
    pass estimates them)."""
    status = job.get("status") or {}
    if status.get("phase") != "Pending":
        return None
    if workload is not None and not (workload.get("status") or {}).get("admission"):
        reserved = _condition(workload, "QuotaReserved") or {}
        return KUEUE, f"{reserved.get('status') or ''} {reserved.get('reason') or ''}".strip()
    unplaced = [p for p in pods if _unplaced(p)]
    group = status.get("podGroup") or {}
    if unplaced and (group.get("message") or any(turned_down(p) for p in unplaced)):
        return SCHEDULER, str(group.get("phase") or "")
    return None


class Wakes:
    """The jobs an informer event touched since the thread last took them, and
    the event that wakes the thread (set while there are some). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[JobKey] = set()
        self.ready = threading.Event()

    def mark(self, key: JobKey) -> None:
        with self._lock:
            self._keys.add(key)
            self.ready.set()

    def take(self) -> set[JobKey]:
        """The jobs marked since the last take (none are lost: a mark after this
        sets ``ready`` again)."""
        with self._lock:
            keys, self._keys = self._keys, set()
            self.ready.clear()
        return keys


class Seen:
    """When each job was last estimated in each state it waited in, to estimate
    it on an event only in a state not seen for a period (the thread's own:
    not thread-safe)."""

    def __init__(self, period: float, monotonic: Callable[[], float]) -> None:
        self.period, self.monotonic = period, monotonic
        self._by_job: dict[JobKey, dict[State, float]] = {}

    def due(self, key: JobKey, state: State) -> bool:
        """Whether ``key`` waiting in ``state`` is to be estimated now (if so, it
        is noted as estimated now)."""
        now = self.monotonic()
        states = {s: t for s, t in self._by_job.get(key, {}).items() if now - t < self.period}
        due = state not in states
        if due:
            states[state] = now
        self._by_job[key] = states
        return due

    def prune(self) -> None:
        """Forget what is older than a period (jobs gone, or no longer waiting)."""
        now = self.monotonic()
        self._by_job = {
            key: kept
            for key, states in self._by_job.items()
            if (kept := {s: t for s, t in states.items() if now - t < self.period})
        }


def watch(routes: Iterable[Any], pods: Any, workloads: Any | None, wakes: Wakes) -> None:
    """Mark the jobs the informers' events touch: a ``Pending`` job (of the
    ``routes``' caches), a job's pod that waits to be placed or did until now,
    a job's Workload that is not admitted or was not until now. Cheap, on the
    informer's thread: the key alone (the poller's thread decides)."""

    def job_event(job: Obj) -> None:
        if (job.get("status") or {}).get("phase") == "Pending":
            wakes.mark(job_key(job))

    def pod_event(pod: Obj, old: Obj | None = None) -> None:
        if all((p.get("spec") or {}).get("nodeName") for p in (pod, old) if p is not None):
            return
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        kind, name = labels.get(JOB_KIND), labels.get(JOB_NAME)
        if kind and name:
            wakes.mark((str(kind), str(meta.get("namespace") or ""), str(name)))

    def workload_event(workload: Obj, old: Obj | None = None) -> None:
        if all((w.get("status") or {}).get("admission") for w in (workload, old) if w is not None):
            return
        ref = controller_ref(workload) or {}
        if ref.get("kind") and ref.get("name"):
            namespace = str((workload.get("metadata") or {}).get("namespace") or "")
            wakes.mark((str(ref["kind"]), namespace, str(ref["name"])))

    for route in routes:
        route.jobs.add_event_handler(on_add=job_event, on_update=lambda _, new: job_event(new))
    pods.add_event_handler(
        on_add=pod_event, on_update=lambda old, new: pod_event(new, old), on_delete=pod_event
    )
    if workloads is not None:
        workloads.add_event_handler(
            on_add=workload_event, on_update=lambda old, new: workload_event(new, old)
        )
