"""How a job ends and what still acts on it once it has: :func:`finish`,
a spec no pod can be built from, the outcome the kind decides, the cleanup
policy on a finished job's pods and ``ttlSecondsAfterFinished``."""

from __future__ import annotations

from datetime import timedelta

from t9k_operator.kinds.view import Outcome
from t9k_operator.objects import parse_time
from t9k_operator.reconcilers.engine.conditions import TERMINAL, Reason, fmt_time
from t9k_operator.reconcilers.engine.planning import Pass


def finish(p: Pass, outcome: Outcome, *, keep_planned: bool = False) -> None:
    """End the job with ``outcome``; the cleanup policy acts on its pods."""
    p.status["phase"] = outcome.phase
    p.status["completionTime"] = fmt_time(p.now)
    ok = outcome.phase == "Succeeded"
    msg = outcome.message
    p.condition("Completed", "True" if ok else "False", outcome.reason, msg)
    p.condition("Failed", "False" if ok else "True", outcome.reason, msg)
    p.condition("Running", "False", outcome.reason, msg)
    p.out.finished = outcome
    p.event("Normal" if ok else "Warning", outcome.reason, msg)
    cleanup(p, keep_planned=keep_planned)
    expire(p)
    if keep_planned:
        p.out.create.clear()


def finished(p: Pass) -> bool:
    """1. A finished job stays finished; only its cleanup policy still acts."""
    if p.status["phase"] not in TERMINAL:
        return False
    cleanup(p)
    expire(p)
    return True


def expire(p: Pass) -> None:
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


def invalid(p: Pass) -> bool:
    """A spec no pod can be built from fails the job, naming the field."""
    if not p.job.spec_error:
        return False
    finish(p, Outcome("Failed", p.job.spec_error_reason, p.job.spec_error))
    return True


def decide(p: Pass) -> None:
    """7. A replica failed for good fails the job at once; else the kind decides."""
    if p.job.debug:
        return
    failed = failure(p)
    if failed is not None:
        finish(p, failed, keep_planned=True)
        return
    wanted = {k: v for k, v in p.pods.items() if k in p.desired}
    outcome = p.kind.outcome(p.job, wanted)
    # A success while a replica is being restarted waits for the restart.
    if outcome is not None and not (outcome.phase == "Succeeded" and p.out.restarts):
        finish(p, outcome, keep_planned=True)


RULED = frozenset({Reason.REPLICA_FAILED, Reason.BACKOFF_LIMIT_EXCEEDED})
"""The failures a job's ``failure_rules`` judge: a replica's own end, not a pod
that cannot start, a hang or too many disruptions."""


def failure(p: Pass) -> Outcome | None:
    """The job's failure from its replicas failed for good: the first one, or
    with ``failure_rules``, the first rule all of whose replicas have failed."""
    rules = p.job.failure_rules
    for _, reason, message in p.failures:
        if rules is None or reason not in RULED:
            return Outcome("Failed", reason, message)
    uids = {state.uid for state, _, _ in p.failures}
    failed = {key for key, state in p.pods.items() if state.uid in uids}
    for rule in rules or ():
        if rule and all(key in failed for key in rule):
            named = ", ".join(f"{t}-{i}" for t, i in rule)
            message = f"The job failed by its failure rule: replicas {named} have all failed"
            return Outcome("Failed", Reason.REPLICA_FAILED, message)
    return None


def cleanup(p: Pass, keep_planned: bool = False) -> None:
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
