"""Training progress: what a replica may report, what the job's status shows of
it, and the run policy that judges a silent job hung.

- :class:`ProgressReport`: one report, as a training process POSTs it
  (``t9k_operator/report.py`` sends it); parsed from untrusted bytes with
  :func:`parse_report`, which bounds its size, its metrics' number and names,
  and refuses numbers that are not finite.
- :class:`Progress`: ``status.progress`` of every job kind (T9k kinds and
  MSJob): the latest step, total, epoch and metrics, which replica reported
  them and when, the throughput and the time left.
- :class:`ProgressPolicy`: ``spec.runPolicy.progress``, an extension of the
  T9k API (and of Kubeflow's run policy for MSJob): how long a job that has
  reported may go without a report, and what then (restart or fail, reason
  ``Hung``).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, ValidationError, model_validator

from t9k_operator.api.base import T9kModel
from t9k_operator.api.schema import MAX_INT32

MAX_METRICS = 16
"""Metrics one report may carry (and ``status.progress`` shows)."""
MAX_REPORT_BYTES = 4096
"""The largest report body the endpoint reads."""
METRIC_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.:/-]*$"
MAX_METRIC_NAME = 63
MAX_STEP = 2**53
"""Steps beyond this are no longer exact in JSON's numbers."""

MIN_HANG_TIMEOUT = 60
"""The shortest hangTimeoutSeconds: a report path has its own delays (a
training's first step, a checkpoint), and a restart costs the job an attempt."""

MetricName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_METRIC_NAME, pattern=METRIC_NAME_PATTERN),
]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
OnHang = Literal["Restart", "Fail"]


class ReportError(ValueError):
    """A report the endpoint refuses (400), with the reason to send back."""


class ProgressReport(T9kModel):
    """One progress report of a training process. At least one field is set."""

    step: int | None = Field(default=None, ge=0, le=MAX_STEP)
    total_steps: int | None = Field(default=None, ge=1, le=MAX_STEP)
    epoch: FiniteFloat | None = Field(default=None, ge=0)
    metrics: dict[MetricName, FiniteFloat] = Field(default_factory=dict, max_length=MAX_METRICS)
    checkpoint_step: int | None = Field(default=None, ge=0, le=MAX_STEP)
    """The step of a checkpoint the process has just written (docs/checkpoint.md)."""

    @property
    def has_progress(self) -> bool:
        """Whether it says how far the training is (not only a checkpoint)."""
        fields = (self.step, self.total_steps, self.epoch)
        return any(f is not None for f in fields) or bool(self.metrics)

    @model_validator(mode="after")
    def _not_empty(self) -> ProgressReport:
        fields = (self.step, self.total_steps, self.epoch, self.checkpoint_step)
        if all(f is None for f in fields) and not self.metrics:
            raise ValueError("a report needs step, totalSteps, epoch, checkpointStep or metrics")
        return self


def parse_report(body: bytes) -> ProgressReport:
    """The report in ``body`` (JSON); :class:`ReportError` saying why not."""
    if len(body) > MAX_REPORT_BYTES:
        raise ReportError(f"a report is at most {MAX_REPORT_BYTES} bytes")
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ReportError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ReportError("a report is a JSON object")
    try:
        return ProgressReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "report"
        raise ReportError(f"{where}: {first['msg']}") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


class Progress(T9kModel):
    """``status.progress``: the training's progress as its replicas report it."""

    step: int | None = Field(default=None, description="The latest step reported.")
    total_steps: int | None = Field(default=None, description="The steps the training will take.")
    epoch: float | None = Field(default=None, description="The latest epoch reported.")
    metrics: dict[str, float] = Field(
        default_factory=dict,
        max_length=MAX_METRICS,
        description=f"The latest metrics reported (at most {MAX_METRICS}), by name.",
    )
    replica: str | None = Field(
        default=None, description="The replica (its pod's name) the latest report came from."
    )
    last_report_time: str | None = Field(
        default=None, description="When the operator received the latest report (RFC 3339)."
    )
    steps_per_second: float | None = Field(
        default=None,
        description="Throughput over the last reports of the replica, in steps per second.",
    )
    eta: str | None = Field(
        default=None,
        description=(
            "Time left at lastReportTime, from totalSteps and the throughput "
            "(as 1h02m or 45s); absent without either."
        ),
    )
    summary: str | None = Field(
        default=None,
        description="What kubectl get shows as PROGRESS: step/totalSteps (percent), or the step.",
    )


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


def summary(step: int | None, total: int | None) -> str | None:
    """PROGRESS as kubectl get shows it: ``420/1000 (42%)``, or ``420``."""
    if step is None:
        return None
    if not total:
        return str(step)
    percent = math.floor(100 * min(step, total) / total)
    return f"{step}/{total} ({percent}%)"


def human_seconds(seconds: float) -> str:
    """``45s``, ``12m05s``, ``3h02m``, ``2d04h``: as kubectl shows ages."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
