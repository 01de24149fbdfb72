""":class:`ProgressPolicy`: ``spec.runPolicy.progress``, an extension of the
T9k API (and of Kubeflow's run policy for MSJob): how long a job that has
reported its progress may go without a report, and what then (restart or
fail, reason ``Hung``). What a replica reports, and what the job's status
shows of it, are the progress integration's (``integrations/progress/``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.schema import MAX_INT32

MIN_HANG_TIMEOUT = 60
"""The shortest hangTimeoutSeconds: a report path has its own delays (a
training's first step, a checkpoint), and a restart costs the job an attempt."""

OnHang = Literal["Restart", "Fail"]


class ProgressPolicy(T9kModel):
    """How silent a job that reports its progress may be, and what then."""

    hang_timeout_seconds: int = Field(
        ge=MIN_HANG_TIMEOUT,
        le=MAX_INT32,
        description=(
            "Seconds a replica that has reported its progress may go without a report "
            f"(at least {MIN_HANG_TIMEOUT}). Past it the job is hung: its Hung condition "
            "names the replica silent first, and onHang says what happens. Replicas that "
            "never reported (in their current pod) are never judged."
        ),
    )
    on_hang: OnHang = Field(
        default="Fail",
        description=(
            "Fail (the default): the job fails with reason Hung. Restart: every replica "
            "of the job is recreated, as one attempt counted against backoffLimit; once "
            "the limit is reached the job fails with reason Hung."
        ),
    )


def progress_field(api: str) -> Any:
    """``spec.runPolicy.progress`` of a kind, documented as an extension of ``api``."""
    return Field(
        default=None,
        description=(
            f"An extension of {api}: how long a job whose replicas report their progress "
            "may go without a report, and what then (docs/progress.md). Unset: a job is "
            "never judged hung."
        ),
    )
