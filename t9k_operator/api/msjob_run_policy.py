"""``spec.runPolicy`` of an MSJob: Kubeflow's run policy, with gang scheduling.

:class:`MSRunPolicy` has Kubeflow's shape (clean-up, restart limit, deadline,
TTL after the job finishes) plus the operator's extensions (restart scope,
progress); :class:`SchedulingPolicy` is the gang scheduling the MindSpore
operator's --enable-gang-scheduling had. The rest of the kind is in
:mod:`t9k_operator.api.msjob`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.schema import MAX_INT32, MAX_REPLICAS, Quantity
from t9k_operator.api.specs import RestartScope, deadline_field

CleanPodPolicy = Literal["All", "Running", "None"]


class SchedulingPolicy(T9kModel):
    """Kubeflow's scheduling policy: how the job's pods are gang-scheduled."""

    min_available: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description=(
            "How many pods must be placed together before any runs. Unset: every pod of "
            "every role (Scheduler, PS and Workers)."
        ),
    )
    queue: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description=(
            "The Volcano Queue the job waits in (with --gang-scheduler=volcano; coscheduling "
            "has no queues: the job gets a Warning Event)."
        ),
    )
    min_resources: dict[str, Quantity] | None = Field(
        default=None,
        description=(
            "The resources the group needs in all before any of its pods runs (resource "
            "name to quantity), given to the PodGroup. Unset: the gang scheduler counts "
            "the pods' own requests."
        ),
    )
    priority_class: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description=(
            "The PriorityClass of the job's PodGroup and pods: of the waiting jobs of a "
            "queue, the higher priority goes first."
        ),
    )
    schedule_timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=MAX_INT32,
        description=(
            "Fail the job (reason ScheduleTimeout) when its pods have not all been placed "
            "this many seconds after it started. Unset: wait (activeDeadlineSeconds still "
            "applies)."
        ),
    )


class MSRunPolicy(T9kModel):
    """Kubeflow's run policy: clean-up, restart limit and deadline of the job."""

    clean_pod_policy: CleanPodPolicy = Field(
        default="Running",
        description=(
            "Which pods are deleted when the job has finished: All, Running (only pods "
            "still running) or None (keep all, e.g. to read their logs). Defaults to Running."
        ),
    )
    backoff_limit: int = Field(
        default=3,
        ge=0,
        le=MAX_INT32,
        description=(
            "Maximum number of pod restarts, shared by all roles; once reached, a pod that "
            "fails again fails the job. Defaults to 3: the operator recreates failed pods "
            "itself (they run with restartPolicy Never), so without a limit a pod that "
            "always crashes would be recreated forever."
        ),
    )
    active_deadline_seconds: int | None = deadline_field()
    restart_scope: RestartScope | None = Field(
        default=None,
        description=(
            "An extension of Kubeflow's run policy. Replica (the default, as Kubeflow "
            "documents; also when omitted): a replica that is restarted is recreated alone. "
            "Job: any replica restart "
            "recreates every replica of the job, as one attempt counted once against "
            "backoffLimit; for launchers whose ranks cannot re-join a running group one at "
            "a time (plain torch.distributed without torchrun, MindSpore; docs/kinds.md)."
        ),
    )
    progress: ProgressPolicy | None = progress_field("Kubeflow's run policy")
    ttl_seconds_after_finished: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT32,
        description=(
            "Seconds after the job finishes (Succeeded or Failed) when the operator deletes "
            "it, its pods and other children with it, as Kubeflow's controllers do; "
            "unset: the job stays until deleted."
        ),
    )
    scheduling_policy: SchedulingPolicy | None = Field(
        default=None,
        description=(
            "Gang scheduling, as the MindSpore operator's --enable-gang-scheduling had it: "
            "served by the cluster's gang scheduler when the operator runs with "
            "--gang-scheduler (docs/scheduling.md)."
        ),
    )
