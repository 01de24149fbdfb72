"""The PyTorchTrainingJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

A PyTorchTrainingJob runs replicas of one or more types (``master``,
``worker``, or any other lower-case name); the first training replica is the
PyTorch master (``master-0`` if a ``master`` type exists, else ``worker-0``).
With ``torchrunConfig.enabled`` the training container runs under
``torchrun``, which also makes elastic training (``elastic``) possible.

Each invariant of the spec is a :class:`~t9k_operator.api.rules.Rule`, checked
twice on purpose: by its CEL at admission (the API server refuses a bad
object) and by its Python side on parsing, with the same message (an object
that reaches the operator some other way, e.g. stored before the rule
existed, still fails to parse). A transition rule (it reads oldSelf) is
only checked at admission.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    ELASTIC_SCALE,
    JobObject,
    job_crd,
    pod_name_length_rule,
    replica_specs_pod_names_fit,
    replica_specs_pod_names_fit_cel,
)
from t9k_operator.api.managed_by import ManagedBy, managed_by_field
from t9k_operator.api.replica_specs import (
    DISTINCT_TYPES_RULE,
    TOO_MANY_REPLICAS_RULE,
    at_most_one_rule,
    replica_count_field,
    restart_policy_field,
)
from t9k_operator.api.replica_specs import (
    MSG_DISTINCT_TYPES as MSG_DISTINCT_TYPES,
)
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    MAX_INT32,
    MAX_REPLICA_SPECS,
    ReplicaType,
)
from t9k_operator.api.specs import (
    RESUME_SPECS_REMOVAL_RULE,
    ElasticConfig,
    RestartPolicy,
    RunMode,
    RunPolicy,
    SchedulerPolicy,
    run_policy_field,
    scheduler_field,
)
from t9k_operator.api.template import PodTemplate, pod_template_field
from t9k_operator.api.tensorboard import (
    T9kJobStatus,
    TensorBoardSpec,
    t9k_job_rules,
    tensorboard_spec_field,
)

KIND = "PyTorchTrainingJob"
PLURAL = "pytorchtrainingjobs"
MASTER = "master"
"""The replica type that, if present, holds the PyTorch master (at most one replica)."""

PROC_PER_NODE_PATTERN = r"^([1-9][0-9]*|gpu)$"

RdzvBackend = Literal["c10d", "etcd", "etcd-v2"]

MSG_ONE_MASTER = (
    "spec.replicaSpecs may hold at most one replica of type master in total "
    "(one master entry with replicas <= 1)"
)
MSG_ELASTIC_NEEDS_TORCHRUN = (
    "spec.elastic.enabled requires spec.torchrunConfig.enabled: elastic training runs "
    "under torchrun"
)
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-<replica type>-<index> "
    "must fit in 63 characters (it is also the pod's hostname)"
)


class ReplicaSpec(T9kModel):
    """The replicas of one type: how many, how they restart, and their pod template."""

    type: ReplicaType = Field(
        description=(
            "The replica type (role), a lower-case DNS label. A master type, if present, "
            "holds the PyTorch master; otherwise worker-0 does."
        )
    )
    replicas: int = replica_count_field()
    restart_policy: RestartPolicy = restart_policy_field()
    scaling_weight: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT32,
        description=(
            "Weight of this replica type when the job is scaled. Stored as written but not "
            "acted on (no public T9k text gives it a meaning yet); a job that sets it gets a "
            "Warning Event FieldNotActedOn."
        ),
    )
    template: PodTemplate = pod_template_field("replicas")


class TorchrunConfig(T9kModel):
    """Launch the training container with torchrun."""

    enabled: bool = Field(
        default=False,
        description=(
            "Launch training with torchrun: the training container runs "
            "`torchrun <torchrun args> <container args>` and its command is ignored."
        ),
    )
    max_restarts: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT32,
        description="torchrun --max-restarts: how often torchrun restarts the worker group.",
    )
    proc_per_node: str = Field(
        default="1",
        pattern=PROC_PER_NODE_PATTERN,
        max_length=16,
        description=(
            "torchrun --nproc-per-node: training processes per replica, a positive number "
            "or gpu (one process per GPU of the replica)."
        ),
    )
    rdzv_backend: RdzvBackend = Field(
        default="c10d",
        description=(
            "torchrun --rdzv-backend: c10d (built into torch), etcd or etcd-v2 "
            "(these need an etcd server of your own)."
        ),
    )
    extra_options: list[str] = Field(
        default=[],
        description="Further torchrun options, passed verbatim.",
    )


ONE_MASTER_RULE = at_most_one_rule(MASTER, MSG_ONE_MASTER)
ELASTIC_NEEDS_TORCHRUN_RULE: Rule[PyTorchTrainingJobSpec] = Rule(
    "!has(self.elastic) || !has(self.elastic.enabled) || !self.elastic.enabled || "
    "(has(self.torchrunConfig) && self.torchrunConfig.enabled)",
    MSG_ELASTIC_NEEDS_TORCHRUN,
    lambda spec: not spec.elastic_enabled or spec.torchrun_enabled,
    field_path=".elastic.enabled",
)


class PyTorchTrainingJobSpec(T9kModel):
    """Desired state of a PyTorchTrainingJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        ELASTIC_NEEDS_TORCHRUN_RULE,
        RESUME_SPECS_REMOVAL_RULE,
    )

    replica_specs: Annotated[
        list[ReplicaSpec], Rules(DISTINCT_TYPES_RULE, ONE_MASTER_RULE, TOO_MANY_REPLICAS_RULE)
    ] = Field(
        min_length=1,
        max_length=MAX_REPLICA_SPECS,
        description=(
            "The replica types of the job, each with its count, restart policy and template."
        ),
    )
    torchrun_config: TorchrunConfig | None = Field(
        default=None,
        description="Launch training with torchrun. Unset: plain `python` launch, no torchrun.",
    )
    elastic: ElasticConfig | None = Field(
        default=None,
        description="Elastic training (requires torchrunConfig.enabled).",
    )
    run_policy: RunPolicy = run_policy_field()
    scheduler: SchedulerPolicy | None = scheduler_field()
    managed_by: ManagedBy | None = managed_by_field()
    run_mode: RunMode | None = Field(
        default=None,
        description="Debug or pause mode. Unset: train normally.",
    )
    tensorboard_spec: TensorBoardSpec | None = tensorboard_spec_field()

    @property
    def torchrun_enabled(self) -> bool:
        return self.torchrun_config is not None and self.torchrun_config.enabled

    @property
    def elastic_enabled(self) -> bool:
        return self.elastic is not None and self.elastic.enabled

    def replica_count(self, replica: ReplicaSpec) -> int:
        """Replicas wanted now of one type: elastic training (with torchrun) scales
        every type but the master to expectedReplicas, clamped to [min, max]."""
        if self.elastic is None or not self.torchrun_enabled or replica.type == "master":
            return replica.replicas
        return self.elastic.clamp(replica.replicas)


