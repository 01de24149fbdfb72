"""When will my job start: ``status.startEstimate`` of a job that waits.

With ``--start-estimate-period`` (seconds, 0: off), the operator estimates,
for each job that is ``Pending``, where it waits and when it may start:

* waiting for Kueue's admission: its positions in its LocalQueue and
  ClusterQueue (Kueue's visibility API), and when the ClusterQueue's quota
  frees enough for it and the workloads ahead of it, as the admitted jobs end
  at their progress ETAs (:func:`kueue_estimate`);
* its pods waiting for the default or a gang scheduler: which resource its
  pods lack on which nodes, and when enough frees as the running jobs' pods
  end (:func:`room_part`);
* either way, a job that never fits as it is (its pods on the empty nodes,
  its Workload in its ClusterQueue's whole quota) says so, and what it asks
  of how much there is (``integrations/start_estimate/never.py``).

The reads (the visibility API, the ClusterQueue, the nodes and every bound
pod) are the server's, ``integrations/start_estimate/``: every period, and at
once when a job starts to wait, it estimates each waiting job with the
functions here and queues the job when its estimate changed (the time
bucketed to the minute). This integration only
reads that estimate back (``Caches.source``) and writes it into the job's
status while the job is ``Pending``; a job that runs has none. Pure.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol, cast

from t9k_operator.api.parts import StatusPart
from t9k_operator.integrations.start_estimate.arithmetic import (
    Amounts,
    Estimate,
    Holder,
    add,
    bucket,
    lacking,
    minus,
    quota_estimate,
    room_estimate,
    show,
)
from t9k_operator.integrations.start_estimate.build import KUEUE, START_ESTIMATE_PART
from t9k_operator.integrations.start_estimate.inputs import (
    cluster_queue_quota,
    in_cohort,
    kueue_says,
    quota_holders,
    workload_needs,
)
from t9k_operator.integrations.start_estimate.never import quota_never_fits
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import fmt_time
from t9k_operator.reconcilers.pipeline.contract import Base, Caches, Event, JobInput, Rule
from t9k_operator.resources import NODES, PODS

VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
DEFAULT_PERIOD = 30.0
MIN_PERIOD = 5.0


class Estimates(Protocol):
    """What the server provides: the latest estimate of each waiting job."""

    def get(self, kind: str, namespace: str, name: str) -> Obj | None: ...


@dataclass(frozen=True)
class QueuePlace:
    """Where a Workload waits in Kueue's queues."""

    local_queue: str
    cluster_queue: str
    local_position: int | None  # 1: next
    cluster_position: int | None
    ahead: tuple[Obj, ...] = ()  # the Workloads ahead of it in the ClusterQueue
    note: str = ""  # why the positions are partial, if they are


def _holders(estimate: Estimate, holders: Sequence[Holder], now: datetime) -> list[Obj]:
    ends = {h.name: h.ends for h in holders}
    out: list[Obj] = []
    for name in estimate.waiting_for:
        end = bucket(ends.get(name), now)
        out.append({"name": name, "endTime": fmt_time(end)} if end else {"name": name})
    return out


def _rendered(estimate: Estimate, holders: Sequence[Holder], now: datetime) -> Obj:
    """The estimate's fields of the status (``estimatedStartTime`` absent: unknown)."""
    at = bucket(estimate.at, now)
    out: Obj = {"waitingFor": _holders(estimate, holders, now), "reason": estimate.reason}
    if at is not None:
        out["estimatedStartTime"] = fmt_time(at)
    return out


def kueue_estimate(
    workload: Obj,
    place: QueuePlace,
    cluster_queue: Obj | None,
    workloads: Sequence[Obj],
    jobs: Mapping[tuple[str, str, str], Obj],
    now: datetime,
) -> Obj:
    """``status.startEstimate`` of a job whose ``workload`` waits for Kueue; one
    that asks more than its ClusterQueue's whole nominal quota (the queue in
    no cohort it could borrow from) never fits, and says so. Kueue's own words
    on why it waits are its ``message``; when the quota is free and Kueue still
    does not admit it (its pods fit no topology domain, say), the start is
    unknown, not now."""
    out: Obj = {
        "where": KUEUE,
        "localQueue": place.local_queue,
        "localQueuePosition": place.local_position,
        "clusterQueue": place.cluster_queue or None,
        "clusterQueuePosition": place.cluster_position,
    }
    said = kueue_says(workload)
    if said:
        out["message"] = said
    if cluster_queue is None:
        reason = f"its ClusterQueue {place.cluster_queue or '(unknown)'} cannot be read"
        return {**out, "reason": reason + _note(place)}
    quota, used = cluster_queue_quota(cluster_queue)
    never = (
        None
        if in_cohort(cluster_queue)
        else quota_never_fits(workload_needs(workload), quota, place.cluster_queue)
    )
    if never is not None:
        return {**out, "waitingFor": [], "neverFits": True, "reason": never + _note(place)}
    needed = add(workload_needs(workload), *(workload_needs(w) for w in place.ahead))
    needed = {r: v for r, v in needed.items() if r in quota}  # Kueue charges only these
    holders = quota_holders(place.cluster_queue, used, workloads, jobs)
    estimate = quota_estimate(needed, minus(quota, used), holders, now)
    # Kueue's words on quota may lag the quota freed since its last pass; other
    # words (no topology domain holds its pods) say the quota is not what holds it.
    if said and "quota" not in said and estimate.at == now and not estimate.waiting_for:
        estimate = Estimate(None, "the quota it needs is free, yet Kueue does not admit it")
    if place.cluster_position and len(place.ahead) < place.cluster_position - 1:
        estimate = Estimate(
            None,
            f"of the {place.cluster_position - 1} workloads ahead of it, "
            f"{len(place.ahead)} could be read",
            estimate.waiting_for,
        )
    rendered = _rendered(estimate, holders, now)
    rendered["reason"] += _note(place)
    return {**out, **rendered}


