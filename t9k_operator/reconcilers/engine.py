"""The job engine: one pure state machine shared by every job kind.

``plan(kind, job, pods, now)`` looks at a job, the pods that exist and the
time, and returns a :class:`Plan`: pods to create, pods to delete, the status
to write, Events to record and when to look again. It never does I/O and
never reads a clock, so every rule is a table-driven unit test.

Rules, in order of precedence:

1. **Finished jobs** (phase Succeeded/Failed) stay finished; only the cleanup
   policy still acts (``None`` keeps all pods, ``All`` deletes every pod,
   ``Unfinished`` deletes pods that have not ended; a kind may narrow the
   scope, as ColossalAIJob keeps its launcher).
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
6. **Outcome**: the kind decides success and failure from the replicas'
   states (PyTorch: the master's exit; DeepSpeed: worker-0; ...). A replica
   failed for good fails the job at once, with the reason.

A job queued by Kueue (``job.admission``) has no pods until its Workload is
admitted: it is Pending, says what Kueue says, and has no start time (its
deadline counts from the admission, as for a Kubernetes Job Kueue
suspends). A Workload Kueue evicts (preempted by a higher priority, say)
stops the job the way pause does, without counting a restart, and it waits
for readmission.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from t9k_operator.api.tensorboard import API_VERSION as TB_API_VERSION
from t9k_operator.api.tensorboard import KIND as TB_KIND
from t9k_operator.api.tensorboard import PROGRESS_REASONS as TB_PROGRESS
from t9k_operator.builders.common import job_selector
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.kind import JobKind, JobView, Outcome, PodMode, Role
from t9k_operator.reconcilers.pods import ReplicaState, should_restart

TERMINAL = ("Succeeded", "Failed")
CREATE_BATCH = 256
"""At most this many pods are planned for creation in one pass (the next pass
comes a second later): the engine works in proportion to the pods that exist
plus this batch, never to a requested count it has not created."""
CONDITION_TYPES = ("Initialized", "Running", "ReplicaFailure", "Completed", "Failed", "Paused")


Pods = Mapping[tuple[str, int], ReplicaState]
"""The job's pods by (replica type, index)."""


class Reason(StrEnum):
    """The engine's reasons, for conditions and Events. Control flow never reads
    them back: what a pass decided is in the :class:`Plan`'s fields."""

    NONE = "-"
    PAUSED = "Paused"
    RESUMED = "Resumed"
    RESTARTING = "Restarting"
    REPLICA_FAILED = "ReplicaFailed"
    BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    UNSCHEDULABLE = "Unschedulable"
    FAILED_CREATE = "FailedCreate"
    WAITING_FOR_GANG = "WaitingForGangScheduler"
    SCHEDULE_TIMEOUT = "ScheduleTimeout"
    SUCCEEDED = "Succeeded"
    INVALID_SPEC = "InvalidSpec"
    WAITING_FOR_ADMISSION = "WaitingForAdmission"
    EVICTED = "EvictedByKueue"
    # status.tensorboard's reasons (the T9k product's), and the Events about it
    DEPENDENT_READY = "DependentReady"
    DEPENDENT_CREATING = "DependentCreating"
    DEPENDENT_NOT_READY = "DependentNotReady"
    DEPENDENT_FAILED = "DependentFailed"
    TENSORBOARD_READY = "TensorBoardReady"
    TENSORBOARD_NOT_READY = "TensorBoardNotReady"


@dataclass
class Plan:
    create: list[tuple[str, int, PodMode]] = field(default_factory=list)
    delete: list[ReplicaState] = field(default_factory=list)
    status: Obj = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # type, reason, message
    requeue_after: float | None = None
    finished: Outcome | None = None  # set on the reconcile that ends the job
    restarts: int = 0  # replicas recreated by this pass, each counted against backoffLimit

    def wake_in(self, seconds: float) -> None:
        seconds = max(seconds, 0.001)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds


# -- time helpers -------------------------------------------------------------------


