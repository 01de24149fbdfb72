"""The phase and conditions of a job that has not finished: Initialized,
ReplicaFailure, Running (why it waits: the scheduler, kubelet, a gate), and
Unknown while a replica is on a lost node."""

from __future__ import annotations

import re
from dataclasses import replace

from t9k_operator.kinds.pods import ReplicaState, Waiting, same_cause
from t9k_operator.kinds.view import Gate, Hold
from t9k_operator.reconcilers.engine.conditions import Reason, get_condition
from t9k_operator.reconcilers.engine.planning import Pass


def progress(p: Pass) -> None:
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
        not_finished_yet(p)
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
            waiting_on(p, placing, f"; {why}" if why else "")
        else:
            _unschedulable(p, stuck)
    not_finished_yet(p)


def _lost(p: Pass) -> bool:
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


def not_finished_yet(p: Pass) -> None:
    for type_ in ("Completed", "Failed"):
        if get_condition(p.status, type_) is None:
            p.condition(type_, "False", Reason.NONE, "The job has not finished.")


def _unschedulable(p: Pass, stuck: list[ReplicaState]) -> None:
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


_MORE = re.compile(r" \(and \d+ more pods of the job\)$")


def kubelet_says(p: Pass, state: ReplicaState) -> Waiting | None:
    """Why kubelet cannot start ``state``'s container, steady while an image
    cannot be pulled. Kubelet alternates for as long as the pull fails
    (pkg/kubelet/images/image_manager.go, EnsureImageExists): ErrImagePull
    with the pull's error, then, during the image's back-off, ImagePullBackOff
    with only "Back-off pulling image". During the back-off the job keeps
    naming the error of the last pull, which its Running condition holds."""
    waiting = state.waiting
    if waiting is None or waiting.reason != "ImagePullBackOff":
        return waiting
    before = get_condition(p.status, "Running") or {}
    pulled = replace(waiting, reason="ErrImagePull", message="")
    head = _cannot_start(state.name, pulled) + ": "
    said = str(before.get("message") or "")
    if before.get("reason") != "ErrImagePull" or not said.startswith(head):
        return waiting
    return replace(pulled, message=_MORE.sub("", said[len(head) :]))


def _cannot_start(pod: str, waiting: Waiting) -> str:
    return f"Pod {pod} cannot start: {waiting.describe()}"


def _not_starting(p: Pass, blocked: list[ReplicaState]) -> None:
    """A job with a placed pod that kubelet cannot start names the pod, the
    container and kubelet's reason and message (one Event when it begins)."""
    first = blocked[0]
    waiting = kubelet_says(p, first)
    assert waiting is not None
    reason = waiting.reason
    message = _cannot_start(first.name, waiting)
    if len(blocked) > 1:
        message += f" (and {len(blocked) - 1} more pods of the job)"
    before = str((get_condition(p.status, "Running") or {}).get("reason") or "")
    if not same_cause(before, reason):  # one Event for the lot
        p.event("Warning", reason, message)
    p.condition("Running", "False", reason, message)


def waiting_on(p: Pass, gate: Gate, more: str = "") -> None:
    """A job waiting on ``gate`` says so in its Running condition, with one Event
    when it starts to wait there."""
    before = get_condition(p.status, "Running") or {}
    if gate.event and before.get("reason") != gate.reason:
        p.event("Warning" if gate.warning else "Normal", gate.reason, gate.event)
    p.condition("Running", "False", gate.reason, gate.message + more)
