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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

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


@dataclass
class Plan:
    create: list[tuple[str, int, PodMode]] = field(default_factory=list)
    delete: list[ReplicaState] = field(default_factory=list)
    status: Obj = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # type, reason, message
    requeue_after: float | None = None
    finished: Outcome | None = None  # set on the reconcile that ends the job

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
            cond["status"], cond["reason"], cond["message"] = status, reason, message
            return
    conditions.append(
        {
            "type": type_,
            "status": status,
            "reason": reason,
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


def plan(
    kind: JobKind, job: JobView, pods: Mapping[tuple[str, int], ReplicaState], now: datetime
) -> Plan:
    out = Plan()
    prev = job.status
    status: Obj = {
        "observedGeneration": job.generation,
        "phase": prev.get("phase") or "Pending",
        "conditions": [dict(c) for c in prev.get("conditions") or []],
        "restartCount": int(prev.get("restartCount") or 0),
        "countedFailures": [],
        "startTime": prev.get("startTime") or fmt_time(now),
    }
    if prev.get("completionTime"):
        status["completionTime"] = prev["completionTime"]
    out.status = status
    conds: list[Obj] = status["conditions"]
    wanted = {r.type: r.replicas for r in job.roles}
    desired = _Desired(wanted)
    role_restarts = _role_restarts(prev)

    # Counted failures whose pods are gone need no more remembering.
    live_uids = {s.uid for s in pods.values()}
    counted = [u for u in prev.get("countedFailures") or [] if u in live_uids]

    def finish(outcome: Outcome) -> None:
        status["phase"] = outcome.phase
        status["completionTime"] = fmt_time(now)
        msg = outcome.message
        ok = outcome.phase == "Succeeded"
        set_condition(conds, "Completed", "True" if ok else "False", outcome.reason, msg, now)
        set_condition(conds, "Failed", "False" if ok else "True", outcome.reason, msg, now)
        set_condition(conds, "Running", "False", outcome.reason, msg, now)
        out.finished = outcome
        out.events.append(("Normal" if ok else "Warning", outcome.reason, msg))

    # 1. finished jobs: cleanup only.
    if status["phase"] in TERMINAL:
        _cleanup(kind, job, pods, out)
        status["countedFailures"] = counted
        _render_replicas(job, pods, status, role_restarts, out)
        return out

    if job.spec_error:
        finish(Outcome("Failed", job.spec_error_reason, job.spec_error))
        _cleanup(kind, job, pods, out)
        _render_replicas(job, pods, status, role_restarts, out)
        return out

    # 2. deadline.
    start = parse_time(status["startTime"]) or now
    deadline = _deadline(start, job.active_deadline_seconds)
    if deadline is not None:
        if now >= deadline:
            finish(
                Outcome(
                    "Failed",
                    "DeadlineExceeded",
                    f"The job ran past its activeDeadlineSeconds ({job.active_deadline_seconds}s).",
                )
            )
            _cleanup(kind, job, pods, out)
            _render_replicas(job, pods, status, role_restarts, out)
            return out
        out.wake_in((deadline - now).total_seconds())

    # 3. pause.
    if job.paused:
        for live in pods.values():
            if not live.terminating:
                out.delete.append(live)
        if status["phase"] != "Paused":
            out.events.append(("Normal", "Paused", "The job is paused: its pods are deleted."))
        status["phase"] = "Paused"
        set_condition(
            conds,
            "Paused",
            "True",
            "Paused",
            "The job is paused: all replicas are deleted or being deleted.",
            now,
        )
        set_condition(conds, "Running", "False", "Paused", "The job is paused.", now)
        status["countedFailures"] = counted
        _render_replicas(job, pods, status, role_restarts, out)
        return out
    was_paused = get_condition(prev, "Paused") is not None
    resuming = status["phase"] == "Paused" or (status["phase"] == "Resuming")
    if status["phase"] == "Paused":
        out.events.append(("Normal", "Resumed", "The job is resuming: its pods are recreated."))
        set_condition(conds, "Paused", "False", "Resumed", "The job has been resumed.", now)

    # 4/5. per replica: create, restart, or note a permanent failure.
    failed_for_good: list[tuple[ReplicaState, str, str]] = []  # state, reason, message
    counted_set = set(counted)
    for key, existing in sorted(pods.items()):
        if key not in desired and not existing.terminating:
            out.delete.append(existing)  # scaled down, or a type that no longer exists
    roles = {r.type: r for r in job.roles}
    # Replicas whose pod is missing, in index order, at most a batch of them.
    for role in job.roles:
        for index in _missing(role, pods, CREATE_BATCH - len(out.create)):
            if kind.may_create(job, role.type, pods):
                mode = _pod_mode(kind, job, role.type, was_paused or resuming)
                out.create.append((role.type, index, mode))
    if desired.count - sum(1 for k in pods if k in desired) > len(out.create):
        out.wake_in(1.0)  # more to create than one batch, or held back by the kind
    for (type_, index), state in sorted(pods.items()):
        owner = roles.get(type_)
        if owner is None or index >= owner.replicas:
            continue
        role = owner
        if state.terminating or not state.ended or job.debug:
            continue
        if not should_restart(role.restart_policy, state):
            if state.phase == "Failed":
                failed_for_good.append((state, "ReplicaFailed", state.describe_failure()))
            continue
        if state.uid in counted_set:
            out.delete.append(state)  # counted before a crash; finish the restart
            continue
        if status["restartCount"] >= job.backoff_limit:
            if state.phase == "Failed":
                # One Event: the job's failure below says it (it was posted twice).
                message = (f"{state.describe_failure()}; backoffLimit {job.backoff_limit} "
                           "reached, not restarting")  # fmt: skip
                failed_for_good.append((state, "BackoffLimitExceeded", message))
            continue
        status["restartCount"] += 1
        role_restarts[role.type] = role_restarts.get(role.type, 0) + 1
        counted.append(state.uid)
        counted_set.add(state.uid)
        out.delete.append(state)
        code = "" if state.exit_code is None else f" (exit code {state.exit_code})"
        out.events.append(
            (
                "Warning" if state.phase == "Failed" else "Normal",
                "Restarting",
                f"Restarting {state.name}{code}: restart "
                f"{status['restartCount']} of {job.backoff_limit}",
            )
        )
    status["countedFailures"] = counted

    # 6. outcome.
    if failed_for_good and not job.debug:
        _, reason, message = failed_for_good[0]
        finish(Outcome("Failed", reason, message))
        _cleanup(kind, job, pods, out, keep_planned=True)
        out.create.clear()
    elif not job.debug:
        outcome = kind.outcome(job, {k: v for k, v in pods.items() if k in desired})
        if outcome is not None and not (outcome.phase == "Succeeded" and _restarting(out)):
            finish(outcome)
            _cleanup(kind, job, pods, out, keep_planned=True)
            out.create.clear()

    if status["phase"] not in TERMINAL:
        _progress(job, pods, desired, status, conds, out, now, resuming)
    _render_replicas(job, pods, status, role_restarts, out)
    return out


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


def _restarting(out: Plan) -> bool:
    return any(e[1] == "Restarting" for e in out.events)


def _pod_mode(kind: JobKind, job: JobView, type_: str, after_pause: bool) -> PodMode:
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


def _cleanup(
    kind: JobKind,
    job: JobView,
    pods: Mapping[tuple[str, int], ReplicaState],
    out: Plan,
    keep_planned: bool = False,
) -> None:
    policy = job.cleanup_policy
    if policy == "None":
        return
    scope = kind.cleanup_types(job)
    planned = {s.uid for s in out.delete} if keep_planned else set()
    if not keep_planned:
        out.delete.clear()
    for (type_, _), state in sorted(pods.items()):
        if state.terminating or state.uid in planned:
            continue
        if scope is not None and type_ not in scope:
            continue
        if policy == "All" or (policy == "Unfinished" and not state.ended):
            out.delete.append(state)


def _progress(
    job: JobView,
    pods: Mapping[tuple[str, int], ReplicaState],
    desired: _Desired,
    status: Obj,
    conds: list[Obj],
    out: Plan,
    now: datetime,
    resuming: bool,
) -> None:
    present = {k: s for k, s in pods.items() if k in desired and not s.terminating}
    all_created = len(present) == desired.count and not out.create
    if all_created:
        set_condition(
            conds, "Initialized", "True", "-", "The job has been initialized successfully.", now
        )
    elif job.waiting:
        set_condition(conds, "Initialized", "False", "FailedCreate", job.waiting, now)
    failing = [s for s in present.values() if s.phase == "Failed"]
    if failing:
        set_condition(
            conds,
            "ReplicaFailure",
            "True",
            "ReplicaFailed",
            "; ".join(s.describe_failure() for s in failing),
            now,
        )
    else:
        set_condition(conds, "ReplicaFailure", "False", "-", "All pods are running normally.", now)
    running = all_created and all(s.phase in ("Running", "Succeeded") for s in present.values())
    if running:
        status["phase"] = "Running"
        set_condition(conds, "Running", "True", "-", "The job is running.", now)
    elif resuming:
        status["phase"] = "Resuming"
    else:
        status["phase"] = "Pending" if status["phase"] != "Running" else "Running"
        if status["phase"] == "Pending":
            stuck = [s for _, s in sorted(present.items()) if s.unschedulable]
            if stuck:
                message = f"Pod {stuck[0].name} cannot be scheduled: {stuck[0].unschedulable}"
                if len(stuck) > 1:
                    message += f" (and {len(stuck) - 1} more pods of the job)"
                before = get_condition(status, "Running") or {}
                if before.get("reason") != "Unschedulable":
                    out.events.append(("Warning", "Unschedulable", message))
                set_condition(conds, "Running", "False", "Unschedulable", message, now)
            else:
                set_condition(conds, "Running", "False", "-", "Waiting for replicas to start.", now)
    for type_ in ("Completed", "Failed"):
        if get_condition(status, type_) is None:
            set_condition(conds, type_, "False", "-", "The job has not finished.", now)


def _role_restarts(prev: Mapping[str, Any]) -> dict[str, int]:
    return {str(t.get("type")): int(t.get("restartCount") or 0) for t in prev.get("tasks") or []}


def _render_replicas(
    job: JobView,
    pods: Mapping[tuple[str, int], ReplicaState],
    status: Obj,
    role_restarts: Mapping[str, int],
    out: Plan,
) -> None:
    """``tasks`` (per type: restarts, and the replicas that have a pod or are
    being created now) and ``aggregate`` counts of every wanted replica."""
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
