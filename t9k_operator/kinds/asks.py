"""What a job asks beyond its pods, in kind-neutral terms: of a scheduler
(:class:`SchedulingRequest`), of whoever watches its progress
(:class:`HangPolicy`), of whoever stops it (:class:`CheckpointOnStop`), and
of whoever keeps a job's TensorBoard (:class:`WithTensorBoard`).

A kind states these in its :class:`~t9k_operator.kinds.view.JobView`
(``asks``), keyed by their type; the integration that serves a request reads
it, and may rewrite it for those after it, through ``JobView.ask`` and
``JobView.asking``. No type here names an integration or a kind.

Each names the field of the job it comes from (``asked_by``; None for a
request the user did not make, such as the at-once placement of a job that
names no scheduler): a field whose request no integration that is on serves
is said to the user when the job is accepted (:func:`asked_by`), never
ignored in silence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from t9k_operator.api.checkpoint import CheckpointPolicy
from t9k_operator.api.progress import ProgressPolicy
from t9k_operator.api.tensorboard import TensorBoardSpec


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
    asked_by: ClassVar[str] = "spec.runPolicy.progress"


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
    asked_by: ClassVar[str] = "spec.runPolicy.checkpoint"


def checkpoint_on_stop(policy: CheckpointPolicy | None) -> CheckpointOnStop | None:
    """A job's ``runPolicy.checkpoint`` as a :class:`CheckpointOnStop` (None: stop at once)."""
    return None if policy is None else CheckpointOnStop(policy.grace_seconds)


@dataclass(frozen=True)
class WithTensorBoard:
    """A TensorBoard kept beside the job, owned by it (``spec.tensorboardSpec``)."""

    spec: TensorBoardSpec
    asked_by: ClassVar[str] = "spec.tensorboardSpec"


def with_tensorboard(spec: object) -> WithTensorBoard | None:
    """The ``tensorboard_spec`` of a kind's spec model as a :class:`WithTensorBoard`
    (None: unset, or a kind without the field)."""
    value = getattr(spec, "tensorboard_spec", None)
    return WithTensorBoard(value) if isinstance(value, TensorBoardSpec) else None


@dataclass(frozen=True)
class TopologyPlacement:
    """A job whose pod templates carry Kueue's topology annotations
    (:mod:`t9k_operator.api.topology`): its pods ask to be placed close together."""

    asked_by: str
    """The first such annotation, by its path in the job."""


def asked_by(ask: object) -> str | None:
    """The field of the job a request comes from; None when the user did not ask
    it (a request a kind makes on its own)."""
    field = getattr(ask, "asked_by", None)
    return field if isinstance(field, str) and field else None