class PyTorchTrainingJobStatus(T9kJobStatus):
    """Observed state of a PyTorchTrainingJob, written by the operator."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    replica_specs_pod_names_fit_cel(elastic=True), MSG_POD_NAME_LENGTH
)


class PyTorchTrainingJobObject(JobObject[PyTorchTrainingJobSpec, PyTorchTrainingJobStatus]):
    """A PyTorchTrainingJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = t9k_job_rules(POD_NAME_LENGTH_RULE)

    def pod_names_fit(self) -> bool:
        """Whether ``<job>-<type>-<last index>`` fits in a DNS label for every type
        (elastic types counting up to maxReplicas)."""
        elastic = self.spec.elastic
        high = elastic.max_replicas if elastic is not None and elastic.max_replicas else 0
        return replica_specs_pod_names_fit(self.name, self.spec.replica_specs, at_least=high)


CRD = job_crd(
    kind=KIND,
    plural=PLURAL,
    singular="pytorchtrainingjob",
    short_names=("pytj", "ptj"),
    spec_model=PyTorchTrainingJobSpec,
    status_model=PyTorchTrainingJobStatus,
    description=(
        "PyTorchTrainingJob runs distributed PyTorch training: replicas of one or more "
        "types, launched plainly or with torchrun, supervised and restarted by the operator."
    ),
    scale=ELASTIC_SCALE,
    root_rules=PyTorchTrainingJobObject.rules,
)
