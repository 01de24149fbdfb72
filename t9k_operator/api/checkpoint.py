"""Checkpoint before stopping: the run policy that asks for it.

:class:`CheckpointPolicy` is ``spec.runPolicy.checkpoint``, an extension of
the T9k API: before the operator stops a job's replicas for a reason that is
not the job's fault (pause, a queue's preemption, a restart of the whole
job), it asks them to checkpoint and waits up to ``graceSeconds`` for each
running replica to report the step it checkpointed (docs/checkpoint.md). The
kinds whose run policy has it state it as
:class:`~t9k_operator.kinds.asks.CheckpointOnStop`; the checkpoint
integration (``integrations/checkpoint``) serves it and writes
``status.checkpoint``, its status part.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from t9k_operator.api.base import T9kModel

MAX_CHECKPOINT_GRACE = 3600
"""The longest graceSeconds: a stop (a pause, a preemption) should not wait
longer than an hour for a checkpoint."""


class CheckpointPolicy(T9kModel):
    """How long a stop waits for the replicas to checkpoint."""

    grace_seconds: int = Field(
        ge=1,
        le=MAX_CHECKPOINT_GRACE,
        description=(
            "Seconds the operator waits, before it deletes the replicas of a job it stops "
            "for a reason that is not the job's own (pause, a queue's preemption, a restart "
            "of the whole job), for every running replica to report the step it "
            f"checkpointed (1 to {MAX_CHECKPOINT_GRACE}). The replicas learn of the request "
            "from the answers to their progress reports (docs/checkpoint.md)."
        ),
    )


def checkpoint_field() -> Any:
    """``spec.runPolicy.checkpoint`` of a kind."""
    return Field(
        default=None,
        description=(
            "An extension of the T9k API: ask the replicas to checkpoint before they are "
            "stopped, and wait up to graceSeconds for them (docs/checkpoint.md). Unset: "
            "replicas are stopped at once."
        ),
    )
