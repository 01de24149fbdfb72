"""The status of a T9k job, as the operator writes it.

:class:`JobStatus` is what the operator writes under ``status`` of a
PyTorchTrainingJob, DeepSpeedJob or ColossalAIJob (a kind adds its own
fields by subclassing it): the phase and conditions of the job, its replicas
grouped by replica type (:class:`TaskStatus`, :class:`ReplicaStatus`,
:class:`ContainerStatus`) and counted by phase (:class:`Aggregate`), the
restart count that ``spec.runPolicy.backoffLimit`` limits, the node each
replica last ran on (:class:`ReplicaNode`, kept after its pod), and the
scale subresource's replica count and selector. What an integration adds (the
gang scheduler's ``podGroup``, Kueue's ``workload``, the reported ``progress``,
the replicas' ``checkpoint``) is its own part
(:mod:`t9k_operator.api.parts`), merged into every kind's status schema.
MSJob's status, the MindSpore operator's, builds on the same models with
conditions of its own.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel

ConditionStatus = Literal["True", "False", "Unknown"]
ContainerState = Literal["Running", "Waiting", "Terminated"]
ReplicaPhase = Literal[
    "Creating", "Pending", "Running", "Succeeded", "Failed", "Unknown", "Deleted"
]
JobPhase = Literal["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"]


class Condition(T9kModel):
    """One aspect of the job's state (Initialized, Running, ReplicaFailure, ...)."""

    type: str = Field(
        description=(
            "Type of the condition: Initialized, Running, ReplicaFailure, Completed, "
            "Failed, Paused, or GPUsIdle (an operator reading a Prometheus: whether the "
            "GPUs of a running job sit idle)."
        )
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str = Field(default="", description="Machine-readable reason of the last change.")
    message: str = Field(default="", description="Human-readable detail of the last change.")
    last_transition_time: str | None = Field(
        default=None,
        description="When status last changed (RFC 3339).",
    )


class ContainerStatus(T9kModel):
    """State of one container of a replica."""

    name: str = Field(description="Name of the container.")
    state: ContainerState = Field(description="Running, Waiting or Terminated.")
    exit_code: int | None = Field(
        default=None,
        description="Exit code of the container, once terminated.",
    )
    reason: str | None = Field(
        default=None,
        description="Why the container is waiting or terminated (e.g. OOMKilled).",
    )


class ReplicaStatus(T9kModel):
    """A replica and the pod that runs it."""

    name: str = Field(description="Name of the replica's pod.")
    uid: str = Field(default="", description="UID of the replica's pod.")
    phase: ReplicaPhase = Field(
        description=(
            "Phase of the replica: a pod phase (Pending, Running, Succeeded, Failed, "
            "Unknown), or Creating / Deleted."
        )
    )
    containers: list[ContainerStatus] = Field(
        default=[],
        description="States of the replica's containers.",
    )


class RestartRecord(T9kModel):
    """One replica the operator recreated: why, where, and whether it counted."""

    time: str = Field(description="When the operator decided to recreate it (RFC 3339).")
    replica: str = Field(description="Name of the pod that ended.")
    exit_code: int | None = Field(
        default=None, description="Exit code of its training container, when it had one."
    )
    reason: str = Field(
        default="",
        description=(
            "Why it ended: kubelet's reason (Error, OOMKilled, ...) or the disruption "
            "(EvictionByEvictionAPI, PreemptionByScheduler, TerminationByKubelet, ...)."
        ),
    )
    node: str = Field(default="", description="The node it ran on.")
    counted: bool = Field(
        description=(
            "Whether it counted against spec.runPolicy.backoffLimit (a failure) or not "
            "(a disruption, counted in disruptionCount)."
        )
    )


class ReplicaNode(T9kModel):
    """The node a replica last ran on."""

    replica: str = Field(description="Name of the replica's pod.")
    node: str = Field(description="The node that pod was placed on.")


class TaskStatus(T9kModel):
    """The replicas of one replica type."""

    type: str = Field(description="The replica type.")
    restart_count: int = Field(
        default=0,
        description="Restarts of the replicas of this type, summed.",
    )
    replicas: list[ReplicaStatus] = Field(
        default=[],
        description="The replicas of this type.",
    )


class Aggregate(T9kModel):
    """Number of replicas in each phase."""

    creating: int = Field(default=0, description="Replicas being created.")
    deleted: int = Field(default=0, description="Replicas deleted.")
    failed: int = Field(default=0, description="Replicas failed.")
    pending: int = Field(default=0, description="Replicas pending.")
    running: int = Field(default=0, description="Replicas running.")
    succeeded: int = Field(default=0, description="Replicas succeeded.")
    unknown: int = Field(default=0, description="Replicas whose phase is unknown.")


class JobStatus(T9kModel):
    """Observed state of a T9k job, written by the operator."""

    observed_generation: int | None = Field(
        default=None,
        description="The metadata.generation of the spec this status describes.",
    )
    phase: JobPhase | None = Field(
        default=None,
        description=(
            "Phase of the job: Pending, Running, Paused, Resuming, Succeeded, Failed or Unknown."
        ),
    )
    conditions: list[Condition] = Field(
        default=[],
        description="Conditions of the job, one per type.",
    )
    tasks: list[TaskStatus] = Field(
        default=[],
        description="Replicas of the job, grouped by replica type.",
    )
    aggregate: Aggregate | None = Field(
        default=None,
        description="Number of replicas in each phase.",
    )
    start_time: str | None = Field(
        default=None,
        description="When the job started (RFC 3339).",
    )
    completion_time: str | None = Field(
        default=None,
        description="When the job finished (RFC 3339).",
    )
    restart_count: int = Field(
        default=0,
        description="Replica recreations so far, counted against spec.runPolicy.backoffLimit.",
    )
    disruption_count: int = Field(
        default=0,
        description=(
            "Replicas recreated after a disruption (evicted, preempted, their node lost), "
            "not counted against spec.runPolicy.backoffLimit; past the operator's "
            "--disruption-limit the job fails."
        ),
    )
    restarts: list[RestartRecord] = Field(
        default=[],
        max_length=10,
        description=(
            "The last 10 replicas the operator recreated, oldest first: when, which, why, "
            "on which node, and whether it counted against backoffLimit. Kept after the job "
            "has finished."
        ),
    )
    nodes: list[ReplicaNode] = Field(
        default=[],
        description=(
            "The node each replica last ran on, by the name of its pod, sorted by replica "
            "type and index; kept when the pod is gone (recreated, deleted by the cleanup policy, "
            "the job paused), so that a finished job still says where it ran."
        ),
    )
    counted_failures: list[str] = Field(
        default=[],
        description=(
            "Operator bookkeeping: UIDs of failed pods already counted in restartCount "
            "or disruptionCount, so that each is counted exactly once."
        ),
    )
    ready_replicas: int = Field(default=0, description="Replicas running and ready.")
    replicas: int = Field(
        default=0,
        description=(
            "Replicas whose pod currently exists (0 while paused), as a Deployment counts; "
            "the scale subresource's current count."
        ),
    )
    selector: str | None = Field(
        default=None,
        description=(
            "Label selector of the job's pods, for the scale subresource "
            "(kubectl autoscale, HorizontalPodAutoscaler)."
        ),
    )
