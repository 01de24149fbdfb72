"""``status.checkpoint``, the checkpoint integration's part of a job's status:
the last step the replicas checkpointed, and the last stop that asked them to
(why, when, and whether it waited). Its lines in ``t9k describe``'s head are
its view's (``view.py``)."""

from __future__ import annotations

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.parts import StatusPart
from t9k_operator.integrations.checkpoint.stops import KEY


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


CHECKPOINT_PART = StatusPart(
    key=KEY,
    model=CheckpointStatus,
    description=(
        "With runPolicy.checkpoint: the newest checkpoint the replicas reported, and "
        "the last stop that asked them to checkpoint (docs/checkpoint.md)."
    ),
    section="",
    lines=lambda saved: [],
)
"""``status.checkpoint``: shown in ``t9k describe``'s head by the integration's
view (``view.py``), not as a section."""
