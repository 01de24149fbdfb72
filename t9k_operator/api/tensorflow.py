"""The TensorFlowTrainingJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

A TensorFlowTrainingJob runs replicas of TensorFlow's four task types:
``chief``, ``worker``, ``ps`` and ``evaluator``. Each replica is told its
place through ``TF_CONFIG`` (the cluster of chief, worker and ps tasks, and
its own task); the chief (``chief-0``), else ``worker-0``, decides the job's
success.

Each invariant of the spec is a :class:`~t9k_operator.api.rules.Rule`, checked
by its CEL at admission and by its Python side on parsing, with the same
message.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
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
    replicas_of,
    restart_policy_field,
)
from t9k_operator.api.replica_specs import (
    MSG_DISTINCT_TYPES as MSG_DISTINCT_TYPES,
)
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import MAX_REPLICA_SPECS
from t9k_operator.api.specs import (
    RESUME_SPECS_REMOVAL_RULE,
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

KIND = "TensorFlowTrainingJob"
PLURAL = "tensorflowtrainingjobs"
CHIEF = "chief"
WORKER = "worker"
PS = "ps"
EVALUATOR = "evaluator"

TFReplicaType = Literal["chief", "worker", "ps", "evaluator"]

MSG_ONE_CHIEF = (
    "spec.replicaSpecs may hold at most one replica of type chief "
    "(TensorFlow's cluster has one chief task)"
)
MSG_NEEDS_LEADER = (
    "spec.replicaSpecs needs a chief or a worker replica: the chief, else worker 0, "
    "decides the job's success"
)
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-<replica type>-<index> "
    "must fit in 63 characters (it is also the pod's hostname)"
)


class ReplicaSpec(T9kModel):
    """The replicas of one TensorFlow task type: how many, how they restart, and
    their pod template."""

    type: TFReplicaType = Field(
        description=(
            "The TensorFlow task type of these replicas: chief, worker, ps or evaluator. "
            "Chief, worker and ps replicas make TensorFlow's cluster (TF_CONFIG's cluster); "
            "an evaluator is told its own task but is not part of the cluster."
        )
    )
    replicas: int = replica_count_field()
    restart_policy: RestartPolicy = restart_policy_field()
    template: PodTemplate = pod_template_field("replicas")


ONE_CHIEF_RULE = at_most_one_rule(CHIEF, MSG_ONE_CHIEF)
NEEDS_LEADER_RULE: Rule[list[ReplicaSpec]] = Rule(
    "self.exists(r, (r.type == 'chief' || r.type == 'worker') "
    "&& (!has(r.replicas) || r.replicas > 0))",
    MSG_NEEDS_LEADER,
    lambda specs: replicas_of(specs, CHIEF, WORKER) > 0,
)


class TensorFlowTrainingJobSpec(T9kModel):
    """Desired state of a TensorFlowTrainingJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (RESUME_SPECS_REMOVAL_RULE,)

    replica_specs: Annotated[
        list[ReplicaSpec],
        Rules(DISTINCT_TYPES_RULE, ONE_CHIEF_RULE, NEEDS_LEADER_RULE, TOO_MANY_REPLICAS_RULE),
    ] = Field(
        min_length=1,
        max_length=MAX_REPLICA_SPECS,
        description=(
            "The replica types of the job (chief, worker, ps, evaluator), each with its "
            "count, restart policy and template."
        ),
    )
    run_policy: RunPolicy = run_policy_field()
    scheduler: SchedulerPolicy | None = scheduler_field()
    managed_by: ManagedBy | None = managed_by_field()
    run_mode: RunMode | None = Field(
        default=None,
        description="Debug or pause mode. Unset: train normally.",
    )
    tensorboard_spec: TensorBoardSpec | None = tensorboard_spec_field()


class TensorFlowTrainingJobStatus(T9kJobStatus):
    """Observed state of a TensorFlowTrainingJob, written by the operator."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(replica_specs_pod_names_fit_cel(), MSG_POD_NAME_LENGTH)


class TensorFlowTrainingJobObject(
    JobObject[TensorFlowTrainingJobSpec, TensorFlowTrainingJobStatus]
):
    """A TensorFlowTrainingJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = t9k_job_rules(POD_NAME_LENGTH_RULE)

    def pod_names_fit(self) -> bool:
        """Whether ``<job>-<type>-<last index>`` fits in a DNS label for every type."""
        return replica_specs_pod_names_fit(self.name, self.spec.replica_specs)


CRD = job_crd(
    kind=KIND,
    plural=PLURAL,
    singular="tensorflowtrainingjob",
    short_names=("tfj", "tftj"),
    spec_model=TensorFlowTrainingJobSpec,
    status_model=TensorFlowTrainingJobStatus,
    description=(
        "TensorFlowTrainingJob runs distributed TensorFlow training: chief, worker, ps and "
        "evaluator replicas, each given its TF_CONFIG, supervised and restarted by the "
        "operator; the chief, else worker 0, decides the job's success."
    ),
    root_rules=TensorFlowTrainingJobObject.rules,
)
