"""The MSJob kind (mindspore.gitee.com/v1): spec, status, CRD.

MSJob is the kind of MindSpore's own operator (ms-operator), served here so
that its users apply their YAML unchanged: ``spec.msReplicaSpecs`` maps the
roles ``Scheduler``, ``PS`` and ``Worker`` to a replica count, a restart
policy and a pod template whose container ``mindspore`` runs the training;
``spec.runPolicy`` and ``spec.successPolicy`` have Kubeflow's shapes.

As for the T9k kinds, every invariant is written twice: as schema rules (the
API server refuses a bad object at admission, naming the field) and as
pydantic validators with the same messages. ``msReplicaSpecs`` is a map, not
an object with three properties, so that an unknown role is refused by a CEL
rule instead of being silently pruned.

The status has the Kubeflow shape MSJob tooling reads (``conditions`` with
``lastUpdateTime``, ``replicaStatuses``, ``startTime``, ``completionTime``,
``lastReconcileTime``) plus the bookkeeping fields the operator's engine
writes for every kind (``phase``, ``observedGeneration``, ``restartCount``,
``countedFailures``, ``tasks``, ``aggregate``, ``replicas``,
``readyReplicas``), all declared so that nothing is pruned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    PROGRESS_PRINTER_COLUMNS,
    CrdInfo,
    JobObject,
    PrinterColumn,
    last_index_cel,
    last_pod_name_fits,
    pod_name_length_rule,
    reason_column,
)
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.schema import (
    DNS_LABEL_MAX,
    MAX_INT32,
    MAX_REPLICAS,
    MSG_TOO_MANY_REPLICAS,
    Quantity,
    cel_strings,
    preserved_object_schema,
)
from t9k_operator.api.specs import RestartScope, deadline_field
from t9k_operator.api.status import Condition, JobStatus
from t9k_operator.api.template import PodTemplate, named_container, pod_template_field

GROUP = "mindspore.gitee.com"
VERSION = "v1"
KIND = "MSJob"
PLURAL = "msjobs"

SCHEDULER = "Scheduler"
PS = "PS"
WORKER = "Worker"
ROLES: tuple[str, ...] = (SCHEDULER, PS, WORKER)
"""The roles of spec.msReplicaSpecs; pods are named ``<job>-<role lower-cased>-<i>``."""
TRAINING_CONTAINER = "mindspore"
"""Every role's pod template must have a container of this name."""
PORT_NAME = "msjob-port"
DEFAULT_PORT = 2222
"""The scheduler port: the mindspore container's port named msjob-port, else this."""
MAX_CONTAINERS = 64
"""At most this many containers in a pod template (bounds the CEL cost)."""

MSRestartPolicy = Literal["Never", "OnFailure", "Always", "ExitCode"]
"""Same order as the T9k kinds' RestartPolicy: equal Literals share one cached schema."""
CleanPodPolicy = Literal["All", "Running", "None"]
SuccessPolicy = Literal["", "AllWorkers"]

# Messages shared by the schema rules and the pydantic validators.
MSG_UNKNOWN_ROLE = "spec.msReplicaSpecs keys must be Scheduler, PS or Worker"
MSG_ONE_SCHEDULER = "spec.msReplicaSpecs.Scheduler.replicas must be 0 or 1"
MSG_MINDSPORE_CONTAINER = (
    "spec.msReplicaSpecs[*].template.spec.containers must include a container "
    "named mindspore (the training container of every role)"
)
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-<role>-<index> (e.g. "
    "<name>-worker-<replicas-1>, <name>-scheduler-0) must fit in 63 characters "
    "(it is also the pod's hostname)"
)


# -- spec.runPolicy ---------------------------------------------------------------------


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


# -- spec.msReplicaSpecs ------------------------------------------------------------------