def fmt_time(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


# -- conditions ---------------------------------------------------------------------


def set_condition(
    conditions: list[Obj], type_: str, status: str, reason: str, message: str, now: datetime
) -> None:
    """Set a condition; ``lastTransitionTime`` moves only when ``status`` moves."""
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = fmt_time(now)
            cond["status"], cond["reason"], cond["message"] = status, str(reason), message
            return
    conditions.append(
        {
            "type": type_,
            "status": status,
            "reason": str(reason),
            "message": message,
            "lastTransitionTime": fmt_time(now),
        }
    )


def get_condition(status: Mapping[str, Any], type_: str) -> Obj | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


# -- the plan -----------------------------------------------------------------------


def plan(kind: JobKind[Any], job: JobView, pods: Pods, now: datetime) -> Plan:
    """The rules of the module docstring, in order; the first that ends the pass wins."""
    p = _Pass(kind, job, pods, now)
    if (
        _finished(p)
        or _invalid(p)
        or _out_of_time(p)
        or _never_placed(p)
        or _paused(p)
        or _not_admitted(p)
    ):
        return p.done()
    _resume(p)
    _scale_down(p)
    _create_missing(p)
    _restart_or_fail(p)
    _outcome(p)
    if p.status["phase"] not in TERMINAL:
        _progress(p)
    return p.done()


class _Pass:
    """One planning pass: the job, its pods, the time, and the plan being made."""

    def __init__(self, kind: JobKind[Any], job: JobView, pods: Pods, now: datetime) -> None:
        self.kind, self.job, self.pods, self.now = kind, job, pods, now
        self.prev = job.status
        self.out = Plan()
        self.status: Obj = {
            "observedGeneration": job.generation,
            "phase": self.prev.get("phase") or "Pending",
            "conditions": [dict(c) for c in self.prev.get("conditions") or []],
            "restartCount": int(self.prev.get("restartCount") or 0),
            "countedFailures": [],
            "startTime": self.prev.get("startTime") or fmt_time(now),
        }
        if self.prev.get("completionTime"):
            self.status["completionTime"] = self.prev["completionTime"]
        self.out.status = self.status
        self.conds: list[Obj] = self.status["conditions"]
        self.desired = _Desired({r.type: r.replicas for r in job.roles})
        self.role_restarts = _role_restarts(self.prev)
        # Counted failures whose pods are gone need no more remembering.
        live = {s.uid for s in pods.values()}
        self.counted = [u for u in self.prev.get("countedFailures") or [] if u in live]
        self.resuming = False
        self.after_pause = False
        self.failures: list[tuple[ReplicaState, str, str]] = []  # failed for good: reason, why

    def condition(self, type_: str, status: str, reason: str, message: str) -> None:
        set_condition(self.conds, type_, status, reason, message, self.now)

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
        if keep_planned:
            self.out.create.clear()

    def done(self) -> Plan:
        self.status["countedFailures"] = self.counted
        _pod_group_status(self)
        _workload_status(self)
        _tensorboard_status(self)
        _render_replicas(self)
        return self.out


# -- rules that end the pass --------------------------------------------------------------


def _finished(p: _Pass) -> bool:
    """1. A finished job stays finished; only its cleanup policy still acts."""
    if p.status["phase"] not in TERMINAL:
        return False
    _cleanup(p)
    return True


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


def _not_admitted(p: _Pass) -> bool:
    """A job queued by Kueue runs only while its Workload is admitted; evicted,
    it stops the way pause does (no restart counted) and waits again."""
    admission = p.job.admission
    if admission is None or admission.admitted:
        return False
    p.out.delete.extend(live for live in p.pods.values() if not live.terminating)
    p.status.pop("startTime", None)
    p.status["phase"] = "Pending"
    why = admission.message or "not evaluated yet"
    if admission.evicted:
        reason = Reason.EVICTED
        message = (
            f"Kueue evicted Workload {admission.workload} ({admission.evicted}: {why}): "
            f"the job's pods are deleted; it waits to be admitted again in LocalQueue "
            f"{admission.queue}"
        )
    else:
        reason = Reason.WAITING_FOR_ADMISSION
        message = (
            f"Waiting for Kueue to admit Workload {admission.workload} in LocalQueue "
            f"{admission.queue}: {why}"
        )
    before = get_condition(p.status, "Running") or {}
    if before.get("reason") != reason:
        p.event("Warning" if admission.evicted else "Normal", reason, message)
    p.condition("Running", "False", reason, message)
    if p.job.waiting:  # its Workload cannot be created yet: that is what it waits for first
        p.condition("Initialized", "False", p.job.waiting_reason, p.job.waiting)
    else:
        p.condition("Initialized", "False", reason, message)
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


def _scale_down(p: _Pass) -> None:
    """Pods of a replica the job no longer wants (scaled down, a type removed) go."""
    for key, existing in sorted(p.pods.items()):
        if key not in p.desired and not existing.terminating:
            p.out.delete.append(existing)


def _create_missing(p: _Pass) -> None:
    """Replicas without a pod, in index order, at most a batch of them; none while
    the job waits (held without a gang scheduler, or a refusal being retried)."""
    if p.job.waiting:
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
    for (type_, index), state in sorted(p.pods.items()):
        role = roles.get(type_)
        if role is None or index >= role.replicas or state.terminating or not state.ended:
            continue
        if not should_restart(role.restart_policy, state):
            if state.phase == "Failed":
                p.failures.append((state, Reason.REPLICA_FAILED, state.describe_failure()))
            continue
        if state.uid in counted:
            p.out.delete.append(state)  # counted before a crash; finish the restart
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
        code = "" if state.exit_code is None else f" (exit code {state.exit_code})"
        p.event(
            "Warning" if state.phase == "Failed" else "Normal",
            Reason.RESTARTING,
            f"Restarting {state.name}{code}: restart {p.status['restartCount']} of {limit}",
        )


def _outcome(p: _Pass) -> None:
    """6. A replica failed for good fails the job at once; else the kind decides."""
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


def _pod_mode(kind: JobKind[Any], job: JobView, type_: str, after_pause: bool) -> PodMode:
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
    elif job.waiting:
        p.condition("Initialized", "False", job.waiting_reason, job.waiting)
    failing = [s for s in present.values() if s.phase == "Failed"]
    if failing:
        message = "; ".join(s.describe_failure() for s in failing)
        p.condition("ReplicaFailure", "True", Reason.REPLICA_FAILED, message)
    else:
        p.condition("ReplicaFailure", "False", Reason.NONE, "All pods are running normally.")
    running = all_created and all(s.phase in ("Running", "Succeeded") for s in present.values())
    if running:
        status["phase"] = "Running"
        p.condition("Running", "True", Reason.NONE, "The job is running.")
    elif p.resuming:
        status["phase"] = "Resuming"
    elif status["phase"] != "Running":
        status["phase"] = "Pending"
        stuck = [s for _, s in sorted(present.items()) if s.unschedulable]
        if job.group is not None and all_created:
            _waiting_for_gang(p, stuck)
        else:
            _unschedulable(p, stuck)
    _not_finished_yet(p)


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


def _waiting_for_gang(p: _Pass, stuck: list[ReplicaState]) -> None:
    """A pending gang-scheduled job says which gang scheduler it waits for, in which
    queue, and why (one Event when it starts to wait)."""
    group, gang = p.job.group, p.job.gang
    assert group is not None
    queue = group.queue or gang.queue
    where = f", queue {queue}" if queue else ""
    message = (
        f"Waiting for the gang scheduler ({group.backend}) to place all {gang.min_member} "
        f"pods of PodGroup {group.name} at once{where}: PodGroup phase "
        f"{group.phase or 'not reported yet'}"
    )
    why = group.message or (stuck[0].unschedulable if stuck else "")
    if why:
        message += f"; {why}"
    before = get_condition(p.status, "Running") or {}
    if before.get("reason") != Reason.WAITING_FOR_GANG:
        where = f" in queue {queue}" if queue else ""
        p.event(
            "Normal",
            Reason.WAITING_FOR_GANG,
            f"Waiting for the gang scheduler ({group.backend}) to place PodGroup "
            f"{group.name}{where}",
        )
    p.condition("Running", "False", Reason.WAITING_FOR_GANG, message)


def _pod_group_status(p: _Pass) -> None:
    """``status.podGroup``: the job's PodGroup as last seen, while the job has one."""
    group, gang = p.job.group, p.job.gang
    if group is None or p.status["phase"] in (*TERMINAL, "Paused"):
        if p.prev.get("podGroup"):
            p.status["podGroup"] = dict(p.prev["podGroup"])
        return
    seen: Obj = {"name": group.name, "scheduler": group.backend, "minMember": gang.min_member}
    if group.queue or gang.queue:
        seen["queue"] = group.queue or gang.queue
    if group.phase:
        seen["phase"] = group.phase
    if group.message:
        seen["message"] = group.message
    p.status["podGroup"] = seen


def _workload_status(p: _Pass) -> None:
    """``status.workload``: the job's Kueue Workload as last seen, while it has one."""
    admission = p.job.admission
    if admission is None or p.status["phase"] in (*TERMINAL, "Paused"):
        if p.prev.get("workload"):
            p.status["workload"] = dict(p.prev["workload"])
        return
    seen: Obj = {
        "name": admission.workload,
        "queue": admission.queue,
        "admitted": admission.admitted,
    }
    if admission.cluster_queue:
        seen["clusterQueue"] = admission.cluster_queue
    if admission.message and not admission.admitted:
        seen["message"] = admission.message
    p.status["workload"] = seen


def _tensorboard_status(p: _Pass) -> None:
    """``status.tensorboard``: the job's TensorBoard as last seen, in every phase (it
    is kept while the job is paused and after it has finished); absent without one.
    Its trouble is told once in a Warning Event, and never touches the job's phase."""
    state = p.job.tensorboard
    if state is None:
        return
    dependent: Obj = {"apiVersion": TB_API_VERSION, "kind": TB_KIND, "name": state.name}
    dependent["namespace"] = state.namespace
    if state.uid:
        dependent["uid"] = state.uid
    label = f"TensorBoard [{state.name}]"
    exists_in_trouble = state.uid and not state.ready and state.reason not in TB_PROGRESS
    warning = state.failed or bool(exists_in_trouble)
    if state.failed:
        reason, note = Reason.DEPENDENT_FAILED, f"{label} cannot be had: {state.message}"
    elif not state.uid:
        reason, note = Reason.DEPENDENT_CREATING, f"{label} is being created"
    elif state.ready:
        reason, note = Reason.DEPENDENT_READY, f"{label} is ready"
    else:
        why = f"{state.reason}: {state.message}" if state.message else state.reason
        reason, note = Reason.DEPENDENT_NOT_READY, f"{label} is not ready: {why}"
    seen: Obj = {
        "action": state.action,
        "dependent": dependent,
        "note": note,
        "ready": state.ready,
        "reason": str(reason),
        "type": "Warning" if warning else "Normal",
    }
    before = p.prev.get("tensorboard") or {}
    if warning and (before.get("type") != "Warning" or before.get("reason") != reason):
        p.event("Warning", Reason.TENSORBOARD_NOT_READY, note)
    elif state.ready and not before.get("ready"):
        p.event("Normal", Reason.TENSORBOARD_READY, note)
    p.status["tensorboard"] = seen


def _role_restarts(prev: Mapping[str, Any]) -> dict[str, int]:
    return {str(t.get("type")): int(t.get("restartCount") or 0) for t in prev.get("tasks") or []}


def _render_replicas(p: _Pass) -> None:
    """``tasks`` (per type: restarts, and the replicas that have a pod or are
    being created now) and ``aggregate`` counts of every wanted replica."""
    job, pods, status, role_restarts, out = p.job, p.pods, p.status, p.role_restarts, p.out
    deleting = {s.uid for s in out.delete}
    creating = {(t, i) for t, i, _ in out.create}
    aggregate = {
        k: 0
        for k in ("creating", "deleted", "failed", "pending", "running", "succeeded", "unknown")
    }
    waiting = status.get("phase") not in (*TERMINAL, "Paused")
    tasks: list[Obj] = []
    ready = total = 0
    for role in job.roles:
        replicas: list[Obj] = []
        listed = sorted(
            {i for t, i in pods if t == role.type and i < role.replicas}
            | {i for t, i in creating if t == role.type}
        )
        for index in listed:
            state = pods.get((role.type, index))
            if state is None:
                replicas.append({"name": "", "uid": "", "phase": "Creating", "containers": []})
                continue
            phase = "Deleted" if state.terminating or state.uid in deleting else state.phase
            replicas.append(
                {
                    "name": state.name,
                    "uid": state.uid,
                    "phase": phase,
                    "containers": [
                        {
                            k: v
                            for k, v in (
                                ("name", n),
                                ("state", st),
                                ("exitCode", code),
                                ("reason", rsn),
                            )
                            if v not in (None, "")
                        }
                        for n, st, code, rsn in state.containers
                    ],
                }
            )
            ready += state.phase == "Running" and not state.terminating
            total += not state.terminating and state.uid not in deleting
            key = phase.lower() if phase.lower() in aggregate else "unknown"
            aggregate[key] += 1
        without_pod = role.replicas - sum(1 for i in listed if (role.type, i) in pods)
        aggregate["creating" if waiting else "deleted"] += without_pod
        tasks.append(
            {
                "type": role.type,
                "restartCount": role_restarts.get(role.type, 0),
                "replicas": replicas,
            }
        )
    status["tasks"] = tasks
    status["aggregate"] = aggregate
    status["replicas"] = total
    status["readyReplicas"] = ready
    status["selector"] = job_selector(job.kind, job.name)