def _note(place: QueuePlace) -> str:
    return f" ({place.note})" if place.note else ""


def room_part(
    where: str,
    pods: Sequence[Amounts],
    room: Mapping[str, Amounts],
    holders: Sequence[Holder],
    now: datetime,
    never: str | None = None,
) -> Obj:
    """``status.startEstimate`` of a job whose ``pods`` (their requests) wait to
    be placed by a scheduler on nodes with ``room``; ``never``: why the job
    never fits even on empty nodes (:func:`~.never.never_fits`), which is then
    its reason, with no time and no holder to wait for."""
    lacks = lacking(pods, room)
    rendered = [
        {
            "resource": lack.resource,
            "requested": show(lack.requested),
            "pods": lack.pods,
            "free": show(lack.most_free),
            "nodes": list(lack.nodes),
        }
        for lack in lacks
    ]
    if never is not None:
        return {
            "where": where,
            "lacking": rendered,
            "waitingFor": [],
            "neverFits": True,
            "reason": never,
        }
    short = {lack.resource for lack in lacks}
    relevant = [h for h in holders if not short or any(h.holds.get(r, 0) > 0 for r in short)]
    estimate = room_estimate(pods, room, relevant, now)
    return {"where": where, "lacking": rendered, **_rendered(estimate, holders, now)}


def unknown(where: str, reason: str, **fields: Any) -> Obj:
    """An estimate that could not be made, and why."""
    return {"where": where, **fields, "reason": reason}


@dataclass(frozen=True)
class Waiting:
    """A job's estimate as the server last made it (None: none yet)."""

    estimate: Obj | None


class StartEstimate(Base[Waiting]):
    """The start-estimate integration (on unless ``--start-estimate-period=0``)."""

    name = "start-estimate"
    parts: ClassVar[tuple[StatusPart, ...]] = (START_ESTIMATE_PART,)

    def __init__(self, period: float, kueue: bool) -> None:
        self.period, self.kueue = period, kueue

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--start-estimate-period",
            type=float,
            default=DEFAULT_PERIOD,
            metavar="SECONDS",
            help=(
                "estimate, at most this often, where each Pending job waits and when it may "
                f"start (status.startEstimate); 0 turns it off; at least {MIN_PERIOD:g} "
                f"(default {DEFAULT_PERIOD:g})"
            ),
        )

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        period = args.start_estimate_period
        if period != 0 and period < MIN_PERIOD:
            return f"--start-estimate-period must be 0 (off) or at least {MIN_PERIOD:g} seconds"
        return None

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> StartEstimate | None:
        """Off with ``--start-estimate-period 0``. The reads are the server
        hook's (``integrations/start_estimate/served.py``)."""
        if not args.start_estimate_period:
            return None
        return cls(float(args.start_estimate_period), bool(getattr(args, "kueue", False)))

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        return (
            Rule(
                ("",),
                (NODES.plural, PODS.plural),
                ("list",),
                why="The start estimate of a Pending job whose pods wait to be placed: every\n"
                "node's allocatable and the pods bound to it (listed at most once a period,\n"
                "and only while such a job waits); with --kueue, its queue positions (Kueue's\n"
                "visibility API) and its ClusterQueue's quota, read once a period per queue.",
            ),
            Rule(
                (VISIBILITY_GROUP,),
                ("clusterqueues/pendingworkloads", "localqueues/pendingworkloads"),
                ("get",),
            ),
            Rule(("kueue.x-k8s.io",), ("clusterqueues", "localqueues"), ("get",)),
        )

    def observe(self, job: JobInput, caches: Caches) -> tuple[Waiting, JobView] | None:
        source = caches.source(self.name)
        if source is None:
            return None
        view = job.view
        estimate = cast(Estimates, source).get(job.kind.resource.kind, view.namespace, view.name)
        return Waiting(estimate), view

    def status(self, state: Waiting, view: JobView, status: Obj) -> list[Event]:
        """``status.startEstimate`` while the job waits (Pending, not paused)."""
        if state.estimate is not None and status.get("phase") == "Pending" and not view.paused:
            status[START_ESTIMATE_PART.key] = dict(state.estimate)
        return []
