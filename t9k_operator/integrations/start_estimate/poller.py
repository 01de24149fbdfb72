"""The start estimates' reads: every period, each waiting job estimated; a
job that starts to wait, at once.

A thread of the leader (a standby reads nothing) wakes every
``--start-estimate-period`` seconds and, for each job of the operator's
caches that is ``Pending`` (not paused), makes its estimate with the pure
functions of ``integrations/start_estimate/integration.py``:

* a job whose Kueue Workload is not admitted: one GET of its LocalQueue's
  pending workloads (Kueue's visibility API: both positions), one of the
  LocalQueue (its ClusterQueue's name), one of the ClusterQueue (quota and
  reservation) and of its pending workloads ahead of the job, each at most
  once a period whatever the number of jobs waiting in them; Workloads of
  this operator's jobs come from the cache, others' ahead of it by one GET
  each (at most :data:`MAX_AHEAD`). Where the visibility API cannot be read
  the positions count this operator's Workloads only, and the estimate says so;
* a job with pods no scheduler has placed: one LIST of the nodes and one of
  every bound pod, once a period (or a round of jobs woken by their events)
  and only while such a job waits; a job that could not be placed even on
  the empty nodes never fits, and its estimate says so.

Between the periods, the informers' events wake it for the jobs that start
to wait, or wait in a new way (``integrations/start_estimate/wake.py``): a
moment later it estimates those, with the same reads, once for the whole
burst.

The estimate is kept in :class:`EstimateStore` (what the integration reads)
and the job is queued only when it changed (its time bucketed to the
minute), so a waiting job costs one status write per change, not per period.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import structlog

from t9k_operator.builders import scheduling
from t9k_operator.informers import CONTROLLER_UID_INDEX
from t9k_operator.integrations.start_estimate.build import GANG, SCHEDULER
from t9k_operator.integrations.start_estimate.inputs import (
    job_key,
    node_room,
    pod_holders,
    pod_requests,
)
from t9k_operator.integrations.start_estimate.integration import (
    kueue_estimate,
    room_part,
    unknown,
)
from t9k_operator.integrations.start_estimate.never import never_fits
from t9k_operator.integrations.start_estimate.queues import KueueReads
from t9k_operator.integrations.start_estimate.wake import (
    DEBOUNCE,
    NOT_WAITING,
    JobKey,
    Seen,
    Wakes,
    waiting_state,
    watch,
)
from t9k_operator.kube import ApiError, KubeClient
from t9k_operator.objects import Obj, make_key
from t9k_operator.reconcilers.serving import Route
from t9k_operator.resources import NODES, PODS

log = structlog.get_logger(__name__)

MAX_AHEAD = 50
"""Workloads ahead of a job read at most (beyond, the estimate is unknown)."""


class EstimateStore:
    """The latest estimate of each waiting job, by (kind, namespace, name)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_job: dict[tuple[str, str, str], Obj] = {}

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._by_job.get((kind, namespace, name))

    def replace(self, estimates: Mapping[tuple[str, str, str], Obj]) -> set[tuple[str, str, str]]:
        """Keep ``estimates`` (those of jobs no longer waiting go); the jobs
        whose estimate changed."""
        with self._lock:
            changed = {k for k, v in estimates.items() if self._by_job.get(k) != v}
            changed |= self._by_job.keys() - estimates.keys()  # its status drops it
            self._by_job = dict(estimates)
        return changed

    def update(self, estimates: Mapping[JobKey, Obj], keys: set[JobKey]) -> set[JobKey]:
        """Keep ``estimates`` of the jobs ``keys`` (those of them without one go;
        the other jobs' stay); the jobs whose estimate changed."""
        with self._lock:
            changed = {k for k in keys if self._by_job.get(k) != estimates.get(k)}
            for key in changed:
                if key in estimates:
                    self._by_job[key] = estimates[key]
                else:
                    self._by_job.pop(key, None)
        return changed


def _waiting(job: Obj) -> bool:
    """Whether a job waits to start (a paused one's phase is Paused)."""
    return (job.get("status") or {}).get("phase") == "Pending"


