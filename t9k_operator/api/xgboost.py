"""The XGBoostTrainingJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

An XGBoostTrainingJob runs one ``master`` replica and any number of
``worker`` replicas of distributed XGBoost. The master runs the tracker
(XGBoost's ``RabitTracker``) beside its own training process and decides the
job's outcome; every replica joins XGBoost's collective through the tracker
the environment names (builders/xgboost.py).

As for the other kinds, each invariant is a :class:`~t9k_operator.api.rules.Rule`:
its CEL refuses a bad object at admission and its Python side, with the same
message, refuses it on parsing. A spec without a master is admitted (the
manual's fragments show worker-only specs) and fails when the operator reads
it: the job cannot train without its tracker.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    JobObject,
    job_crd,
    last_index_cel,
    last_pod_name_fits,
    pod_name_fits_cel,
    pod_name_length_rule,
)
from t9k_operator.api.managed_by import MANAGED_BY_IMMUTABLE_RULE, ManagedBy, managed_by_field
from t9k_operator.api.replica_specs import (
    DISTINCT_TYPES_RULE,
    TOO_MANY_REPLICAS_RULE,
    at_most_one_rule,
    replica_count_field,
    replicas_of,
    restart_policy_field,
)
from t9k_operator.api.replica_specs import (
    MSG_DISTINCT_TYPES as MSG_DISTINCT_TYPES,
)
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.specs import (
    RESUME_SPECS_REMOVAL_RULE,
    RestartPolicy,
    RunMode,
    RunPolicy,
    SchedulerPolicy,
    run_policy_field,
    scheduler_field,
)
from t9k_operator.api.status import JobStatus
from t9k_operator.api.template import PodTemplate, pod_template_field

KIND = "XGBoostTrainingJob"
PLURAL = "xgboosttrainingjobs"
MASTER = "master"
WORKER = "worker"

XGBoostReplicaType = Literal["master", "worker"]

MSG_ONE_MASTER = (
    "spec.replicaSpecs may hold at most one replica of type master in total "
    "(it runs the XGBoost tracker)"
)
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-<replica type>-<index> "
    "must fit in 63 characters (it is also the pod's hostname)"
)


class ReplicaSpec(T9kModel):
    """The replicas of one type: how many, how they restart, and their pod template."""

    type: XGBoostReplicaType = Field(
        description=(
            "The replica type: master (one replica: it runs the XGBoost tracker and decides "
            "the job's outcome) or worker."
        )
    )
    replicas: int = replica_count_field()
    restart_policy: RestartPolicy = restart_policy_field()
    template: PodTemplate = pod_template_field("replicas")


ONE_MASTER_RULE = at_most_one_rule(MASTER, MSG_ONE_MASTER)


class XGBoostTrainingJobSpec(T9kModel):
    """Desired state of an XGBoostTrainingJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (RESUME_SPECS_REMOVAL_RULE,)

    replica_specs: Annotated[
        list[ReplicaSpec], Rules(DISTINCT_TYPES_RULE, ONE_MASTER_RULE, TOO_MANY_REPLICAS_RULE)
    ] = Field(
        min_length=1,
        max_length=2,
        description=(
            "The XGBoost replicas: a master (required to train: it runs the tracker) and "
            "workers, each with its count, restart policy and template. A template's "
            "container named xgboost is the training container (else the first)."
        ),
    )
    run_mode: RunMode | None = Field(
        default=None,
        description="Debug or pause mode. Unset: train as soon as the job is submitted.",
    )
    run_policy: RunPolicy = run_policy_field()
    scheduler: SchedulerPolicy | None = scheduler_field()
    managed_by: ManagedBy | None = managed_by_field()

    def replicas_of(self, replica_type: str) -> int:
        """Replicas of one type (0 when the type has no spec)."""
        return replicas_of(self.replica_specs, replica_type)


class XGBoostTrainingJobStatus(JobStatus):
    """Observed state of an XGBoostTrainingJob, written by the operator."""

    backoff_count: int | None = Field(
        default=None,
        description="The number of restarts performed so far: restartCount under the T9k name.",
    )


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    "self.spec.replicaSpecs.all(r, "
    + pod_name_fits_cel(
        "size(r.type)", last_index_cel("(has(r.replicas) ? r.replicas : 1)"), extra=2
    )
    + ")",
    MSG_POD_NAME_LENGTH,
)


class XGBoostTrainingJobObject(JobObject[XGBoostTrainingJobSpec, XGBoostTrainingJobStatus]):
    """An XGBoostTrainingJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        JOB_NAME_RULE,
        POD_NAME_LENGTH_RULE,
        MANAGED_BY_IMMUTABLE_RULE,
    )

    def pod_names_fit(self) -> bool:
        """Whether ``<job>-<type>-<last index>`` fits in a DNS label for every type."""
        return all(
            last_pod_name_fits(self.name, rs.type, rs.replicas) for rs in self.spec.replica_specs
        )


CRD = job_crd(
    kind=KIND,
    plural=PLURAL,
    singular="xgboosttrainingjob",
    short_names=("xgbtj", "xgbj"),
    spec_model=XGBoostTrainingJobSpec,
    status_model=XGBoostTrainingJobStatus,
    description=(
        "XGBoostTrainingJob runs distributed XGBoost training: a master, which runs the "
        "tracker and whose success is the job's, and workers, supervised and restarted by "
        "the operator."
    ),
    root_rules=XGBoostTrainingJobObject.rules,
)
