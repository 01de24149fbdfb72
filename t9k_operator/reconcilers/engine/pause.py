"""Pause, resume and debug: a paused job (or one a gate holds entirely) has
no pods; a resumed one is Resuming until its replicas run; the command a new
pod runs after a pause (``resumeSpecs``) or in debug mode."""

from __future__ import annotations

from t9k_operator.builders.common import PodMode
from t9k_operator.kinds.view import Hold, JobView
from t9k_operator.reconcilers.engine.conditions import Reason, get_condition
from t9k_operator.reconcilers.engine.phase import not_finished_yet, waiting_on
from t9k_operator.reconcilers.engine.planning import Pass, Rules
from t9k_operator.reconcilers.engine.stops import may_stop


def paused(p: Pass) -> bool:
    """3. A paused job has no pods."""
    if not p.job.paused:
        return False
    if not may_stop(p, Reason.PAUSED):
        return True  # a stop gate holds the stop
    p.out.delete.extend(live for live in p.pods.values() if not live.terminating)
    if p.status["phase"] != "Paused":
        p.event("Normal", Reason.PAUSED, "The job is paused: its pods are deleted.")
    p.status["phase"] = "Paused"
    message = "The job is paused: all replicas are deleted or being deleted."
    p.condition("Paused", "True", Reason.PAUSED, message)
    p.condition("Running", "False", Reason.PAUSED, "The job is paused.")
    return True


def held(p: Pass) -> bool:
    """A gate that holds everything (a queue that has not admitted the job, or
    took the admission back) leaves the job no pods and no start time: it
    stops the way pause does (no restart counted) and waits."""
    gate = p.job.gate(Hold.ALL)
    if gate is None:
        return False
    if not may_stop(p, gate.reason):
        return True  # a stop gate holds the stop
    p.out.delete.extend(live for live in p.pods.values() if not live.terminating)
    p.status.pop("startTime", None)
    p.status["phase"] = "Pending"
    waiting_on(p, gate)
    # What it waits for first: a child that cannot be created yet, else the gate.
    first = p.job.gate(Hold.NEW) or gate
    p.condition("Initialized", "False", first.reason, first.message)
    not_finished_yet(p)
    return True


def resume(p: Pass) -> None:
    """Unpausing: phase Resuming until every replica runs; new pods use resumeSpecs."""
    p.after_pause = get_condition(p.prev, "Paused") is not None
    p.resuming = p.status["phase"] in ("Paused", "Resuming")
    if p.status["phase"] == "Paused":
        p.event("Normal", Reason.RESUMED, "The job is resuming: its pods are recreated.")
        p.condition("Paused", "False", Reason.RESUMED, "The job has been resumed.")


def pod_mode(
    kind: Rules, job: JobView, type_: str, after_pause: bool, resume_step: int | None = None
) -> PodMode:
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
                command=o.command,
                args=o.args,
                skip_init_containers=o.skip_init_container,
                resume_step=resume_step,
            )
    return PodMode(resume_step=resume_step)