class Poller:
    """The thread (a runtime Server: the manager starts and stops it)."""

    def __init__(
        self,
        client: KubeClient,
        routes: Mapping[str, Route],
        pods: Any,  # the SharedInformer of the jobs' pods
        workloads: Any | None,  # the SharedInformer of the jobs' Workloads (with --kueue)
        store: EstimateStore,
        period: float,
        is_leader: Callable[[], bool],
        now: Callable[[], datetime],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client, self.routes, self.pods, self.workloads = client, routes, pods, workloads
        self.store, self.period, self.is_leader, self.now = store, period, is_leader, now
        self.kinds = {route.resource.kind: route for route in routes.values()}
        self.wakes, self.seen = Wakes(), Seen(period, monotonic)
        self.monotonic = monotonic
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        log.info("start estimates", period=self.period)
        watch(self.routes.values(), self.pods, self.workloads, self.wakes)
        self._thread = threading.Thread(target=self._run, name="start-estimates", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.wakes.ready.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        """Every period, a refresh of every waiting job; between them, once woken
        and the burst gathered, an estimate of the jobs that are due."""
        next_pass = self.monotonic() + self.period
        while not self._stop.is_set():
            left = next_pass - self.monotonic()
            if left > 0 and self.wakes.ready.wait(left):
                if self._stop.wait(DEBOUNCE):
                    return
                self._round(functools.partial(self.estimate_now, self.wakes.take()))
                continue
            next_pass = self.monotonic() + self.period
            self.seen.prune()
            self._round(self.refresh)

    def _round(self, estimate: Callable[[], int]) -> None:
        if not self.is_leader():
            return
        try:
            estimate()
        except Exception as exc:  # never ends the thread: the next period tries again
            log.warning("start estimates not refreshed", error=str(exc))

    def estimate_now(self, keys: set[JobKey]) -> int:
        """Estimate those of the jobs ``keys`` that wait in a state they were not
        estimated in for a period (:class:`~.wake.Seen`), or that have an
        estimate and no longer wait as it says (it is made again, or dropped);
        the others are left to the periodic pass. Returns how many estimates
        changed."""
        due: set[JobKey] = set()
        for key in keys:
            route = self.kinds.get(key[0])
            job = route.jobs.get(key[1], key[2]) if route is not None else None
            state = None
            if job is not None:
                mine = self.pods.by_index(CONTROLLER_UID_INDEX, _uid(job))
                state = waiting_state(job, mine, self._workload(job))
            if state is None and self.store.get(*key) is None:
                continue  # nothing to estimate, nothing to drop
            if self.seen.due(key, state or NOT_WAITING):
                due.add(key)
        return self.refresh(due) if due else 0

    def refresh(self, only: set[JobKey] | None = None) -> int:
        """Estimate every waiting job (``only``: of these jobs); queue those whose
        estimate changed. Returns how many changed."""
        now = self.now()
        jobs: dict[JobKey, Obj] = {}
        for route in self.routes.values():
            for job in route.jobs.list():
                jobs[job_key(job)] = job
        waiting = [k for k, job in jobs.items() if _waiting(job) and (only is None or k in only)]
        estimates: dict[JobKey, Obj] = {}
        kueue = KueueReads(self.client, MAX_AHEAD)
        cluster: tuple[list[Obj], list[Obj]] | None = None
        for key in waiting:
            job = jobs[key]
            try:
                found = self._kueue(job, jobs, kueue, now)
                if found is None:
                    mine = self.pods.by_index(CONTROLLER_UID_INDEX, _uid(job))
                    unplaced = [p for p in mine if not (p.get("spec") or {}).get("nodeName")]
                    if not unplaced:
                        continue  # placed, starting (or no pods yet): nothing to estimate
                    if cluster is None:
                        cluster = self._cluster()
                    found = self._room(job, mine, unplaced, cluster, jobs, now)
            except ApiError as exc:
                found = unknown(SCHEDULER, f"the operator could not read what it needs: {exc}")
            # Unknowns are left out (the API server would drop a null).
            estimates[key] = {k: v for k, v in found.items() if v is not None}
        if only is None:
            changed = self.store.replace(estimates)
        else:
            changed = self.store.update(estimates, only)
        log.debug(
            "start estimates made",
            on="period" if only is None else "events",
            waiting=len(waiting),
            changed=len(changed),
        )
        for kind, namespace, name in changed:
            queue = self.kinds.get(kind)
            if queue is not None:
                queue.enqueue_after(make_key(namespace, name), 0.0)
        return len(changed)

    def _workload(self, job: Obj) -> Obj | None:
        """The job's Workload, from the cache (None without --kueue)."""
        if self.workloads is None:
            return None
        meta = job["metadata"]
        found: Obj | None = self.workloads.get(
            meta["namespace"], scheduling.group_name(meta["name"], meta["uid"])
        )
        return found

    def _kueue(
        self,
        job: Obj,
        jobs: Mapping[tuple[str, str, str], Obj],
        kueue: KueueReads,
        now: datetime,
    ) -> Obj | None:
        """The estimate of a job whose Workload waits for admission; None when it
        has none or is admitted."""
        workload = self._workload(job)
        status = (workload or {}).get("status") or {}
        if workload is None or self.workloads is None or status.get("admission"):
            return None
        own = list(self.workloads.list())
        place = kueue.place(workload, own)
        cq = kueue.cluster_queue(place.cluster_queue) if place.cluster_queue else None
        return kueue_estimate(workload, place, cq, own, jobs, now)

    def _cluster(self) -> tuple[list[Obj], list[Obj]]:
        """The nodes, and every pod bound to one that has not ended."""
        nodes, _ = self.client.list_all(NODES)
        pods = (
            self.client.list(
                PODS, field_selector="spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
            ).get("items")
            or []
        )
        return nodes, list(pods)

    def _room(
        self,
        job: Obj,
        mine: list[Obj],
        unplaced: list[Obj],
        cluster: tuple[list[Obj], list[Obj]],
        jobs: Mapping[JobKey, Obj],
        now: datetime,
    ) -> Obj:
        """The estimate of a job whose ``unplaced`` pods (of its pods ``mine``)
        wait; it never fits when all its pods that have not ended could not be
        placed at once on the empty nodes."""
        group = (job.get("status") or {}).get("podGroup")
        nodes, bound = cluster
        room = node_room(nodes, bound)
        requests = [pod_requests(p) for p in unplaced]
        live = [pod_requests(p) for p in mine if not _ended(p)]
        never = never_fits(live, node_room(nodes, ()))
        found = room_part(
            GANG if group else SCHEDULER, requests, room, pod_holders(bound, jobs), now, never
        )
        found["message"] = (group or {}).get("message") or unschedulable(unplaced)
        return found


def unschedulable(pods: list[Obj]) -> str | None:
    """The scheduler's words on the first of ``pods`` it found no node for
    (its PodScheduled condition False, reason Unschedulable)."""
    for pod in pods:
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable":
                return str(c.get("message") or "") or None
    return None


def _ended(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _uid(job: Obj) -> str:
    return str(job["metadata"]["uid"])
