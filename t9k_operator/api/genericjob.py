"""The GenericJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

A GenericJob runs replicas of any number of types, each from its own pod
template, with no framework of its own: the operator fills in the template's
variables (``$(type)``, ``$(rank)``, ``$(replicas[<type>])``,
``$(service.<type>[<rank>].host)``, ``$(service.port[<name>])``; see
:mod:`t9k_operator.builders.genericjob`), exposes each replica under its own
Service when ``spec.service`` is set, and decides the job's end by its
``successRules`` and ``failureRules``.

The invariants are :class:`~t9k_operator.api.rules.Rule` s, checked at
admission by their CEL and on parsing by their Python side; what CEL cannot
say cheaply (a template variable naming a type, rank or port the job does
not have) the kind reports as a Failed condition naming the field.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.checkpoint import CheckpointPolicy, checkpoint_field
from t9k_operator.api.crd import (
    JobObject,
    job_crd,
    pod_name_length_rule,
    replica_specs_pod_names_fit,
    replica_specs_pod_names_fit_cel,
)
from t9k_operator.api.managed_by import ManagedBy, managed_by_field
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.replica_specs import (
    DISTINCT_TYPES_RULE,
    TOO_MANY_REPLICAS_RULE,
    replica_count_field,
)
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    DNS_LABEL_MAX,
    DNS_LABEL_PATTERN,
    KUBERNETES_SCHEMA,
    MAX_INT32,
    MAX_REPLICA_SPECS,
    MAX_REPLICAS,
    ReplicaType,
)
from t9k_operator.api.specs import (
    RESUME_SPECS_REMOVAL_RULE,
    CleanUpPolicy,
    RestartScope,
    RunMode,
    SchedulerPolicy,
    deadline_field,
    scheduler_field,
)
from t9k_operator.api.template import PodTemplate, pod_template_field
from t9k_operator.api.tensorboard import (
    T9kJobStatus,
    TensorBoardSpec,
    t9k_job_rules,
    tensorboard_spec_field,
)

KIND = "GenericJob"
PLURAL = "genericjobs"

MAX_RULES = 16
"""Items of successRules or failureRules."""
MAX_RULE_RANKS = 128
"""Ranks one type of one finish rule may list."""
MAX_PORTS = 16
"""Ports of spec.service."""

GenericRestartPolicyType = Literal["Never", "OnFailure", "Always"]

MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-<replica type>-<index> "
    "must fit in 63 characters (it is also the name of the replica's Service)"
)
MSG_RULE_REPLICAS = (
    "each replica a rule names must exist: a type of spec.replicaSpecs and a rank "
    "below its replicas"
)
MSG_DISTINCT_PORTS = "each port of spec.service.ports needs a name of its own"


class GenericRestartPolicy(T9kModel):
    """When a replica of this type is recreated, and how often."""

    policy: GenericRestartPolicyType = Field(
        default="OnFailure",
        description=(
            "Never, OnFailure (recreate a replica that failed) or Always (recreate a "
            "replica that ended, failed or not: such a replica never finishes). Pods "
            "themselves run with restartPolicy Never: the operator recreates them."
        ),
    )
    limit: int = Field(
        default=0,
        ge=0,
        le=MAX_INT32,
        description=(
            "Most restarts of the replicas of this type, all of them together (what "
            "status.tasks[].restartCount counts). Defaults to 0: no restart."
        ),
    )


class ReplicaSpec(T9kModel):
    """The replicas of one type: how many, how they restart, and their pod template."""

    type: ReplicaType = Field(
        description=(
            "The replica type, a lower-case DNS label: $(type) in its template, and the "
            "key the finish rules and $(service.<type>[<rank>].host) name it by."
        )
    )
    replicas: int = replica_count_field()
    restart_policy: GenericRestartPolicy = Field(
        default_factory=GenericRestartPolicy,
        description="How replicas of this type restart. Unset: OnFailure with limit 0.",
    )
    template: PodTemplate = pod_template_field(
        "replicas",
        more=(
            "; $(type), $(rank), $(replicas[<type>]), $(service.<type>[<rank>].host) and "
            "$(service.port[<name>]) in its containers' command, args and env values are "
            "replaced by the operator, each replica its own."
        ),
    )


RANK = Annotated[int, Field(ge=0, le=MAX_REPLICAS)]
FinishRule = Annotated[
    dict[str, Annotated[list[RANK], Field(min_length=1, max_length=MAX_RULE_RANKS)]],
    Field(min_length=1, max_length=MAX_REPLICA_SPECS),
]


class ServicePort(T9kModel):
    """One port every replica's Service exposes (a Kubernetes ServicePort)."""

    name: str = Field(
        min_length=1,
        max_length=DNS_LABEL_MAX,
        pattern=DNS_LABEL_PATTERN,
        description="The port's name: $(service.port[<name>]) is its number.",
    )
    port: int = Field(ge=1, le=65535, description="The port number, the replica's own.")
    protocol: Literal["TCP", "UDP", "SCTP"] = Field(default="TCP", description="Its protocol.")
    app_protocol: str | None = Field(
        default=None, max_length=253, description="Its application protocol, as written."
    )
    target_port: Any = Field(
        default=None,
        description=(
            "Stored as written but not acted on: the replicas' Services are headless, so a "
            "client connects to the replica's own port; a job that sets it gets a Warning "
            "Event FieldNotActedOn."
        ),
        json_schema_extra={KUBERNETES_SCHEMA: "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
    )
    node_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description=(
            "Stored as written but not acted on (headless Services have no node port); a "
            "job that sets it gets a Warning Event FieldNotActedOn."
        ),
    )


