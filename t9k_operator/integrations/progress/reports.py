"""What a training process reports of its progress, as it POSTs it
(``t9k_operator/report.py`` sends it): :class:`ProgressReport`, parsed from
untrusted bytes with :func:`parse_report`, which bounds its size, its
metrics' number and names, and refuses numbers that are not finite.

Pure: no I/O.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field, StringConstraints, ValidationError, model_validator

from t9k_operator.api.base import T9kModel

MAX_METRICS = 16
"""Metrics one report may carry (and ``status.progress`` shows)."""
MAX_REPORT_BYTES = 4096
"""The largest report body the endpoint reads."""
METRIC_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.:/-]*$"
MAX_METRIC_NAME = 63
MAX_STEP = 2**53
"""Steps beyond this are no longer exact in JSON's numbers."""

MetricName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_METRIC_NAME, pattern=METRIC_NAME_PATTERN),
]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


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
