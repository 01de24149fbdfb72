"""Restarts and disruptions: an ended replica recreated per its restart
policy and counted against ``backoffLimit`` (restartScope Job: the whole job
as one attempt, once the stop gates let the others go), a
disrupted or force-deleted pod recreated uncounted up to the disruption
limit; a replica failed for good is noted for the outcome."""

from __future__ import annotations

from t9k_operator.kinds.pods import ReplicaState, should_restart
from t9k_operator.kinds.view import Role
from t9k_operator.reconcilers.engine.conditions import Reason
from t9k_operator.reconcilers.engine.planning import Pass
from t9k_operator.reconcilers.engine.stops import may_stop

DEFAULT_DISRUPTION_LIMIT = 10
"""Disruptions a job's replicas may suffer before it fails, unless the
operator says otherwise (``--disruption-limit``)."""


def vanished(p: Pass) -> None:
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
        count_disruption(p, state, "Deleted", what)


def restart_or_fail(p: Pass) -> None:
    """4/5. An ended replica is recreated per its restart policy, each recreation
    counted against backoffLimit in the same status write; else it failed for good."""
    if p.job.debug:
        return  # debug pods' exits neither restart them nor end the job
    roles = {r.type: r for r in p.job.roles}
    counted = set(p.counted)
    whole = p.job.restart_scope == "Job"
    recreating = False  # a replica is recreated by this pass (whole: so is every other)
    attempt = False  # whole: this pass has counted the job's restart already
    first = len(p.out.delete)  # whole: the attempt's deletes, held while a gate holds the stop
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
            _finish_restart(p, state, counted)
            recreating = True
        elif _count_restart(p, role, state, counted, whole):
            recreating = True
            attempt = whole
    if whole and recreating:
        _restart_job(p, counted, first)


def _finish_restart(p: Pass, state: ReplicaState, counted: set[str]) -> None:
    """Recreate a replica whose restart is counted already: before a crash, or
    (restartScope Job) as part of the attempt this pass counted. It counts
    nothing more."""
    if state.uid not in counted:
        p.counted.append(state.uid)
        counted.add(state.uid)
    p.out.delete.append(state)


def _count_restart(
    p: Pass, role: Role, state: ReplicaState, counted: set[str], whole: bool
) -> bool:
    """Count one restart of ``state`` against backoffLimit and its type's own
    limit, and plan its recreation, with a record and an Event; past a limit,
    a failed replica has failed for good instead. Whether it is recreated."""
    reached = _limit_reached(p, role.type, role.restart_limit)
    if reached:
        if state.phase == "Failed":
            message = f"{state.describe_failure()}; {reached}, not restarting"
            p.failures.append((state, Reason.BACKOFF_LIMIT_EXCEEDED, message))
        return False
    p.status["restartCount"] += 1
    p.role_restarts[role.type] = p.role_restarts.get(role.type, 0) + 1
    p.counted.append(state.uid)
    counted.add(state.uid)
    p.out.delete.append(state)
    p.out.restarts += 1
    p.record(state, state.reason, counted=True)
    _restart_event(p, role, state, whole)
    return True


def _restart_event(p: Pass, role: Role, state: ReplicaState, whole: bool) -> None:
    """The Event of a counted restart: which replica, its exit code, and how
    many restarts of the job's (and its type's own) limit it has had."""
    code = "" if state.exit_code is None else f" (exit code {state.exit_code})"
    also = " with every other replica of the job (restartScope Job)" if whole else ""
    own = ""
    if role.restart_limit is not None:
        done = p.role_restarts[role.type]
        own = f" ({done} of {role.restart_limit} of replica type {role.type})"
    p.event(
        "Warning" if state.phase == "Failed" else "Normal",
        Reason.RESTARTING,
        f"Restarting {state.name}{code}{also}: restart {p.status['restartCount']} "
        f"of {p.job.backoff_limit}" + own,
    )


def _restart_job(p: Pass, counted: set[str], first: int) -> None:
    """restartScope Job, a replica being recreated: every other one is too,
    once the stop gates let them go (``first``: where this pass's
    deletes of the attempt begin in ``p.out.delete``)."""
    if not may_stop(p, Reason.RESTARTING):
        # Counted, and the others part of the attempt (one failing meanwhile
        # counts nothing more); deleted once the gates let them go.
        del p.out.delete[first:]
        restart_all(p, counted, delete=False)
        return
    restart_all(p, counted)


def _limit_reached(p: Pass, type_: str, role_limit: int | None) -> str:
    """Which restart limit stops one more restart of a replica of ``type_``:
    the job's backoffLimit, or its type's own limit; "" when none does."""
    if p.status["restartCount"] >= p.job.backoff_limit:
        return f"backoffLimit {p.job.backoff_limit} reached"
    if role_limit is not None and p.role_restarts.get(type_, 0) >= role_limit:
        return f"the restart limit {role_limit} of replica type {type_} reached"
    return ""


def restart_all(p: Pass, counted: set[str], delete: bool = True) -> None:
    """restartScope Job: every other replica of the job is recreated with the one
    that restarts, in the same attempt. Their uids join the counted ones, so a
    replica that fails meanwhile (its peer gone) is part of this attempt too
    (``delete=False``: only that, while a stop gate holds them)."""
    planned = {s.uid for s in p.out.delete}
    for key, state in sorted(p.pods.items()):
        if key not in p.desired or state.terminating or state.uid in planned:
            continue
        if delete:
            p.out.delete.append(state)
        if state.uid not in counted:
            p.counted.append(state.uid)
            counted.add(state.uid)


def _disrupted(p: Pass, state: ReplicaState, counted: set[str]) -> bool:
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
    if not count_disruption(p, state, state.disruption, f"was disrupted{where} ({why})"):
        return False
    p.counted.append(state.uid)
    counted.add(state.uid)
    if not state.terminating:
        p.out.delete.append(state)
    return True


def count_disruption(p: Pass, state: ReplicaState, reason: str, what: str) -> bool:
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
