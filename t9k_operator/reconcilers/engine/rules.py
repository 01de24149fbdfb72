"""The job engine: one pure state machine shared by every job kind.

``plan(kind, job, pods, now)`` looks at a job, the pods that exist and the
time, and returns a :class:`Plan`: pods to create, pods to delete, the status
to write, Events to record and when to look again. It never does I/O and
never reads a clock, so every rule is a table-driven unit test.

Rules, in order of precedence:

1. **Finished jobs** (phase Succeeded/Failed) stay finished; only the cleanup
   policy still acts (``None`` keeps all pods, ``All`` deletes every pod,
   ``Unfinished`` deletes pods that have not ended; a kind may narrow the
   scope, as ColossalAIJob keeps its launcher), and ``ttlSecondsAfterFinished``
   (MSJob) deletes the job that long after its completion (``Plan.delete_job``).
2. **Deadline**: ``activeDeadlineSeconds`` after ``status.startTime`` the job
   fails with reason ``DeadlineExceeded``, exactly on time: until then the
   plan asks to be requeued at that instant. Paused time counts.
3. **Pause**: every pod is deleted (none created); phase Paused. Unpausing
   shows phase Resuming until every replica runs again; pods created after a
   pause use the ``resumeSpecs`` of their type.
4. **Debug**: pods run the debug command (per-kind default), optionally
   without init containers; their exits neither restart them nor end the job.
5. **Restarts**: an ended replica is recreated per its type's restart policy
   (Never / OnFailure / Always / ExitCode on 130, 137, 138, 143). Every
   recreation counts once against the job's one ``backoffLimit``; the failed
   pod's uid goes into ``status.countedFailures`` in the same status write
   that raises ``restartCount``, so a crash between the write and the delete
   neither loses nor double-counts it. At the limit nothing is recreated.
   A replica whose pod was disrupted (its ``DisruptionTarget`` condition:
   evicted, preempted, its node lost) is no failure of the training: it is
   recreated whatever the policy, counted in ``disruptionCount`` instead
   (the same once-only bookkeeping), with an Event; so is a pod that the
   last status listed as live and that is gone without the operator having
   deleted it (force-deleted); past the job's
   ``disruption_limit`` the job fails, ``TooManyDisruptions``. Both kinds
   of recreation go into ``status.restarts`` (the last ten: when, which
   replica, why, on which node, counted or not), which outlives the job.
6. **Pods that cannot start**: a pod placed on a node whose container
   kubelet cannot start (its waiting reason: ImagePullBackOff, a missing
   Secret, ...) is named in the Running condition, with one Event. A cause no
   wait cures (an image reference that cannot be parsed, a key missing from
   an existing ConfigMap or Secret) fails the job at once, reason
   ``PodCannotStart``; any other fails it once the pod has not started within
   the start timeout of its placement (``job.start_timeout``; 0: never).
7. **Outcome**: the kind decides success and failure from the replicas'
   states (PyTorch: the master's exit; DeepSpeed: worker-0; ...). A replica
   failed for good fails the job at once, with the reason.
8. **Lost nodes**: while a wanted replica's pod is on a node that is not
   Ready or is gone (``ReplicaState.lost``, which the apply step reads from
   the Node), or its phase is Unknown, the job's phase is ``Unknown``, its
   ReplicaFailure condition names the nodes and pods, with one Event; the
   next pass after they are back (or replaced) decides the phase afresh.
   Kubernetes decides when such a pod is gone (taint eviction, PodGC); the
   engine never deletes it by force.

**Gates** (``job.gates``, from the integrations and the apply step) hold a
job back without the engine knowing who set them: a gate that holds
everything (a queue that has not admitted the job, or took the admission
back) leaves the job Pending with no pods and no start time (its deadline
counts from the admission, and an eviction counts no restart); a gate that
holds new pods (a refusal being retried) creates none; a gate that holds
nothing says why the job's pods wait to run (a gang scheduler placing the
group). The integrations render their own parts of the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Protocol

from t9k_operator.builders.common import PodMode
from t9k_operator.kinds.pods import ReplicaState, should_restart
from t9k_operator.kinds.view import Gate, Hold, JobView, Outcome, Role
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine.conditions import (
    TERMINAL,
    Reason,
    fmt_time,
    get_condition,
    parse_time,
    set_condition,
)
from t9k_operator.reconcilers.engine.replicas import render_replicas, role_restarts

DEFAULT_START_TIMEOUT = 600.0
"""Seconds a placed pod may take to start when neither the job nor the
operator says otherwise (``--pod-start-timeout``)."""

RESTARTS_KEPT = 10
"""How many recreated replicas ``status.restarts`` remembers (the newest)."""

DEFAULT_DISRUPTION_LIMIT = 10
"""Disruptions a job's replicas may suffer before it fails, unless the
operator says otherwise (``--disruption-limit``)."""

CREATE_BATCH = 256
"""At most this many pods are planned for creation in one pass (the next pass
comes a second later): the engine works in proportion to the pods that exist
plus this batch, never to a requested count it has not created."""


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


# -- the plan -----------------------------------------------------------------------


def plan(kind: Rules, job: JobView, pods: Pods, now: datetime) -> Plan:
    """The rules of the module docstring, in order; the first that ends the pass wins."""
    p = _Pass(kind, job, pods, now)
    if _finished(p) or _invalid(p) or _out_of_time(p) or _never_placed(p) or _paused(p) or _held(p):
        return p.done()
    _resume(p)
    _scale_down(p)
    _vanished(p)
    _create_missing(p)
    _restart_or_fail(p)
    _hung(p)
    _cannot_start(p)
    _outcome(p)
    if p.status["phase"] not in TERMINAL:
        _progress(p)
    return p.done()


class _Pass:
    """One planning pass: the job, its pods, the time, and the plan being made."""

    def __init__(self, kind: Rules, job: JobView, pods: Pods, now: datetime) -> None:
        self.kind, self.job, self.pods, self.now = kind, job, pods, now
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
        self.desired = _Desired({r.type: r.replicas for r in job.roles})
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

    def finish(self, outcome: Outcome, *, keep_planned: bool = False) -> None:
        """End the job with ``outcome``; the cleanup policy acts on its pods."""
        self.status["phase"] = outcome.phase
        self.status["completionTime"] = fmt_time(self.now)
        ok = outcome.phase == "Succeeded"
        msg = outcome.message
        self.condition("Completed", "True" if ok else "False", outcome.reason, msg)
        self.condition("Failed", "False" if ok else "True", outcome.reason, msg)
        self.condition("Running", "False", outcome.reason, msg)
        self.out.finished = outcome
        self.event("Normal" if ok else "Warning", outcome.reason, msg)
        _cleanup(self, keep_planned=keep_planned)
        _expire(self)
        if keep_planned:
            self.out.create.clear()

    def done(self) -> Plan:
        self.status["countedFailures"] = self.counted
        creating = {(t, i) for t, i, _ in self.out.create}
        deleting = {s.uid for s in self.out.delete}
        render_replicas(self.job, self.pods, self.status, self.role_restarts, creating, deleting)
        return self.out


# -- rules that end the pass --------------------------------------------------------------


def _finished(p: _Pass) -> bool:
    """1. A finished job stays finished; only its cleanup policy still acts."""
    if p.status["phase"] not in TERMINAL:
        return False
    _cleanup(p)
    _expire(p)
    return True


def _expire(p: _Pass) -> None:
    """A finished job with ``ttlSecondsAfterFinished`` is deleted that long
    after its completion time (Kubeflow's rule; its children go with it)."""
    ttl = p.job.ttl_seconds_after_finished
    if ttl is None:
        return
    done = parse_time(p.status.get("completionTime")) or p.now
    try:
        due = done + timedelta(seconds=ttl)
    except OverflowError:
        return
    if p.now >= due:
        p.out.delete_job = True
    else:
        p.out.wake_in((due - p.now).total_seconds())


def _invalid(p: _Pass) -> bool:
    """A spec no pod can be built from fails the job, naming the field."""
    if not p.job.spec_error:
        return False
    p.finish(Outcome("Failed", p.job.spec_error_reason, p.job.spec_error))
    return True


def _out_of_time(p: _Pass) -> bool:
    """2. activeDeadlineSeconds after the start the job fails, exactly on time."""
    start = parse_time(p.status["startTime"]) or p.now
    deadline = _deadline(start, p.job.active_deadline_seconds)
    if deadline is None:
        return False
    if p.now < deadline:
        p.out.wake_in((deadline - p.now).total_seconds())
        return False
    seconds = p.job.active_deadline_seconds
    message = f"The job ran past its activeDeadlineSeconds ({seconds}s)."
    p.finish(Outcome("Failed", Reason.DEADLINE_EXCEEDED, message))
    return True


def _never_placed(p: _Pass) -> bool:
    """A job whose pods were not all placed within its schedule timeout (MSJob's
    schedulingPolicy.scheduleTimeoutSeconds) after the start fails."""
    seconds = p.job.gang.timeout_seconds
    if not seconds or p.status["phase"] != "Pending" or p.job.paused:
        return False
    start = parse_time(p.status["startTime"]) or p.now
    deadline = start + timedelta(seconds=seconds)
    if p.now < deadline:
        p.out.wake_in((deadline - p.now).total_seconds())
        return False
    message = f"The job's pods were not all placed within its scheduleTimeoutSeconds ({seconds}s)."
    p.finish(Outcome("Failed", Reason.SCHEDULE_TIMEOUT, message))
    return True


def _paused(p: _Pass) -> bool:
    """3. A paused job has no pods."""
    if not p.job.paused:
        return False
    p.out.delete.extend(live for live in p.pods.values() if not live.terminating)
    if p.status["phase"] != "Paused":
        p.event("Normal", Reason.PAUSED, "The job is paused: its pods are deleted.")
    p.status["phase"] = "Paused"
    message = "The job is paused: all replicas are deleted or being deleted."
    p.condition("Paused", "True", Reason.PAUSED, message)
    p.condition("Running", "False", Reason.PAUSED, "The job is paused.")
    return True


def _held(p: _Pass) -> bool:
    """A gate that holds everything (a queue that has not admitted the job, or
    took the admission back) leaves the job no pods and no start time: it
    stops the way pause does (no restart counted) and waits."""
    gate = p.job.gate(Hold.ALL)
    if gate is None:
        return False
    p.out.delete.extend(live for live in p.pods.values() if not live.terminating)
    p.status.pop("startTime", None)
    p.status["phase"] = "Pending"
    _waiting_on(p, gate)
    # What it waits for first: a child that cannot be created yet, else the gate.
    first = p.job.gate(Hold.NEW) or gate
    p.condition("Initialized", "False", first.reason, first.message)
    _not_finished_yet(p)
    return True


# -- rules of a running job ---------------------------------------------------------------


def _resume(p: _Pass) -> None:
    """Unpausing: phase Resuming until every replica runs; new pods use resumeSpecs."""
    p.after_pause = get_condition(p.prev, "Paused") is not None
    p.resuming = p.status["phase"] in ("Paused", "Resuming")
    if p.status["phase"] == "Paused":
        p.event("Normal", Reason.RESUMED, "The job is resuming: its pods are recreated.")
        p.condition("Paused", "False", Reason.RESUMED, "The job has been resumed.")


def _vanished(p: _Pass) -> None:
    """A pod the last status listed as the job's (and not as being deleted by
    the operator) that is gone without the operator seeing it end or go: force
    deleted (PodGC on a lost node, ``kubectl delete --force``). A disruption:
    recorded, with an Event, and its replica recreated uncounted."""
    # Pods there now, and pods the operator counted (and so deleted) itself.
    accounted = {s.uid for s in p.pods.values()} | set(p.prev.get("countedFailures") or [])
    types = {role.type for role in p.job.roles}
    gone = [
        r
        for task in p.prev.get("tasks") or []
        if task.get("type") in types
        for r in task.get("replicas") or []
        if r.get("uid") and r["uid"] not in accounted and r.get("phase") != "Deleted"
    ]
    for replica in gone:
        state = ReplicaState(name=str(replica.get("name", "")), uid=str(replica["uid"]), phase="")
        what = (
            "is gone: it was deleted, not by the operator, before it ended (force-deleted, "
            "or by PodGC once its node was gone)"
        )
        _count_disruption(p, state, "Deleted", what)


def _scale_down(p: _Pass) -> None:
    """Pods of a replica the job no longer wants (scaled down, a type removed) go."""
    for key, existing in sorted(p.pods.items()):
        if key not in p.desired and not existing.terminating:
            p.out.delete.append(existing)


def _create_missing(p: _Pass) -> None:
    """Replicas without a pod, in index order, at most a batch of them; none while
    a gate holds new pods back (a refusal being retried, say)."""
    if p.job.gate(Hold.NEW, Hold.ALL) is not None:
        return
    for role in p.job.roles:
        for index in _missing(role, p.pods, CREATE_BATCH - len(p.out.create)):
            if p.kind.may_create(p.job, role.type, p.pods):
                mode = _pod_mode(p.kind, p.job, role.type, p.after_pause or p.resuming)
                p.out.create.append((role.type, index, mode))
    present = sum(1 for k in p.pods if k in p.desired)
    if p.desired.count - present > len(p.out.create):
        p.out.wake_in(1.0)  # more to create than one batch, or held back by the kind


def _restart_or_fail(p: _Pass) -> None:
    """4/5. An ended replica is recreated per its restart policy, each recreation
    counted against backoffLimit in the same status write; else it failed for good."""
    if p.job.debug:
        return  # debug pods' exits neither restart them nor end the job
    roles = {r.type: r for r in p.job.roles}
    counted = set(p.counted)
    whole = p.job.restart_scope == "Job"
    recreating = False  # a replica is recreated by this pass (whole: so is every other)
    attempt = False  # whole: this pass has counted the job's restart already
    for (type_, index), state in sorted(p.pods.items()):
        role = roles.get(type_)
        if role is None or index >= role.replicas:
            continue
        if state.disruption and (state.terminating or state.phase == "Failed"):
            recreating |= _disrupted(p, state, counted)
            continue
        if state.terminating or not state.ended:
            continue
        if not should_restart(role.restart_policy, state):
            if state.phase == "Failed":
                p.failures.append((state, Reason.REPLICA_FAILED, state.describe_failure()))
            continue
        if state.uid in counted or attempt:
            # Counted before a crash, or (whole) part of the attempt this pass
            # counted: finish the restart, counting nothing more.
            if state.uid not in counted:
                p.counted.append(state.uid)
                counted.add(state.uid)
            p.out.delete.append(state)
            recreating = True
            continue
        limit = p.job.backoff_limit
        if p.status["restartCount"] >= limit:
            if state.phase == "Failed":
                message = (
                    f"{state.describe_failure()}; backoffLimit {limit} reached, not restarting"
                )
                p.failures.append((state, Reason.BACKOFF_LIMIT_EXCEEDED, message))
            continue
        p.status["restartCount"] += 1
        p.role_restarts[role.type] = p.role_restarts.get(role.type, 0) + 1
        p.counted.append(state.uid)
        counted.add(state.uid)
        p.out.delete.append(state)
        p.out.restarts += 1
        p.record(state, state.reason, counted=True)
        recreating = True
        attempt = whole
        code = "" if state.exit_code is None else f" (exit code {state.exit_code})"
        also = " with every other replica of the job (restartScope Job)" if whole else ""
        p.event(
            "Warning" if state.phase == "Failed" else "Normal",
            Reason.RESTARTING,
            f"Restarting {state.name}{code}{also}: restart {p.status['restartCount']} of {limit}",
        )
    if whole and recreating:
        _restart_all(p, counted)


def _restart_all(p: _Pass, counted: set[str]) -> None:
    """restartScope Job: every other replica of the job is recreated with the one
    that restarts, in the same attempt. Their uids join the counted ones, so a
    replica that fails meanwhile (its peer gone) is part of this attempt too."""
    planned = {s.uid for s in p.out.delete}
    for key, state in sorted(p.pods.items()):
        if key not in p.desired or state.terminating or state.uid in planned:
            continue
        p.out.delete.append(state)
        if state.uid not in counted:
            p.counted.append(state.uid)
            counted.add(state.uid)


def _hung(p: _Pass) -> None:
    """9. A replica that has reported and then been silent past the job's
    hangTimeoutSeconds: the job is restarted as one attempt, or fails."""
    hang = p.job.hang
    if hang is None or p.job.debug:
        return
    live = {
        s.uid: (key, s)
        for key, s in p.pods.items()
        if key in p.desired and not (s.terminating or s.ended) and s.phase == "Running"
    }
    planned = {s.uid for s in p.out.delete}
    heard = sorted((h for h in p.job.heard if h.uid in live), key=lambda h: (h.at, h.uid))
    if not heard:
        return  # nothing reported in the current pods: never judged
    first = heard[0]
    due = first.at + timedelta(seconds=hang.timeout_seconds)
    if p.now < due:
        _reporting(p)
        p.out.wake_in((due - p.now).total_seconds())
        return
    (type_, _), state = live[first.uid]
    if state.uid in planned:
        return  # being recreated by this pass already
    silent = int((p.now - first.at).total_seconds())
    message = (
        f"Replica {state.name} has not reported its progress for {silent}s (since "
        f"{fmt_time(first.at)}), past the job's hangTimeoutSeconds ({hang.timeout_seconds}s)"
    )
    counted = set(p.counted)
    if state.uid in counted:
        _restart_all(p, counted)  # counted before a crash: finish the attempt
        return
    limit = p.job.backoff_limit
    if hang.on_hang != "Restart":
        p.condition("Hung", "True", Reason.HUNG, message)
        p.failures.append((state, Reason.HUNG, message))
        return
    if p.status["restartCount"] >= limit:
        message += f"; backoffLimit {limit} reached, not restarting"
        p.condition("Hung", "True", Reason.HUNG, message)
        p.failures.append((state, Reason.HUNG, message))
        return
    p.status["restartCount"] += 1
    p.role_restarts[type_] = p.role_restarts.get(type_, 0) + 1
    p.counted.append(state.uid)
    counted.add(state.uid)
    p.out.restarts += 1
    p.record(state, Reason.HUNG, counted=True)
    restart = f"restart {p.status['restartCount']} of {limit}"
    p.condition("Hung", "True", Reason.HUNG, f"{message}; every replica restarted ({restart})")
    p.event(
        "Warning",
        Reason.HUNG,
        f"{message}: restarting every replica of the job, {restart}",
    )
    _restart_all(p, counted)


def _reporting(p: _Pass) -> None:
    """A hung job's condition turns False once a pod of the job reports again."""
    before = get_condition(p.status, "Hung")
    if before is not None and before.get("status") == "True":
        message = "The job's replicas report their progress again."
        p.condition("Hung", "False", Reason.REPORTING, message)


# What the user changes when a pod cannot start for good, by kubelet's reason.
_FIX = {
    "InvalidImageName": "the image",
    "ErrImageNeverPull": "the image or imagePullPolicy",
    "CreateContainerConfigError": "the env or envFrom (or add the key)",
}


def _cannot_start(p: _Pass) -> None:
    """6. A placed pod that kubelet cannot start fails the job: at once when no
    wait cures the cause, else once the start timeout has run out."""
    timeout = DEFAULT_START_TIMEOUT if p.job.start_timeout is None else p.job.start_timeout
    for type_, state in p.not_started:
        waiting = state.waiting
        if waiting is not None and waiting.permanent:
            fix = _FIX.get(waiting.reason, "the pod template")
            message = (
                f"Pod {state.name} cannot start: {waiting.describe()}; "
                f"fix {fix} of container {waiting.container} in the {type_} replicas' template"
            )
            p.failures.append((state, Reason.POD_CANNOT_START, message))
            continue
        placed = parse_time(state.placed_at)
        if not timeout or placed is None:
            continue
        deadline = placed + timedelta(seconds=timeout)
        if p.now < deadline:
            p.out.wake_in((deadline - p.now).total_seconds())
            continue
        why = (
            waiting.describe()
            if waiting is not None
            else f"its containers are still being created (kubectl describe pod {state.name})"
        )
        message = (
            f"Pod {state.name} did not start within {timeout:g}s of its placement "
            f"on node {state.node}: {why}"
        )
        p.failures.append((state, Reason.POD_CANNOT_START, message))


def _disrupted(p: _Pass, state: ReplicaState, counted: set[str]) -> bool:
    """A replica whose pod was disrupted is recreated (once its pod is gone)
    without counting against backoffLimit; past the disruption limit the job
    fails. Whether it is recreated."""
    if state.uid in counted:
        if state.terminating:
            return False  # counted, and on its way: nothing more to do
        p.out.delete.append(state)  # counted before a crash; finish the recreation
        return True
    why = state.disruption + (f": {state.disruption_message}" if state.disruption_message else "")
    where = f" on node {state.node}" if state.node else ""
    if not _count_disruption(p, state, state.disruption, f"was disrupted{where} ({why})"):
        return False
    p.counted.append(state.uid)
    counted.add(state.uid)
    if not state.terminating:
        p.out.delete.append(state)
    return True


def _count_disruption(p: _Pass, state: ReplicaState, reason: str, what: str) -> bool:
    """Count one disruption of ``state`` in ``disruptionCount``, recorded in
    ``status.restarts`` (with ``reason``) and an Event, ``what`` saying what
    became of the pod; past the job's disruption limit the job fails instead.
    Whether it was counted."""
    done = int(p.status.get("disruptionCount") or 0)
    limit = p.job.disruption_limit
    if limit and done >= limit:
        message = (
            f"Pod {state.name} {what}; the job's replicas have been disrupted {done} times, "
            "its limit"
        )
        p.failures.append((state, Reason.TOO_MANY_DISRUPTIONS, message))
        return False
    p.status["disruptionCount"] = done + 1
    p.record(state, reason, counted=False)
    p.event(
        "Warning",
        Reason.DISRUPTED,
        f"Pod {state.name} {what}: it is recreated, not counted against backoffLimit "
        f"(disruption {done + 1}" + (f" of {limit})" if limit else ")"),
    )
    return True


def _outcome(p: _Pass) -> None:
    """7. A replica failed for good fails the job at once; else the kind decides."""
    if p.job.debug:
        return
    if p.failures:
        _, reason, message = p.failures[0]
        p.finish(Outcome("Failed", reason, message), keep_planned=True)
        return
    wanted = {k: v for k, v in p.pods.items() if k in p.desired}
    outcome = p.kind.outcome(p.job, wanted)
    # A success while a replica is being restarted waits for the restart.
    if outcome is not None and not (outcome.phase == "Succeeded" and p.out.restarts):
        p.finish(outcome, keep_planned=True)


class _Desired:
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


def _missing(role: Role, pods: Mapping[tuple[str, int], ReplicaState], limit: int) -> list[int]:
    """Indices of ``role`` without a pod, lowest first, at most ``limit``; the
    scan stops after the existing pods plus ``limit`` indices."""
    found: list[int] = []
    index = 0
    while len(found) < limit and index < role.replicas:
        if (role.type, index) not in pods:
            found.append(index)
        index += 1
    return found


def _deadline(start: datetime, seconds: int | None) -> datetime | None:
    """When the job's time runs out; None when unset or beyond what a datetime
    holds (admission bounds it, but an object stored before the bound may not be)."""
    if seconds is None:
        return None
    try:
        return start + timedelta(seconds=seconds)
    except OverflowError:
        return None


def _pod_mode(kind: Rules, job: JobView, type_: str, after_pause: bool) -> PodMode:
    if job.debug:
        o = next((o for o in job.debug_overrides if o.type == type_), None)
        return PodMode(
            command=(o.command if o and o.command else kind.debug_command),
            skip_init_containers=bool(o and o.skip_init_container),
            debug=True,
        )
    if after_pause:
        o = next((o for o in job.resume_overrides if o.type == type_), None)
        if o is not None:
            return PodMode(
                command=o.command, args=o.args, skip_init_containers=o.skip_init_container
            )
    return PodMode()


def _cleanup(p: _Pass, keep_planned: bool = False) -> None:
    """The cleanup policy on a finished job's pods (within the kind's scope);
    ``keep_planned`` keeps the deletes this pass already planned."""
    policy = p.job.cleanup_policy
    if policy == "None":
        return
    scope = p.kind.cleanup_types(p.job)
    planned = {s.uid for s in p.out.delete} if keep_planned else set()
    if not keep_planned:
        p.out.delete.clear()
    for (type_, _), state in sorted(p.pods.items()):
        if state.terminating or state.uid in planned:
            continue
        if scope is not None and type_ not in scope:
            continue
        if policy == "All" or (policy == "Unfinished" and not state.ended):
            p.out.delete.append(state)


def _progress(p: _Pass) -> None:
    """Phase and conditions of a job that has not finished."""
    status, job = p.status, p.job
    present = {k: s for k, s in p.pods.items() if k in p.desired and not s.terminating}
    all_created = len(present) == p.desired.count and not p.out.create
    if all_created:
        p.condition(
            "Initialized", "True", Reason.NONE, "The job has been initialized successfully."
        )
    elif (gate := job.gate(Hold.NEW)) is not None:
        p.condition("Initialized", "False", gate.reason, gate.message)
    failing = [s for s in present.values() if s.phase == "Failed"]
    if failing:
        message = "; ".join(s.describe_failure() for s in failing)
        p.condition("ReplicaFailure", "True", Reason.REPLICA_FAILED, message)
    else:
        p.condition("ReplicaFailure", "False", Reason.NONE, "All pods are running normally.")
    if _lost(p):
        _not_finished_yet(p)
        return
    if p.was_unknown:
        p.event("Normal", Reason.NODE_READY, "No pod of the job is on a lost node any more.")
    running = all_created and all(s.phase in ("Running", "Succeeded") for s in present.values())
    blocked = [s for _, s in p.not_started if s.waiting is not None]
    if running:
        status["phase"] = "Running"
        p.condition("Running", "True", Reason.NONE, "The job is running.")
    elif blocked:
        if p.resuming:
            status["phase"] = "Resuming"
        elif status["phase"] != "Running":
            status["phase"] = "Pending"
        _not_starting(p, blocked)
    elif p.resuming:
        status["phase"] = "Resuming"
    elif status["phase"] != "Running":
        status["phase"] = "Pending"
        stuck = [s for _, s in sorted(present.items()) if s.unschedulable]
        placing = job.gate(Hold.NONE)
        if placing is not None and all_created:
            why = placing.detail or (stuck[0].unschedulable if stuck else "")
            _waiting_on(p, placing, f"; {why}" if why else "")
        else:
            _unschedulable(p, stuck)
    _not_finished_yet(p)


def _lost(p: _Pass) -> bool:
    """8. While a replica's pod is on a node that is not Ready (or gone), or
    its phase is Unknown, nobody knows whether it runs: the job's phase is
    Unknown, its ReplicaFailure condition names the nodes and the pods (one
    Event when it begins), and its Running condition keeps what it last knew.
    Whether that is so."""
    lost: dict[str, list[str]] = {}
    for key, s in sorted(p.pods.items()):
        if key in p.desired and s.lost and not s.ended:
            lost.setdefault(s.lost, []).append(s.name)
    if not lost:
        return False
    message = "; ".join(
        f"{why[0].upper()}{why[1:]}: pod{'s' if len(names) > 1 else ''} {', '.join(names)}"
        for why, names in lost.items()
    )
    if not p.was_unknown:
        p.event("Warning", Reason.NODE_NOT_READY, message)
    p.status["phase"] = "Unknown"
    p.condition("ReplicaFailure", "True", Reason.NODE_NOT_READY, message)
    return True


def _not_finished_yet(p: _Pass) -> None:
    for type_ in ("Completed", "Failed"):
        if get_condition(p.status, type_) is None:
            p.condition(type_, "False", Reason.NONE, "The job has not finished.")


def _unschedulable(p: _Pass, stuck: list[ReplicaState]) -> None:
    """A pending job says which pod the scheduler cannot place, and why (one Event)."""
    if not stuck:
        p.condition("Running", "False", Reason.NONE, "Waiting for replicas to start.")
        return
    message = f"Pod {stuck[0].name} cannot be scheduled: {stuck[0].unschedulable}"
    if len(stuck) > 1:
        message += f" (and {len(stuck) - 1} more pods of the job)"
    before = get_condition(p.status, "Running") or {}
    if before.get("reason") != Reason.UNSCHEDULABLE:
        p.event("Warning", Reason.UNSCHEDULABLE, message)
    p.condition("Running", "False", Reason.UNSCHEDULABLE, message)


# Reasons kubelet alternates for one cause: one Event for the lot.
_SAME_CAUSE = {"ErrImagePull": "ImagePullBackOff"}


def _not_starting(p: _Pass, blocked: list[ReplicaState]) -> None:
    """A job with a placed pod that kubelet cannot start names the pod, the
    container and kubelet's reason and message (one Event when it begins)."""
    first = blocked[0]
    assert first.waiting is not None
    reason = first.waiting.reason
    message = f"Pod {first.name} cannot start: {first.waiting.describe()}"
    if len(blocked) > 1:
        message += f" (and {len(blocked) - 1} more pods of the job)"
    before = str((get_condition(p.status, "Running") or {}).get("reason") or "")
    if _SAME_CAUSE.get(before, before) != _SAME_CAUSE.get(reason, reason):
        p.event("Warning", reason, message)
    p.condition("Running", "False", reason, message)


def _waiting_on(p: _Pass, gate: Gate, more: str = "") -> None:
    """A job waiting on ``gate`` says so in its Running condition, with one Event
    when it starts to wait there."""
    before = get_condition(p.status, "Running") or {}
    if gate.event and before.get("reason") != gate.reason:
        p.event("Warning" if gate.warning else "Normal", gate.reason, gate.event)
    p.condition("Running", "False", gate.reason, gate.message + more)