DISTINCT_PORTS_RULE: Rule[Any] = Rule(
    "!has(self.ports) || self.ports.all(a, self.ports.exists_one(b, b.name == a.name))",
    MSG_DISTINCT_PORTS,
    lambda svc: len({p.name for p in svc.ports}) == len(svc.ports),
    field_path=".ports",
)


class ServiceOption(T9kModel):
    """The Services that expose each replica."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (DISTINCT_PORTS_RULE,)

    ports: list[ServicePort] = Field(
        default=[],
        max_length=MAX_PORTS,
        description="The ports each replica's Service exposes.",
    )


class GenericRunPolicy(T9kModel):
    """The job's deadline, restart scope and progress policy (an extension of the
    T9k API: GenericJob's restart limits are its replica types' own)."""

    active_deadline_seconds: int | None = deadline_field()
    restart_scope: RestartScope | None = Field(
        default=None,
        description=(
            "Replica (when omitted too): a replica that is restarted is recreated alone. "
            "Job: any replica restart recreates every replica of the job, as one attempt."
        ),
    )
    progress: ProgressPolicy | None = progress_field("the T9k API")
    checkpoint: CheckpointPolicy | None = checkpoint_field()


def _rule_cel(field: str) -> str:
    return (
        f"!has(self.{field}) || self.{field}.all(rule, rule.all(t, "
        "self.replicaSpecs.exists(r, r.type == t && "
        "rule[t].all(i, i < (has(r.replicas) ? r.replicas : 1)))))"
    )


def _rules_hold(spec: GenericJobSpec, rules: list[dict[str, list[int]]]) -> bool:
    counts = {rs.type: rs.replicas for rs in spec.replica_specs}
    return all(
        t in counts and all(i < counts[t] for i in ranks)
        for rule in rules
        for t, ranks in rule.items()
    )


SUCCESS_RULES_RULE: Rule[GenericJobSpec] = Rule(
    _rule_cel("successRules"),
    MSG_RULE_REPLICAS,
    lambda spec: _rules_hold(spec, spec.success_rules),
    field_path=".successRules",
)
FAILURE_RULES_RULE: Rule[GenericJobSpec] = Rule(
    _rule_cel("failureRules"),
    MSG_RULE_REPLICAS,
    lambda spec: _rules_hold(spec, spec.failure_rules),
    field_path=".failureRules",
)


class GenericJobSpec(T9kModel):
    """Desired state of a GenericJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        SUCCESS_RULES_RULE,
        FAILURE_RULES_RULE,
        RESUME_SPECS_REMOVAL_RULE,
    )

    success_rules: list[FinishRule] = Field(
        default=[],
        max_length=MAX_RULES,
        description=(
            'Each rule a set of replicas by type, {"worker": [0, 1]}: the job succeeds once '
            "every replica of one rule has succeeded. Unset: once every replica has."
        ),
    )
    failure_rules: list[FinishRule] = Field(
        default=[],
        max_length=MAX_RULES,
        description=(
            "Each rule a set of replicas by type: the job fails once every replica of one "
            "rule has failed for good (no restart left). Unset: once any replica has. A "
            "replica that cannot start, hangs, or is disrupted too often fails the job "
            "whatever the rules say."
        ),
    )
    service: ServiceOption | None = Field(
        default=None,
        description=(
            "Expose each replica under a headless Service of its own, <job>-<type>-<rank>, "
            "with these ports ($(service.<type>[<rank>].host), $(service.port[<name>])). "
            "Unset: no such Service."
        ),
    )
    run_mode: RunMode | None = Field(
        default=None,
        description="Debug or pause mode. Unset: run normally.",
    )
    clean_up_policy: CleanUpPolicy = Field(
        default="None",
        description=(
            "Which replicas are deleted when the job has finished: None (keep all, e.g. to "
            "read their logs), All, or Unfinished (only replicas still running)."
        ),
    )
    scheduler: SchedulerPolicy | None = scheduler_field()
    managed_by: ManagedBy | None = managed_by_field()
    run_policy: GenericRunPolicy = Field(
        default_factory=lambda: GenericRunPolicy(),
        description=(
            "An extension of the T9k API, as the other T9k kinds have it: the job's "
            "deadline, restart scope and progress policy."
        ),
    )
    tensorboard_spec: TensorBoardSpec | None = tensorboard_spec_field()
    replica_specs: Annotated[
        list[ReplicaSpec], Rules(DISTINCT_TYPES_RULE, TOO_MANY_REPLICAS_RULE)
    ] = Field(
        min_length=1,
        max_length=MAX_REPLICA_SPECS,
        description=(
            "The replica types of the job, each with its count, restart policy and template."
        ),
    )


class GenericJobStatus(T9kJobStatus):
    """Observed state of a GenericJob, written by the operator."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(replica_specs_pod_names_fit_cel(), MSG_POD_NAME_LENGTH)


class GenericJobObject(JobObject[GenericJobSpec, GenericJobStatus]):
    """A GenericJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = t9k_job_rules(POD_NAME_LENGTH_RULE)

    def pod_names_fit(self) -> bool:
        return replica_specs_pod_names_fit(self.name, self.spec.replica_specs)


CRD = job_crd(
    kind=KIND,
    plural=PLURAL,
    singular="genericjob",
    short_names=("gj",),
    spec_model=GenericJobSpec,
    status_model=GenericJobStatus,
    description=(
        "GenericJob runs replicas of any number of types from their own pod templates, "
        "with variables for each replica's type, rank and peers' addresses, and ends by "
        "its success and failure rules."
    ),
    root_rules=GenericJobObject.rules,
)
