"""The job's clocks: ``activeDeadlineSeconds``, the schedule timeout of a
job whose pods were never all placed, and the start timeout of a placed pod
that kubelet cannot start (or a cause no wait cures)."""

from __future__ import annotations

from datetime import datetime, timedelta

from t9k_operator.kinds.asks import SchedulingRequest
from t9k_operator.kinds.contract import pod_start_timeout
from t9k_operator.kinds.view import Outcome
from t9k_operator.objects import parse_time
from t9k_operator.reconcilers.engine.conditions import Reason
from t9k_operator.reconcilers.engine.finish import finish
from t9k_operator.reconcilers.engine.phase import kubelet_says
from t9k_operator.reconcilers.engine.planning import Pass


def out_of_time(p: Pass) -> bool:
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
    finish(p, Outcome("Failed", Reason.DEADLINE_EXCEEDED, message))
    return True


def never_placed(p: Pass) -> bool:
    """A job whose pods were not all placed within its schedule timeout (MSJob's
    schedulingPolicy.scheduleTimeoutSeconds) after the start fails."""
    request = p.job.ask(SchedulingRequest)
    seconds = request.timeout_seconds if request is not None else None
    if not seconds or p.status["phase"] != "Pending" or p.job.paused:
        return False
    start = parse_time(p.status["startTime"]) or p.now
    deadline = start + timedelta(seconds=seconds)
    if p.now < deadline:
        p.out.wake_in((deadline - p.now).total_seconds())
        return False
    message = f"The job's pods were not all placed within its scheduleTimeoutSeconds ({seconds}s)."
    finish(p, Outcome("Failed", Reason.SCHEDULE_TIMEOUT, message))
    return True


def _deadline(start: datetime, seconds: int | None) -> datetime | None:
    """When the job's time runs out; None when unset or beyond what a datetime
    holds (admission bounds it, but an object stored before the bound may not be)."""
    if seconds is None:
        return None
    try:
        return start + timedelta(seconds=seconds)
    except OverflowError:
        return None


# What the user changes when a pod cannot start for good, by kubelet's reason.
_FIX = {
    "InvalidImageName": "the image",
    "ErrImageNeverPull": "the image or imagePullPolicy",
    "CreateContainerConfigError": "the env or envFrom (or add the key)",
}


def cannot_start(p: Pass) -> None:
    """6. A placed pod that kubelet cannot start fails the job: at once when no
    wait cures the cause, else once the start timeout has run out."""
    timeout = pod_start_timeout(p.job.start_timeout)
    for type_, state in p.not_started:
        waiting = kubelet_says(p, state)
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
