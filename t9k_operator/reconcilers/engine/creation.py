"""Which pods a pass creates and which it deletes as unwanted: the
replicas without a pod, a batch at a time, and those the job no longer wants
(scaled down, a type removed)."""

from __future__ import annotations

from collections.abc import Mapping

from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.view import Hold, Role
from t9k_operator.reconcilers.engine.pause import pod_mode
from t9k_operator.reconcilers.engine.planning import Pass
from t9k_operator.reconcilers.engine.stops import resume_step

CREATE_BATCH = 256
"""At most this many pods are planned for creation in one pass (the next pass
comes a second later): the engine works in proportion to the pods that exist
plus this batch, never to a requested count it has not created."""


def scale_down(p: Pass) -> None:
    """Pods of a replica the job no longer wants (scaled down, a type removed) go."""
    for key, existing in sorted(p.pods.items()):
        if key not in p.desired and not existing.terminating:
            p.out.delete.append(existing)


def create_missing(p: Pass) -> None:
    """Replicas without a pod, in index order, at most a batch of them; none while
    a gate holds new pods back (a refusal being retried, say)."""
    if p.job.gate(Hold.NEW, Hold.ALL) is not None:
        return
    for role in p.job.roles:
        for index in _missing(role, p.pods, CREATE_BATCH - len(p.out.create)):
            if p.kind.may_create(p.job, role.type, p.pods):
                after_pause = p.after_pause or p.resuming
                mode = pod_mode(p.kind, p.job, role.type, after_pause, resume_step(p))
                p.out.create.append((role.type, index, mode))
    present = sum(1 for k in p.pods if k in p.desired)
    if p.desired.count - present > len(p.out.create):
        p.out.wake_in(1.0)  # more to create than one batch, or held back by the kind


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