_CONTAINERS = "self.spec.containers"
MINDSPORE_CONTAINER_RULE: dict[str, Any] = {
    "rule": (
        f"has(self.spec) && has({_CONTAINERS}) && "
        f"{_CONTAINERS}.exists(c, has(c.name) && c.name == '{TRAINING_CONTAINER}')"
    ),
    "message": MSG_MINDSPORE_CONTAINER,
}

_TEMPLATE_SCHEMA: dict[str, Any] = {
    "properties": {
        "spec": preserved_object_schema(
            "Pod spec of the role's pods, kept as written.",
            {
                "containers": {
                    "type": "array",
                    "maxItems": MAX_CONTAINERS,
                    "description": ("Containers of the role's pods; one must be named mindspore."),
                    "items": preserved_object_schema(
                        "A container, kept as written.",
                        {
                            "name": {
                                "type": "string",
                                "maxLength": DNS_LABEL_MAX,
                                "description": "Name of the container.",
                            }
                        },
                    ),
                }
            },
        )
    },
    "x-kubernetes-validations": [MINDSPORE_CONTAINER_RULE],
}


def mindspore_container(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The template's container named mindspore; None without one."""
    return named_container(template, TRAINING_CONTAINER)


def scheduler_port(template: Mapping[str, Any]) -> int:
    """The mindspore container's port named msjob-port, else 2222."""
    container = mindspore_container(template) or {}
    for port in container.get("ports") or []:
        if isinstance(port, Mapping) and port.get("name") == PORT_NAME:
            value = port.get("containerPort")
            if isinstance(value, int):
                return value
    return DEFAULT_PORT


class MSReplicaSpec(T9kModel):
    """The pods of one role: how many, how they restart, and their pod template."""

    replicas: int = Field(
        default=1,
        ge=0,
        le=MAX_REPLICAS,
        description="Number of pods of this role (at most 1 for Scheduler). Defaults to 1.",
    )
    restart_policy: MSRestartPolicy | None = Field(
        default=None,
        description=(
            "When the operator recreates a failed pod (pods themselves always run with "
            "restartPolicy Never): Never, OnFailure, Always, or ExitCode (only after exit "
            "codes 130, 137, 138 and 143). Unset: Never."
        ),
    )
    template: PodTemplate = pod_template_field(
        "role",
        _TEMPLATE_SCHEMA,
        more=(
            ". It must have a container named mindspore; its port named msjob-port "
            "(default 2222) is the scheduler port."
        ),
    )

    @field_validator("template")
    @classmethod
    def _check_container(cls, template: dict[str, Any]) -> dict[str, Any]:
        if mindspore_container(template) is None:
            raise ValueError(MSG_MINDSPORE_CONTAINER)
        return template

    @property
    def effective_restart_policy(self) -> MSRestartPolicy:
        """restartPolicy, else Never (ms-operator's default)."""
        return self.restart_policy if self.restart_policy is not None else "Never"


UNKNOWN_ROLE_RULE: dict[str, Any] = {
    "rule": f"self.all(k, k in {cel_strings(ROLES)})",
    "message": MSG_UNKNOWN_ROLE,
}
ONE_SCHEDULER_RULE: dict[str, Any] = {
    "rule": (
        f"!('{SCHEDULER}' in self) || !has(self.{SCHEDULER}.replicas) || "
        f"self.{SCHEDULER}.replicas <= 1"
    ),
    "message": MSG_ONE_SCHEDULER,
    "fieldPath": f".{SCHEDULER}.replicas",
}


# -- the spec -------------------------------------------------------------------------------


class MSJobSpec(T9kModel):
    """Desired state of an MSJob."""

    run_policy: MSRunPolicy = Field(
        default_factory=MSRunPolicy,
        description="Clean-up policy, restart limit and deadline of the job.",
    )
    success_policy: SuccessPolicy = Field(
        default="",
        description=(
            "When the job succeeds: empty (the default) when Worker 0 has succeeded, "
            "AllWorkers when every Worker has succeeded."
        ),
    )
    ms_replica_specs: dict[str, MSReplicaSpec] = Field(
        min_length=1,
        description=("The pods of each role: keys Scheduler (at most one replica), PS and Worker."),
        json_schema_extra={
            "maxProperties": len(ROLES),
            "x-kubernetes-validations": [
                UNKNOWN_ROLE_RULE,
                ONE_SCHEDULER_RULE,
                {
                    "rule": (
                        "self.map(k, has(self[k].replicas) ? self[k].replicas : 1).sum()"
                        f" <= {MAX_REPLICAS}"
                    ),
                    "message": MSG_TOO_MANY_REPLICAS,
                },
            ],
        },
    )

    @field_validator("ms_replica_specs")
    @classmethod
    def _check_roles(cls, specs: dict[str, MSReplicaSpec]) -> dict[str, MSReplicaSpec]:
        if any(role not in ROLES for role in specs):
            raise ValueError(MSG_UNKNOWN_ROLE)
        scheduler = specs.get(SCHEDULER)
        if scheduler is not None and scheduler.replicas > 1:
            raise ValueError(MSG_ONE_SCHEDULER)
        if sum(spec.replicas for spec in specs.values()) > MAX_REPLICAS:
            raise ValueError(MSG_TOO_MANY_REPLICAS)
        return specs

    def replicas(self, role: str) -> int:
        """Replicas of ``role`` (0 when the role is absent)."""
        spec = self.ms_replica_specs.get(role)
        return spec.replicas if spec is not None else 0

    @property
    def worker_num(self) -> int:
        """MS_WORKER_NUM: the Worker replicas."""
        return self.replicas(WORKER)

    @property
    def server_num(self) -> int:
        """MS_SERVER_NUM: the PS replicas."""
        return self.replicas(PS)


def pod_name(job_name: str, role: str, index: int) -> str:
    """``<job>-<role lower-cased>-<index>``."""
    return f"{job_name}-{role.lower()}-{index}"


def pod_names_fit(job_name: str, spec: MSJobSpec) -> bool:
    """Whether the last pod name of every role fits in a DNS label (63 characters)."""
    return all(
        last_pod_name_fits(job_name, role.lower(), replica.replicas)
        for role, replica in spec.ms_replica_specs.items()
    )


# -- status ------------------------------------------------------------------------------------


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


# -- the object ----------------------------------------------------------------------------------


class MSJobObject(JobObject[MSJobSpec, MSJobStatus]):
    """An MSJob as stored by the API server."""

    name_too_long: ClassVar[str] = MSG_POD_NAME_LENGTH

    def pod_names_fit(self) -> bool:
        return pod_names_fit(self.name, self.spec)


_SPECS = "self.spec.msReplicaSpecs"
_LAST = last_index_cel(f"{_SPECS}[k].replicas")
POD_NAME_LENGTH_RULE = pod_name_length_rule(
    f"!has(self.spec) || !has({_SPECS}) || {_SPECS}.all(k, !has({_SPECS}[k].replicas) || "
    f"size(self.metadata.name) + size(k) + 2 + size(string({_LAST})) <= {DNS_LABEL_MAX})",
    MSG_POD_NAME_LENGTH,
)

CRD = CrdInfo(
    group=GROUP,
    version=VERSION,
    kind=KIND,
    plural=PLURAL,
    singular="msjob",
    short_names=("msj",),
    # "t9k": `kubectl get t9k` lists every job kind this operator serves;
    # "mindspore", ms-operator's own, stays for those who list by it.
    categories=("mindspore", "t9k"),
    spec_model=MSJobSpec,
    status_model=MSJobStatus,
    description=(
        "MSJob runs distributed MindSpore training (ms-operator compatible): a Scheduler, "
        "parameter servers (PS) and Workers, each a pod with a container named mindspore."
    ),
    printer_columns=(
        PrinterColumn("State", "string", ".status.phase", "Phase of the job."),
        reason_column("t9kConditions"),
        *PROGRESS_PRINTER_COLUMNS,
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    root_validations=(JOB_NAME_RULE, POD_NAME_LENGTH_RULE),
)
