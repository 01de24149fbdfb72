"""Checkpoint before stopping: the run policy that asks for it and what the
job's status shows of it.

- :class:`CheckpointPolicy`: ``spec.runPolicy.checkpoint``, an extension of
  the T9k API: before the operator stops a job's replicas for a reason that is
  not the job's fault (pause, a queue's preemption, a restart of the whole
  job), it asks them to checkpoint and waits up to ``graceSeconds`` for each
  running replica to report the step it checkpointed (docs/checkpoint.md).
- :class:`CheckpointStatus`: ``status.checkpoint``: the last step checkpointed,
  and the last stop that asked for one: why, when, and whether it waited.
"""

from __future__ import annotations

from collections.abc import Mapping
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


class CheckpointStatus(T9kModel):
    """``status.checkpoint``: what the replicas checkpointed, and the last stop
    that asked them to."""

    last_step: int | None = Field(
        default=None,
        description=(
            "The step of the newest checkpoint a replica reported; each new replica gets it "
            "as T9K_RESUME_STEP."
        ),
    )
    last_step_time: str | None = Field(
        default=None, description="When the operator received that report (RFC 3339)."
    )
    replica: str | None = Field(default=None, description="The pod that reported it.")
    requested_at: str | None = Field(
        default=None,
        description="When the operator last asked the replicas to checkpoint before a stop.",
    )
    reason: str | None = Field(
        default=None,
        description=(
            "Why it asked: Paused, Restarting, a queue's reason, or NodeCordoned (a drain "
            "coming, whose eviction stops the replicas)."
        ),
    )
    stopped_at: str | None = Field(
        default=None,
        description="When it deleted the replicas for that stop; absent while it still waits.",
    )
    waited: bool | None = Field(
        default=None,
        description=(
            "Whether every running replica had reported a checkpoint after the request "
            "when they were deleted (false: graceSeconds ran out first)."
        ),
    )


def checkpoint_lines(saved: Mapping[str, Any]) -> list[str]:
    """What ``t9k describe`` shows of ``status.checkpoint``: the newest step
    checkpointed, and the stop that asked for one (waiting, or made and
    whether it waited); empty for a job without it."""
    lines = []
    if saved.get("lastStep") is not None:
        lines.append(
            f"step {saved['lastStep']}, reported by {saved.get('replica') or '<unknown>'} "
            f"at {saved.get('lastStepTime') or '<unknown>'}"
        )
    why = saved.get("reason") or "<unknown>"
    if saved.get("stoppedAt"):
        outcome = (
            "after every running replica had checkpointed"
            if saved.get("waited")
            else "when graceSeconds ran out, before every replica had checkpointed"
        )
        lines.append(f"stopped ({why}) at {saved['stoppedAt']}, {outcome}")
    elif saved.get("requestedAt"):
        lines.append(f"asked at {saved['requestedAt']} ({why}): waiting for the replicas")
    return lines
