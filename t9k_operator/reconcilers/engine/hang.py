"""The hang rule: a replica whose pod was heard from (a
:class:`~t9k_operator.kinds.view.Heartbeat`, from an integration) and then
silent past its window (the job's ``hangTimeoutSeconds``) restarts the job as
one attempt (counted against ``backoffLimit``) or fails it; the Hung
condition."""

from __future__ import annotations

from t9k_operator.reconcilers.engine.conditions import Reason, fmt_time, get_condition
from t9k_operator.reconcilers.engine.planning import Pass
from t9k_operator.reconcilers.engine.restarts import restart_all


def hung(p: Pass) -> None:
    """9. A replica that has reported and then been silent past the job's
    hangTimeoutSeconds: the job is restarted as one attempt, or fails."""
    if p.job.debug:
        return
    live = {
        s.uid: (key, s)
        for key, s in p.pods.items()
        if key in p.desired and not (s.terminating or s.ended) and s.phase == "Running"
    }
    planned = {s.uid for s in p.out.delete}
    heard = sorted((h for h in p.job.heartbeats if h.uid in live), key=lambda h: (h.due, h.uid))
    if not heard:
        return  # nothing heard from the current pods: never judged
    first = heard[0]
    due = first.due
    if p.now < due:
        _reporting(p)
        p.out.wake_in((due - p.now).total_seconds())
        return
    (type_, _), state = live[first.uid]
    if state.uid in planned:
        return  # being recreated by this pass already
    silent = int((p.now - first.last).total_seconds())
    message = (
        f"Replica {state.name} has not reported its progress for {silent}s (since "
        f"{fmt_time(first.last)}), past the job's hangTimeoutSeconds ({first.window_seconds}s)"
    )
    counted = set(p.counted)
    if state.uid in counted:
        restart_all(p, counted)  # counted before a crash: finish the attempt
        return
    limit = p.job.backoff_limit
    if not first.restart:
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
    restart_all(p, counted)


def _reporting(p: Pass) -> None:
    """A hung job's condition turns False once a pod of the job reports again."""
    before = get_condition(p.status, "Hung")
    if before is not None and before.get("status") == "True":
        message = "The job's replicas report their progress again."
        p.condition("Hung", "False", Reason.REPORTING, message)
