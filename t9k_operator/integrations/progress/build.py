"""The progress integration's part of a job's status: ``status.progress``, its
model, the PROGRESS and ETA printer columns, and how PROGRESS and ETA read.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import math

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import PrinterColumn
from t9k_operator.api.parts import StatusPart
from t9k_operator.integrations.progress.reports import MAX_METRICS


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


PRINTER_COLUMNS: tuple[PrinterColumn, ...] = (
    PrinterColumn(
        "Progress",
        "string",
        ".status.progress.summary",
        "The latest step reported, of totalSteps (docs/progress.md).",
    ),
    PrinterColumn(
        "ETA", "string", ".status.progress.eta", "Time left at the latest report, if known."
    ),
)

PROGRESS_PART = StatusPart(
    key="progress",
    model=Progress,
    description=(
        "The training's progress as its replicas last reported it (docs/progress.md); "
        "absent until a replica reports."
    ),
    section="",
    lines=lambda progress: [],
    printer_columns=PRINTER_COLUMNS,
)
"""``status.progress``: shown in ``t9k describe``'s head by the integration's
view (``view.py``), not as a section."""
