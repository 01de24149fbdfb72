"""The status of an MSJob, in the Kubeflow shape MSJob tooling reads.

``conditions`` with ``lastUpdateTime``, ``replicaStatuses``, ``startTime``,
``completionTime`` and ``lastReconcileTime``, plus the bookkeeping fields the
operator's engine writes for every kind (``phase``, ``observedGeneration``,
``restartCount``, ``countedFailures``, ``tasks``, ``aggregate``, ``replicas``,
``readyReplicas``, from :class:`~t9k_operator.api.status.JobStatus`), all
declared so that nothing is pruned. The rest of the kind is in
:mod:`t9k_operator.api.msjob`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.status import Condition, JobStatus


class MSJobCondition(Condition):
    """One aspect of the job's state, in Kubeflow's shape."""

    type: str = Field(
        description=("Type of the condition: Created, Running, Restarting, Succeeded or Failed.")
    )
    last_update_time: str | None = Field(
        default=None,
        description="When the condition was last updated (RFC 3339).",
    )


class ReplicaCounts(T9kModel):
    """Number of pods of one role in each state (Kubeflow's ReplicaStatus)."""

    active: int = Field(default=0, description="Pods running.")
    succeeded: int = Field(default=0, description="Pods succeeded.")
    failed: int = Field(default=0, description="Pods failed.")
    label_selector: dict[str, Any] | None = Field(
        default=None,
        description="Label selector of the role's pods (Kubeflow), kept as written.",
    )
    selector: str | None = Field(
        default=None,
        description="Label selector of the role's pods, serialized (Kubeflow).",
    )


class MSJobStatus(JobStatus):
    """Observed state of an MSJob, written by the operator."""

    conditions: list[MSJobCondition] = Field(  # type: ignore[assignment]
        default=[],
        description=(
            "Conditions of the job in Kubeflow's shape (Created, Running, Restarting, "
            "Succeeded, Failed), one per type; the last true one is the job's state."
        ),
    )
    replica_statuses: dict[str, ReplicaCounts] = Field(
        default_factory=dict,
        description="Number of active, succeeded and failed pods of each role.",
    )
    last_reconcile_time: str | None = Field(
        default=None,
        description="When the operator last reconciled the job (RFC 3339).",
    )
    t9k_conditions: list[Condition] = Field(
        default=[],
        alias="t9kConditions",
        description=(
            "The operator's own conditions (Initialized, Running, ReplicaFailure, Completed, "
            "Failed), from which the Kubeflow-style conditions above are derived."
        ),
    )
