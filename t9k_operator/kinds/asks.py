"""What a job asks beyond its pods, in kind-neutral terms: of a scheduler
(:class:`SchedulingRequest`), of whoever watches its progress
(:class:`HangPolicy`), and of whoever stops it (:class:`CheckpointOnStop`).

A kind states these in its :class:`~t9k_operator.kinds.view.JobView`
(``asks``), keyed by their type; the integration that serves a request reads
it, and may rewrite it for those after it, through ``JobView.ask`` and
``JobView.asking``. No type here names an integration or a kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t9k_operator.api.checkpoint import CheckpointPolicy
from t9k_operator.api.progress import ProgressPolicy


@dataclass(frozen=True)
class SchedulingRequest:
    """What a job asks of a scheduler that places its pods together, and of a
    queue."""

    pods_at_once: int
    """Pods that must be placed together before any of them runs: what the job
    needs to make progress."""
    queue: str | None = None
    priority_class: str | None = None
    """The PriorityClass of the job's pods (a kind with priority levels names
    the class of its level)."""
    timeout_seconds: int | None = None
    """How long the job's pods may wait to be all placed before the job fails
    (None: no limit)."""
    min_resources: Mapping[str, Any] | None = None
    asked_by: str | None = None
    """The field by which the job asks to be placed all at once itself
    (``spec.scheduler.t9kScheduler``, ``spec.runPolicy.schedulingPolicy``); None
    when it does not (a scheduler the operator has may still place it so)."""


NOTHING_ASKED = SchedulingRequest(0)
"""The scheduling request of a job that states none (no pods needed at once)."""


@dataclass(frozen=True)
class HangPolicy:
    """How long a replica that has reported its progress may go without a
    report (``spec.runPolicy.progress``), and what then."""

    timeout_seconds: int
    on_hang: str = "Fail"  # Fail | Restart


def hang_policy(progress: ProgressPolicy | None, restarts: bool = True) -> HangPolicy | None:
    """A job's ``runPolicy.progress`` as a :class:`HangPolicy` (None: never
    hung); a kind that ``restarts`` no pod fails a hung job whatever onHang says."""
    if progress is None:
        return None
    return HangPolicy(progress.hang_timeout_seconds, progress.on_hang if restarts else "Fail")


@dataclass(frozen=True)
class CheckpointOnStop:
    """Before its replicas are stopped for a reason not the job's own, ask them to
    checkpoint and wait up to ``grace_seconds`` (``spec.runPolicy.checkpoint``)."""

    grace_seconds: int


def checkpoint_on_stop(policy: CheckpointPolicy | None) -> CheckpointOnStop | None:
    """A job's ``runPolicy.checkpoint`` as a :class:`CheckpointOnStop` (None: stop at once)."""
    return None if policy is None else CheckpointOnStop(policy.grace_seconds)
