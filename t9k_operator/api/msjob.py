"""The MSJob kind (mindspore.gitee.com/v1): spec, status, CRD.

MSJob is the kind of MindSpore's own operator (ms-operator), served here so
that its users apply their YAML unchanged: ``spec.msReplicaSpecs`` maps the
roles ``Scheduler``, ``PS`` and ``Worker`` to a replica count, a restart
policy and a pod template whose container ``mindspore`` runs the training;
``spec.runPolicy`` and ``spec.successPolicy`` have Kubeflow's shapes.

As for the T9k kinds, every invariant is a
:class:`~t9k_operator.api.rules.Rule`: its CEL checks it at admission (the API
server refuses a bad object, naming the field), its Python side on parsing,
with the same message. ``msReplicaSpecs`` is a map, not
an object with three properties, so that an unknown role is refused by a CEL
rule instead of being silently pruned.

The run policy (Kubeflow's, with gang scheduling) is in
:mod:`t9k_operator.api.msjob_run_policy` and the status (Kubeflow's shape)
in :mod:`t9k_operator.api.msjob_status`, both named here too; this module
holds the roles, the spec, the object and the CRD.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    CrdInfo,
    JobObject,
    PrinterColumn,
    last_index_cel,
    last_pod_name_fits,
    pod_name_length_rule,
    reason_column,
)
from t9k_operator.api.managed_by import MANAGED_BY_IMMUTABLE_RULE, ManagedBy, managed_by_field
from t9k_operator.api.msjob_run_policy import CleanPodPolicy, MSRunPolicy, SchedulingPolicy
from t9k_operator.api.msjob_status import MSJobCondition, MSJobStatus, ReplicaCounts
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    DNS_LABEL_MAX,
    MAX_REPLICAS,
    MSG_TOO_MANY_REPLICAS,
    cel_strings,
    containers_schema,
    preserved_object_schema,
)
from t9k_operator.api.template import PodTemplate, named_container, pod_template_field

# The run policy and the status live in msjob_run_policy and msjob_status; named
# here too, for the modules that import them from the kind. (Every name this module
# defines is public as well.)
__all__ = [
    "CleanPodPolicy",
    "MSJobCondition",
    "MSJobStatus",
    "MSRunPolicy",
    "ReplicaCounts",
    "SchedulingPolicy",
]

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

MSRestartPolicy = Literal["Never", "OnFailure", "Always", "ExitCode"]
"""Same order as the T9k kinds' RestartPolicy: equal Literals share one cached schema."""
SuccessPolicy = Literal["", "AllWorkers"]

# What the models say (and, for a rule, the API server too).
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


# -- spec.msReplicaSpecs ------------------------------------------------------------------


_CONTAINERS = "self.spec.containers"
MINDSPORE_CONTAINER_RULE: Rule[Mapping[str, Any]] = Rule(
    f"has(self.spec) && has({_CONTAINERS}) && "
    f"{_CONTAINERS}.exists(c, has(c.name) && c.name == '{TRAINING_CONTAINER}')",
    MSG_MINDSPORE_CONTAINER,
    lambda template: mindspore_container(template) is not None,
)

_TEMPLATE_SCHEMA: dict[str, Any] = {
    "properties": {
        "spec": preserved_object_schema(
            "Pod spec of the role's pods, kept as written.",
            {
                "containers": containers_schema(
                    "Containers of the role's pods; one must be named mindspore."
                )
            },
        )
    },
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
    template: Annotated[PodTemplate, Rules(MINDSPORE_CONTAINER_RULE)] = pod_template_field(
        "role",
        _TEMPLATE_SCHEMA,
        more=(
            ". It must have a container named mindspore; its port named msjob-port "
            "(default 2222) is the scheduler port."
        ),
    )

    @property
    def effective_restart_policy(self) -> MSRestartPolicy:
        """restartPolicy, else Never (ms-operator's default)."""
        return self.restart_policy if self.restart_policy is not None else "Never"


ReplicaSpecs = dict[str, MSReplicaSpec]
"""spec.msReplicaSpecs, parsed: role to its replicas."""

UNKNOWN_ROLE_RULE: Rule[ReplicaSpecs] = Rule(
    f"self.all(k, k in {cel_strings(ROLES)})",
    MSG_UNKNOWN_ROLE,
    lambda specs: all(role in ROLES for role in specs),
)
ONE_SCHEDULER_RULE: Rule[ReplicaSpecs] = Rule(
    f"!('{SCHEDULER}' in self) || !has(self.{SCHEDULER}.replicas) || "
    f"self.{SCHEDULER}.replicas <= 1",
    MSG_ONE_SCHEDULER,
    lambda specs: SCHEDULER not in specs or specs[SCHEDULER].replicas <= 1,
    field_path=f".{SCHEDULER}.replicas",
)
TOO_MANY_REPLICAS_RULE: Rule[ReplicaSpecs] = Rule(
    f"self.map(k, has(self[k].replicas) ? self[k].replicas : 1).sum() <= {MAX_REPLICAS}",
    MSG_TOO_MANY_REPLICAS,
    lambda specs: sum(spec.replicas for spec in specs.values()) <= MAX_REPLICAS,
)


# -- the spec -------------------------------------------------------------------------------


class MSJobSpec(T9kModel):
    """Desired state of an MSJob."""

    run_policy: MSRunPolicy = Field(
        default_factory=MSRunPolicy,
        description="Clean-up policy, restart limit and deadline of the job.",
    )
    managed_by: ManagedBy | None = managed_by_field()
    success_policy: SuccessPolicy = Field(
        default="",
        description=(
            "When the job succeeds: empty (the default) when Worker 0 has succeeded, "
            "AllWorkers when every Worker has succeeded."
        ),
    )
    ms_replica_specs: Annotated[
        ReplicaSpecs, Rules(UNKNOWN_ROLE_RULE, ONE_SCHEDULER_RULE, TOO_MANY_REPLICAS_RULE)
    ] = Field(
        min_length=1,
        description=("The pods of each role: keys Scheduler (at most one replica), PS and Worker."),
        json_schema_extra={"maxProperties": len(ROLES)},
    )
    enable_dynamic_worker: bool = Field(
        default=False,
        description=(
            "Whether the job goes on when Workers fail (MindSpore's dynamic cluster, where "
            "workers may leave and join): true, a Worker that fails for good (no restart "
            "left) does not fail the job, which still succeeds by successPolicy and still "
            "fails when the Scheduler or a PS fails for good; false (the default), any "
            "replica that fails for good fails the job."
        ),
    )

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


# -- the object ----------------------------------------------------------------------------------


_SPECS = "self.spec.msReplicaSpecs"
_LAST = last_index_cel(f"{_SPECS}[k].replicas")
POD_NAME_LENGTH_RULE = pod_name_length_rule(
    f"!has(self.spec) || !has({_SPECS}) || {_SPECS}.all(k, !has({_SPECS}[k].replicas) || "
    f"size(self.metadata.name) + size(k) + 2 + size(string({_LAST})) <= {DNS_LABEL_MAX})",
    MSG_POD_NAME_LENGTH,
)


class MSJobObject(JobObject[MSJobSpec, MSJobStatus]):
    """An MSJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        JOB_NAME_RULE,
        POD_NAME_LENGTH_RULE,
        MANAGED_BY_IMMUTABLE_RULE,
    )

    def pod_names_fit(self) -> bool:
        return pod_names_fit(self.name, self.spec)


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
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    ),
    root_rules=MSJobObject.rules,
    # runPolicy.ttlSecondsAfterFinished: a finished job is deleted once it has run out.
    deletes_finished=True,
)
