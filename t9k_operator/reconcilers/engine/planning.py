"""What a planning pass works with: what the engine asks of a kind
(:class:`Rules`) and of a stop gate (:class:`StopGate`), the job's pods
(:data:`Pods`), the :class:`Plan` it makes, and the pass itself
(:class:`Pass`: the status being written, the bookkeeping every rule
shares)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Protocol

from t9k_operator.builders.common import PodMode
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.view import JobView, Outcome
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine.conditions import fmt_time, get_condition, set_condition
from t9k_operator.reconcilers.engine.replicas import render_nodes, render_replicas, role_restarts

RESTARTS_KEPT = 10
"""How many recreated replicas ``status.restarts`` remembers (the newest)."""


Pods = Mapping[tuple[str, int], ReplicaState]
"""The job's pods by (replica type, index)."""


class Rules(Protocol):
    """What the engine asks of a job's kind (a
    :class:`~t9k_operator.kinds.contract.JobKind` is one)."""

    @property
    def debug_command(self) -> tuple[str, ...]: ...

    def outcome(self, job: JobView, replicas: Pods) -> Outcome | None: ...

    def cleanup_types(self, job: JobView) -> frozenset[str] | None: ...

    def may_create(self, job: JobView, replica_type: str, replicas: Pods) -> bool: ...


class StopGate(Protocol):
    """What the engine asks, in each pass, of whoever may hold a stop that is
    not the job's own (an integration: checkpoint before a stop). The gate is
    made for one pass of one job; it may keep what it did in that pass, and
    it writes its own part of ``p.status``."""

    def begin(self, p: Pass) -> None:
        """First in every pass, before any rule."""
        ...

    def may_stop(self, p: Pass, reason: str) -> bool:
        """Whether the job's replicas may be deleted now for a stop of
        ``reason`` (a pause, a gate that holds everything, a restart of the
        whole job); when not, the pass deletes none of them and the gate asks
        to be woken (``p.out.wake_in``) when it wants to be asked again."""
        ...

    def drain_coming(self, p: Pass) -> None:
        """Last rule of a pass whose job is neither finished nor held: a
        running replica may be on a node being drained (``ReplicaState.draining``)."""
        ...

    def end(self, p: Pass) -> None:
        """Last in every pass: a stop the gate held or made in an earlier pass
        and neither held nor made in this one has been called off."""
        ...

    def resume_step(self, p: Pass) -> int | None:
        """The step new pods resume from (``T9K_RESUME_STEP``), or None."""
        ...


@dataclass
class Plan:
    create: list[tuple[str, int, PodMode]] = field(default_factory=list)
    delete: list[ReplicaState] = field(default_factory=list)
    status: Obj = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # type, reason, message
    requeue_after: float | None = None
    finished: Outcome | None = None  # set on the reconcile that ends the job
    delete_job: bool = False  # its ttlSecondsAfterFinished has run out: delete the job
    restarts: int = 0  # replicas recreated by this pass, each counted against backoffLimit

    def wake_in(self, seconds: float) -> None:
        seconds = max(seconds, 0.001)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds


class Pass:
    """One planning pass: the job, its pods, the time, and the plan being made."""

    def __init__(
        self,
        kind: Rules,
        job: JobView,
        pods: Pods,
        now: datetime,
        stops: Sequence[StopGate] = (),
    ) -> None:
        self.kind, self.job, self.pods, self.now = kind, job, pods, now
        self.stops = tuple(stops)
        self.prev = job.status
        self.out = Plan()
        # Unknown (a replica on a lost node) is decided afresh by every pass;
        # the rules start from what the job was before: Running if its Running
        # condition says so, else Pending.
        phase = self.prev.get("phase") or "Pending"
        self.was_unknown = phase == "Unknown"
        if self.was_unknown:
            running = (get_condition(self.prev, "Running") or {}).get("status") == "True"
            phase = "Running" if running else "Pending"
        self.status: Obj = {
            "observedGeneration": job.generation,
            "phase": phase,
            "conditions": [dict(c) for c in self.prev.get("conditions") or []],
            "restartCount": int(self.prev.get("restartCount") or 0),
            "countedFailures": [],
            "startTime": self.prev.get("startTime") or fmt_time(now),
        }
        if self.prev.get("completionTime"):
            self.status["completionTime"] = self.prev["completionTime"]
        if self.prev.get("disruptionCount"):
            self.status["disruptionCount"] = int(self.prev["disruptionCount"])
        if self.prev.get("restarts"):
            self.status["restarts"] = [dict(r) for r in self.prev["restarts"]]
        self.out.status = self.status
        self.conds: list[Obj] = self.status["conditions"]
        self.desired = Desired({r.type: r.replicas for r in job.roles})
        self.role_restarts = role_restarts(self.prev)
        # Counted failures whose pods are gone need no more remembering.
        live = {s.uid for s in pods.values()}
        self.counted = [u for u in self.prev.get("countedFailures") or [] if u in live]
        self.resuming = False
        self.after_pause = False
        self.failures: list[tuple[ReplicaState, str, str]] = []  # failed for good: reason, why

    @cached_property
    def not_started(self) -> list[tuple[str, ReplicaState]]:
        """The wanted replicas placed on a node whose training has not started,
        with their types (read by two rules: found once per pass)."""
        return [
            (type_, s)
            for (type_, index), s in sorted(self.pods.items())
            if (type_, index) in self.desired
            and s.node
            and not (s.terminating or s.ended or s.started)
        ]

    def condition(self, type_: str, status: str, reason: str, message: str) -> None:
        set_condition(self.conds, type_, status, reason, message, self.now)

    def record(self, state: ReplicaState, reason: str, counted: bool) -> None:
        """Keep the last :data:`RESTARTS_KEPT` recreations in ``status.restarts``."""
        entry: Obj = {"time": fmt_time(self.now), "replica": state.name}
        if state.exit_code is not None:
            entry["exitCode"] = state.exit_code
        entry |= {"reason": reason, "node": state.node, "counted": counted}
        self.status["restarts"] = [*self.status.get("restarts", []), entry][-RESTARTS_KEPT:]

    def event(self, type_: str, reason: str, message: str) -> None:
        self.out.events.append((type_, str(reason), message))

    def done(self) -> Plan:
        self.status["countedFailures"] = self.counted
        creating = {(t, i) for t, i, _ in self.out.create}
        deleting = {s.uid for s in self.out.delete}
        render_replicas(self.job, self.pods, self.status, self.role_restarts, creating, deleting)
        render_nodes(self.prev, self.pods, self.status)
        return self.out


class Desired:
    """The replicas a job wants, as a membership test and a count (not a set:
    a requested count is never materialised)."""

    def __init__(self, wanted: Mapping[str, int]) -> None:
        self.wanted = wanted
        self.count = sum(wanted.values())

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        type_, index = key
        return isinstance(index, int) and 0 <= index < self.wanted.get(type_, 0)
