"""``status.startEstimate``: where a job that has not started waits, and when
it may start.

The part of the job's status the start-estimate integration
(``integrations/start_estimate/integration.py``) writes while the job is
``Pending``, and removes once it runs: where it waits (``Kueue``, ``gang``
or ``scheduler``), its positions in its LocalQueue and ClusterQueue, what
its pods lack on which nodes, the running jobs whose end frees what it
needs, and the estimated start time (absent when unknown) with its reason;
or that it never fits as it is (``neverFits``), and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.parts import StatusPart

KUEUE, GANG, SCHEDULER = "Kueue", "gang", "scheduler"
"""Where a job waits: for Kueue's admission, its gang scheduler, the default scheduler."""
WAITS = {KUEUE: "Kueue's admission", GANG: "its gang scheduler", SCHEDULER: "the scheduler"}
START = "Start"
"""The ``t9k describe`` section."""


class LackStatus(T9kModel):
    """A resource the job's waiting pods ask for that no node has room for."""

    resource: str = Field(description="The resource (nvidia.com/gpu, cpu, memory, ...).")
    requested: str = Field(description="What one waiting pod asks for (the most of any).")
    pods: int = Field(description="How many of the job's waiting pods ask for it.")
    free: str = Field(description="The most that any node has free of it.")
    nodes: list[str] = Field(
        default_factory=list, description="The nodes with that most free (at most 5)."
    )


class HolderStatus(T9kModel):
    """A running job (or other holder) whose end frees what the job needs."""

    name: str = Field(description="namespace/name of the job, or what else holds it.")
    end_time: str | None = Field(
        default=None,
        description="When it ends, from its progress ETA (RFC 3339); absent when unknown.",
    )


class StartEstimateStatus(T9kModel):
    """Where a job that has not started waits, and when it may start."""

    where: str = Field(
        description="What it waits for: Kueue (admission), gang (its gang scheduler), "
        "scheduler (the default scheduler placing its pods)."
    )
    local_queue: str | None = Field(default=None, description="Its Kueue LocalQueue.")
    local_queue_position: int | None = Field(
        default=None, description="Its place among the LocalQueue's pending workloads (1: next)."
    )
    cluster_queue: str | None = Field(default=None, description="Its Kueue ClusterQueue.")
    cluster_queue_position: int | None = Field(
        default=None, description="Its place among the ClusterQueue's pending workloads (1: next)."
    )
    lacking: list[LackStatus] = Field(
        default_factory=list, description="What its waiting pods lack on every node."
    )
    waiting_for: list[HolderStatus] = Field(
        default_factory=list,
        description="The running jobs whose end frees what it needs, in the order they end.",
    )
    estimated_start_time: str | None = Field(
        default=None,
        description="When it may start (RFC 3339, rounded to the minute); absent when "
        "unknown, and reason says why.",
    )
    never_fits: bool | None = Field(
        default=None,
        description="True when it never starts as it is: its pods could not be placed even "
        "on the empty nodes, or it asks more than its ClusterQueue's whole quota; reason "
        "says what it asks and what there is. Absent otherwise.",
    )
    reason: str = Field(description="How the estimate was made, or why there is none.")
    message: str | None = Field(
        default=None,
        description="The scheduler's own words on why its pods wait (a pod's PodScheduled "
        "condition, or the PodGroup's message).",
    )


def _estimate_lines(part: Mapping[str, Any]) -> list[str]:
    at = part.get("estimatedStartTime")
    where = WAITS.get(str(part.get("where")), str(part.get("where")))
    head = f"estimated start {at}" if at else "estimated start unknown"
    if part.get("neverFits"):
        head = "estimated start never"
    lines = [f"{head}, waiting for {where}: {part.get('reason', '')}"]
    queues = []
    if part.get("localQueue"):
        queues.append(f"#{part.get('localQueuePosition', '?')} in LocalQueue {part['localQueue']}")
    if part.get("clusterQueue"):
        queues.append(
            f"#{part.get('clusterQueuePosition', '?')} in ClusterQueue {part['clusterQueue']}"
        )
    if queues:
        lines.append(", ".join(queues))
    for lack in part.get("lacking") or []:
        nodes = ", ".join(lack.get("nodes") or []) or "no node"
        lines.append(
            f"lacks {lack.get('resource')}: {lack.get('pods')} pod(s) ask {lack.get('requested')} "
            f"each; at most {lack.get('free')} free ({nodes})"
        )
    if part.get("message"):
        lines.append(f"the scheduler says: {part['message']}")
    for holder in part.get("waitingFor") or []:
        ends = holder.get("endTime") or "unknown"
        lines.append(f"waits for {holder.get('name')} (ends {ends})")
    return lines


START_ESTIMATE_PART = StatusPart(
    key="startEstimate",
    model=StartEstimateStatus,
    description=(
        "While the job waits to start (Pending): where it waits (Kueue, its gang "
        "scheduler, the default scheduler), its queue positions, what its pods lack, "
        "the running jobs whose end frees it, and the estimated start time, or that "
        "it never fits as it is (docs/scheduling.md, When will my job start)."
    ),
    section=START,
    lines=_estimate_lines,
)
