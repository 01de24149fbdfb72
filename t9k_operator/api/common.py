"""Models shared by the T9k job kinds (PyTorchTrainingJob, DeepSpeedJob, ColossalAIJob).

Every model here is a pydantic v2 model with camelCase aliases, so a raw dict
from the API server parses as is and ``model_dump(by_alias=True)`` gives back
the wire shape. Unknown keys are ignored, never an error: the CRD schema has
already pruned what it does not declare, and an operator that meets a newer
object must not crash on it.

Each field carries a ``description``: ``hack/gen_crds.py`` turns these models
into the CRD's OpenAPI schema, where the descriptions become ``kubectl
explain`` text. Constraints written here (``ge``, ``max_length``, ``Literal``)
become schema constraints enforced by the API server; rules a schema cannot
express as a type travel as CEL rules in ``json_schema_extra`` under
``x-kubernetes-validations``.

Conventions that the generator relies on:

* a node whose ``json_schema_extra`` names a Kubernetes type under
  :data:`KUBERNETES_SCHEMA` (every pod template, via :func:`pod_template_schema`)
  gets that type's full schema of the pinned Kubernetes version; the rest of
  the extra (descriptions, limits, CEL rules) is laid over it;
* any other field typed ``dict[str, Any]`` becomes ``type: object`` with
  ``x-kubernetes-preserve-unknown-fields: true``: kept whole, never pruned;
* ``Field(default=...)`` puts the default into the CRD (the API server fills it
  in); ``Field(default_factory=...)`` is a Python-side default only.

The module also holds :class:`CrdInfo`, the descriptor of one kind's CRD
(names, subresources, printer columns), which each kind module declares and
the generator consumes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Generic, Literal, Self, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

GROUP = "batch.tensorstack.dev"
"""API group of every T9k job kind."""
VERSION = "v1beta1"
"""API version of every T9k job kind."""

# -- limits that keep the CEL cost estimates of the API server bounded -------------

MAX_REPLICAS = 5000
"""At most this many replicas in one job (every count, and their sum). Kubernetes
is tested up to 5,000 nodes, and a distributed job is gang-shaped: more
replicas than the largest cluster has nodes is a typo. It also bounds the
job's status, which lists every replica."""
MSG_TOO_MANY_REPLICAS = (
    f"the job asks for more than {MAX_REPLICAS} replicas in all: Kubernetes clusters have at "
    "most 5,000 nodes, so this is taken for a typo"
)
MAX_PROCS = 1024
"""At most this many processes (GPU slots) per replica: far more than any node has GPUs."""
MAX_INT32 = 2147483647
"""Durations in seconds and limits: the Pod API's own bound for activeDeadlineSeconds."""
MAX_REPLICA_SPECS = 16
"""At most this many entries in a list of per-replica-type settings."""
MAX_ARGS = 64
"""At most this many items in a command or args list of a debug/resume setting."""
MAX_ARG_LENGTH = 8192
"""At most this many characters in one item of such a command or args list."""
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""A lower-case RFC 1123 label: replica types become parts of pod names."""
DNS_LABEL_MAX = 63

Arg = Annotated[str, Field(max_length=MAX_ARG_LENGTH)]
ReplicaType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=DNS_LABEL_MAX,
        pattern=DNS_LABEL_PATTERN,
        description="The replica type (role), a lower-case DNS label such as master or worker.",
    ),
]

CleanUpPolicy = Literal["None", "All", "Unfinished"]
ConditionStatus = Literal["True", "False", "Unknown"]
ContainerState = Literal["Running", "Waiting", "Terminated"]
ReplicaPhase = Literal[
    "Creating", "Pending", "Running", "Succeeded", "Failed", "Unknown", "Deleted"
]
RestartPolicy = Literal["Never", "OnFailure", "Always", "ExitCode"]
"""When the operator recreates a failed replica (ExitCode: only after a retryable exit code)."""
JobPhase = Literal["Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed", "Unknown"]


class T9kModel(BaseModel):
    """Base of every API model: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
    )


# -- pod templates -----------------------------------------------------------------------


def _kind_of(value: Any) -> str:
    names = {dict: "a map", list: "a list", str: "a string", bool: "a boolean", int: "an integer"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def _expect(value: Any, want: type, path: str, what: str) -> None:
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise ValueError(f"{path} must be {what}, not {_kind_of(value)}")


def _string_map(value: Any, path: str) -> None:
    _expect(value, dict, path, "a map of strings")
    for key, item in value.items():
        _expect(item, str, f"{path}.{key}", "a string")


def _container_shape(c: Any, path: str) -> None:
    _expect(c, dict, path, "a map (a container)")
    for key in ("name", "image", "workingDir", "imagePullPolicy"):
        if c.get(key) is not None:
            _expect(c[key], str, f"{path}.{key}", "a string")
    for key in ("command", "args"):
        if c.get(key) is not None:
            _expect(c[key], list, f"{path}.{key}", "a list of strings")
            for i, arg in enumerate(c[key]):
                _expect(arg, str, f"{path}.{key}[{i}]", "a string")
    for key, what in (("env", "name"), ("ports", "containerPort"), ("volumeMounts", "mountPath")):
        if c.get(key) is not None:
            _expect(c[key], list, f"{path}.{key}", "a list")
            for i, item in enumerate(c[key]):
                _expect(item, dict, f"{path}.{key}[{i}]", f"a map (with {what})")
    for i, env in enumerate(c.get("env") or []):
        _expect(env.get("name"), str, f"{path}.env[{i}].name", "a string")
        if env.get("value") is not None:
            _expect(env["value"], str, f"{path}.env[{i}].value", "a string")
    for i, port in enumerate(c.get("ports") or []):
        if port.get("name") is not None:
            _expect(port["name"], str, f"{path}.ports[{i}].name", "a string")
        _expect(port.get("containerPort"), int, f"{path}.ports[{i}].containerPort", "an integer")
    if c.get("resources") is not None:
        _expect(c["resources"], dict, f"{path}.resources", "a map")


def pod_template_shape_error(template: Any, path: str = "template") -> str | None:
    """Where a pod template has a shape the operator cannot build a pod from
    (labels given as a list, a container as a string, ...), naming the field;
    None when it can. The Pod API checks the rest when the pod is created."""
    try:
        _expect(template, dict, path or "template", "a map (a PodTemplateSpec)")
        meta = template.get("metadata")
        if meta is not None:
            _expect(meta, dict, f"{path}.metadata", "a map")
            for key in ("labels", "annotations"):
                if meta.get(key) is not None:
                    _string_map(meta[key], f"{path}.metadata.{key}")
        spec = template.get("spec")
        if spec is not None:
            _expect(spec, dict, f"{path}.spec", "a map (a PodSpec)")
            for key in ("containers", "initContainers", "volumes"):
                if spec.get(key) is not None:
                    _expect(spec[key], list, f"{path}.spec.{key}", "a list")
            for key in ("containers", "initContainers"):
                for i, c in enumerate(spec.get(key) or []):
                    _container_shape(c, f"{path}.spec.{key}[{i}]")
            for i, v in enumerate(spec.get("volumes") or []):
                _expect(v, dict, f"{path}.spec.volumes[{i}]", "a map (a volume)")
    except ValueError as exc:
        return str(exc)
    return None


def check_pod_template(template: dict[str, Any]) -> dict[str, Any]:
    """Pydantic after-validator: raise with :func:`pod_template_shape_error`'s text
    (paths relative to the template, which pydantic's location names)."""
    error = pod_template_shape_error(template, "")
    if error:
        raise ValueError(error.lstrip("."))
    return template


PodTemplate = Annotated[dict[str, Any], AfterValidator(check_pod_template)]
"""A pod template as the operator reads it; give its field
``json_schema_extra=pod_template_schema(...)`` so the CRD validates it."""

KUBERNETES_SCHEMA = "x-t9k-kubernetes"
"""Schema key naming the Kubernetes definition (as the API server's OpenAPI names
it) whose schema ``hack/gen_crds.py`` puts at that node."""
POD_TEMPLATE_SPEC = "io.k8s.api.core.v1.PodTemplateSpec"
ENV_VAR = "io.k8s.api.core.v1.EnvVar"
RESOURCE_REQUIREMENTS = "io.k8s.api.core.v1.ResourceRequirements"


def pod_template_schema(overlay: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``json_schema_extra`` of a pod template field: the Kubernetes PodTemplateSpec,
    with ``overlay`` (a kind's own descriptions, limits and CEL rules) on top."""
    return {KUBERNETES_SCHEMA: POD_TEMPLATE_SPEC, **(overlay or {})}


# -- spec ----------------------------------------------------------------------------


def deadline_field() -> Any:
    """``runPolicy.activeDeadlineSeconds``, the same for every kind."""
    return Field(
        default=None,
        ge=1,
        le=MAX_INT32,
        description=(
            "Maximum duration of the job in seconds, counted from its start; "
            "the job fails when it is exceeded. Unset: no limit."
        ),
    )


def scheduler_field() -> Any:
    """``spec.scheduler`` of a T9k kind: gang scheduling, in a queue, with a priority."""
    return Field(
        default=None,
        description=(
            "Gang scheduling of the job's pods (queue, priority), by the gang scheduler the "
            "operator runs with (--gang-scheduler). Without one the job gets a Warning "
            "Event GangSchedulerUnavailable and its pods are placed one by one by the "
            "default scheduler, or it waits if the operator runs with "
            "--gang-unavailable=hold."
        ),
    )


def run_policy_field() -> Any:
    """``spec.runPolicy`` of a T9k kind whose policy is :class:`RunPolicy`."""
    return Field(
        default_factory=RunPolicy,
        description="Restart limit, deadline and clean-up policy of the job.",
    )


class RunPolicy(T9kModel):
    """How long and how often the job may run, and what is removed when it ends."""

    backoff_limit: int = Field(
        default=3,
        ge=0,
        le=MAX_INT32,
        description=(
            "Maximum number of replica restarts, shared by all replicas of the job. "
            "Once reached, a replica that fails again is not restarted. Defaults to 3."
        ),
    )
    active_deadline_seconds: int | None = deadline_field()
    clean_up_policy: CleanUpPolicy = Field(
        default="None",
        description=(
            "Which replicas are deleted when the job has finished: None (keep all, "
            "e.g. to read their logs), All, or Unfinished (only replicas still running)."
        ),
    )


MAX_PRIORITY = 100
"""A T9k job's priority is 0..MAX_PRIORITY: each level is a PriorityClass
``t9k-priority-<n>`` installed with the operator (docs/scheduling.md)."""


class T9kScheduler(T9kModel):
    """Gang scheduling in a queue, with a priority."""

    queue: str = Field(
        min_length=1,
        max_length=253,
        description=(
            "The queue the job waits in, as a whole (all the pods it needs at once, or "
            "none). With the operator's --gang-scheduler=volcano it is the Volcano Queue of "
            "that name; coscheduling has no queues (the job gets a Warning Event); without a "
            "gang scheduler the job gets a Warning Event and runs with the default "
            "scheduler, or is held, as the operator's --gang-unavailable says."
        ),
    )
    priority: int | None = Field(
        default=None,
        ge=0,
        le=MAX_PRIORITY,
        description=(
            f"Priority of the job among the waiting jobs of its queue, 0 to {MAX_PRIORITY}, "
            "higher first: the PriorityClass t9k-priority-<priority> of its PodGroup and pods "
            "(these classes never preempt running pods). Unset: no priority class."
        ),
    )


class SchedulerPolicy(T9kModel):
    """Which scheduler places the replicas. Unset: the Kubernetes default scheduler."""

    t9k_scheduler: T9kScheduler | None = Field(
        default=None,
        alias="t9kScheduler",  # to_camel would spell it t9KScheduler
        description=(
            "Gang-schedule the job in this queue, with this priority (the seeds' T9k "
            "Scheduler settings, served by the cluster's gang scheduler: docs/scheduling.md)."
        ),
    )


class ReplicaDebugSpec(T9kModel):
    """Debug settings of one replica type."""

    type: ReplicaType = Field(description="The replica type these settings apply to.")
    skip_init_container: bool = Field(
        default=False,
        description="Do not run the replica's init containers in debug mode.",
    )
    command: list[Arg] | None = Field(
        default=None,
        max_length=MAX_ARGS,
        description=(
            "Command the replica runs while it waits to be debugged. "
            "Unset: the kind's default (e.g. sleep inf)."
        ),
    )


class DebugMode(T9kModel):
    """Debug mode: the environment is deployed but training does not start."""

    enabled: bool = Field(default=False, description="Whether debug mode is on.")
    replica_specs: list[ReplicaDebugSpec] = Field(
        default=[],
        max_length=MAX_REPLICA_SPECS,
        description=("Debug settings per replica type. Replica types not listed use the defaults."),
    )


class ResumeSpec(T9kModel):
    """How one replica type is restarted when the job leaves pause mode."""

    type: ReplicaType = Field(description="The replica type these settings apply to.")
    skip_init_container: bool = Field(
        default=False,
        description="Do not run the replica's init containers on resume.",
    )
    command: list[Arg] | None = Field(
        default=None,
        max_length=MAX_ARGS,
        description="Command the replica runs on resume. Unset: the command of its template.",
    )
    args: list[Arg] | None = Field(
        default=None,
        max_length=MAX_ARGS,
        description="Arguments of the command on resume. Unset: the args of its template.",
    )


RESUME_SPECS_IMMUTABLE = "spec.runMode.pause.resumeSpecs is immutable once set"
RESUME_SPECS_PERMANENT = (
    "spec.runMode.pause.resumeSpecs cannot be removed once set; "
    "set spec.runMode.pause.enabled to false to resume the job instead"
)


class PauseMode(T9kModel):
    """Pause mode: the replicas are deleted (or not created) and training stops."""

    enabled: bool = Field(default=False, description="Whether the job is paused.")
    resume_specs: list[ResumeSpec] = Field(
        # A Python-side default only: in the CRD the field stays absent until a
        # user sets it, so "set" (and hence immutable) means what it says.
        default_factory=list,
        max_length=MAX_REPLICA_SPECS,
        description=(
            "How each replica type is restarted when the pause ends. Replica types not "
            "listed restart with their template's command. Immutable once set: decide "
            "it before the job is paused."
        ),
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!oldSelf.hasValue() || self == oldSelf.value()",
                    "optionalOldSelf": True,
                    "message": RESUME_SPECS_IMMUTABLE,
                }
            ]
        },
    )


class RunMode(T9kModel):
    """Special run modes. Unset: the job trains normally."""

    debug: DebugMode | None = Field(
        default=None,
        description="Debug mode: deploy the environment without starting training.",
    )
    pause: PauseMode | None = Field(
        default=None,
        description="Pause mode: delete the replicas and stop training until resumed.",
    )


# The rule that keeps resumeSpecs from being removed sits on the spec (the
# field's own rule does not run when the field disappears). Kinds with a
# runMode add it to their spec model's x-kubernetes-validations.
RESUME_SPECS_REMOVAL_RULE: dict[str, Any] = {
    "rule": (
        "!has(oldSelf.runMode) || !has(oldSelf.runMode.pause) || "
        "!has(oldSelf.runMode.pause.resumeSpecs) || "
        "(has(self.runMode) && has(self.runMode.pause) && has(self.runMode.pause.resumeSpecs))"
    ),
    "message": RESUME_SPECS_PERMANENT,
    "fieldPath": ".runMode.pause.resumeSpecs",
}


def debug_enabled(run_mode: RunMode | None) -> bool:
    """Whether ``run_mode`` turns debug mode on."""
    return run_mode is not None and run_mode.debug is not None and run_mode.debug.enabled


DEBUG_ON_CEL = (
    "has(self.runMode) && has(self.runMode.debug) && has(self.runMode.debug.enabled) "
    "&& self.runMode.debug.enabled"
)
"""CEL, evaluated on a spec: whether spec.runMode.debug.enabled is true."""


# -- spec.elastic ----------------------------------------------------------------------

# Messages shared by the CEL rules and the pydantic validator of ElasticConfig.
MSG_ELASTIC_BOUNDS_REQUIRED = (
    "spec.elastic.minReplicas, spec.elastic.maxReplicas and spec.elastic.expectedReplicas "
    "are required when spec.elastic.enabled is true"
)
MSG_ELASTIC_MIN_MAX = "spec.elastic.minReplicas must not exceed spec.elastic.maxReplicas"
MSG_ELASTIC_EXPECTED = (
    "spec.elastic.expectedReplicas must lie within "
    "[spec.elastic.minReplicas, spec.elastic.maxReplicas]"
)


class ElasticConfig(T9kModel):
    """Elastic training (needs torchrun): the number of replicas may change while training.

    A kind whose wording differs (workers rather than replicas) subclasses it and
    redeclares the fields with its own descriptions; rules and validator stay shared.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": (
                        "!has(self.enabled) || !self.enabled || (has(self.minReplicas) "
                        "&& has(self.maxReplicas) && has(self.expectedReplicas))"
                    ),
                    "message": MSG_ELASTIC_BOUNDS_REQUIRED,
                },
                {
                    "rule": (
                        "!has(self.minReplicas) || !has(self.maxReplicas) "
                        "|| self.minReplicas <= self.maxReplicas"
                    ),
                    "message": MSG_ELASTIC_MIN_MAX,
                    "fieldPath": ".minReplicas",
                },
                {
                    "rule": (
                        "!has(self.expectedReplicas) || "
                        "((!has(self.minReplicas) || self.minReplicas <= self.expectedReplicas)"
                        " && (!has(self.maxReplicas) || self.expectedReplicas <= self.maxReplicas))"
                    ),
                    "message": MSG_ELASTIC_EXPECTED,
                    "fieldPath": ".expectedReplicas",
                },
            ]
        }
    )

    enabled: bool = Field(default=False, description="Whether elastic training is on.")
    min_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="Smallest number of replicas training runs with.",
    )
    max_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="Largest number of replicas training runs with.",
    )
    expected_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description=(
            "Number of replicas wanted now, between minReplicas and maxReplicas; may be "
            "changed while the job runs (also through the scale subresource). The actual "
            "number may be lower when the cluster lacks resources."
        ),
    )

    def clamp(self, count: int) -> int:
        """Replicas wanted now, of a type that has ``count`` without elastic training:
        when on, expectedReplicas (else ``count``) clamped to [minReplicas,
        maxReplicas]. The one place this rule lives; it clamps even bounds
        admission would have refused."""
        if not self.enabled:
            return count
        want = self.expected_replicas or count
        if self.min_replicas is not None:
            want = max(want, self.min_replicas)
        if self.max_replicas is not None:
            want = min(want, self.max_replicas)
        return want

    @model_validator(mode="after")
    def _check_bounds(self) -> Self:
        low, high, want = self.min_replicas, self.max_replicas, self.expected_replicas
        if self.enabled and (low is None or high is None or want is None):
            raise ValueError(MSG_ELASTIC_BOUNDS_REQUIRED)
        if low is not None and high is not None and low > high:
            raise ValueError(MSG_ELASTIC_MIN_MAX)
        if want is not None and (
            (low is not None and want < low) or (high is not None and want > high)
        ):
            raise ValueError(MSG_ELASTIC_EXPECTED)
        return self


# -- pod templates -----------------------------------------------------------------------


def preserved_object_schema(description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """An object schema that declares ``properties`` and keeps every other field."""
    return {
        "type": "object",
        "additionalProperties": True,
        "description": description,
        "properties": properties,
    }


def named_or_first_container(template: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The pod template's container called ``name``, else its first; None without any."""
    containers = (template.get("spec") or {}).get("containers") or []
    for container in containers:
        if isinstance(container, Mapping) and container.get("name") == name:
            return container
    first = containers[0] if containers else None
    return first if isinstance(first, Mapping) else None


# -- status --------------------------------------------------------------------------


class Condition(T9kModel):
    """One aspect of the job's state (Initialized, Running, ReplicaFailure, ...)."""

    type: str = Field(
        description=(
            "Type of the condition: Initialized, Running, ReplicaFailure, Completed, "
            "Failed or Paused."
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


class WorkloadStatus(T9kModel):
    """The job's Kueue Workload, as the operator last saw it."""

    name: str = Field(description="Name of the Workload (as the job's PodGroup's).")
    queue: str = Field(description="The LocalQueue the job waits in.")
    admitted: bool = Field(description="Whether Kueue has admitted the Workload.")
    cluster_queue: str | None = Field(
        default=None, description="The ClusterQueue that admitted it."
    )
    message: str | None = Field(
        default=None, description="Why Kueue does not admit it (Kueue's own words)."
    )


class PodGroupStatus(T9kModel):
    """The job's PodGroup, as the operator last saw it."""

    name: str = Field(
        description="Name of the PodGroup: the job's name and the first 8 characters of its uid."
    )
    scheduler: str = Field(description="The gang scheduler: volcano or coscheduling.")
    min_member: int = Field(description="Pods the scheduler places together, or none.")
    queue: str | None = Field(default=None, description="The queue the job waits in.")
    phase: str | None = Field(
        default=None,
        description=(
            "The PodGroup's phase as its scheduler reports it (Volcano: Pending, Inqueue, "
            "Running; scheduler-plugins: Pending, Scheduling, Scheduled, Running)."
        ),
    )
    message: str | None = Field(
        default=None, description="Why the group waits, from its conditions."
    )


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
    counted_failures: list[str] = Field(
        default=[],
        description=(
            "Operator bookkeeping: UIDs of failed pods already counted in restartCount, "
            "so that a restart is counted exactly once."
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
    pod_group: PodGroupStatus | None = Field(
        default=None,
        description=(
            "The job's PodGroup, when the operator runs with a gang scheduler "
            "(--gang-scheduler): its queue, phase and why it waits."
        ),
    )
    workload: WorkloadStatus | None = Field(
        default=None,
        description=(
            "The job's Kueue Workload, when the operator runs with --kueue and the job "
            "names a queue: its LocalQueue, whether Kueue admitted it, and why not."
        ),
    )


# -- the object -------------------------------------------------------------------------

SpecT = TypeVar("SpecT", bound=BaseModel)
StatusT = TypeVar("StatusT", bound=BaseModel)


class JobObject(T9kModel, Generic[SpecT, StatusT]):
    """A whole custom object: apiVersion, kind, metadata, spec and status."""

    api_version: str = Field(description="API version of the object.")
    kind: str = Field(description="Kind of the object.")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Standard object metadata, kept as sent by the API server.",
    )
    spec: SpecT = Field(description="Desired state of the job.")
    status: StatusT | None = Field(default=None, description="Observed state of the job.")

    name_too_long: ClassVar[str] = ""
    """The kind's message when its pods' names would not fit (its pod-name-length rule)."""

    def pod_names_fit(self) -> bool:
        """Whether every pod name the job may get fits in a DNS label; the Python
        side of the kind's pod-name-length CEL rule."""
        return True

    @model_validator(mode="after")
    def _check_name(self) -> Self:
        check_job_name(self.name, self.pod_names_fit, self.name_too_long)
        return self

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Self:
        """Parse a raw object as read from the API server (camelCase keys).

        Raises ``pydantic.ValidationError`` when the object does not fit the model.
        """
        return cls.model_validate(obj)

    def to_dict(self) -> dict[str, Any]:
        """The wire shape (camelCase keys, unset optional fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def generation(self) -> int:
        return int(self.metadata.get("generation", 0))


# -- CRD descriptors ----------------------------------------------------------------------


@dataclass(frozen=True)
class PrinterColumn:
    """One column of ``kubectl get`` (an additionalPrinterColumns entry)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0


@dataclass(frozen=True)
class ScaleSubresource:
    """Where the scale subresource reads and writes the replica count."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


REASON_DESCRIPTION = (
    "Why the job runs or not: WaitingForAdmission (Kueue), WaitingForGangScheduler, "
    "Unschedulable, Paused, EvictedByKueue, or how it ended."
)


def reason_column(conditions: str) -> PrinterColumn:
    """The reason of the engine's Running condition, kept in ``.status.<conditions>``."""
    path = f'.status.{conditions}[?(@.type=="Running")].reason'
    return PrinterColumn("Reason", "string", path, REASON_DESCRIPTION)


STANDARD_PRINTER_COLUMNS: tuple[PrinterColumn, ...] = (
    PrinterColumn("Phase", "string", ".status.phase", "Phase of the job."),
    reason_column("conditions"),
    PrinterColumn("Ready", "integer", ".status.readyReplicas", "Replicas running and ready."),
    PrinterColumn("Replicas", "integer", ".status.replicas", "Replicas that currently exist."),
    PrinterColumn("Restarts", "integer", ".status.restartCount", "Replica restarts so far."),
    PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
)


@dataclass(frozen=True)
class CrdInfo:
    """Everything the CRD generator needs to know about one kind."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    spec_model: type[BaseModel]
    status_model: type[BaseModel]
    description: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    namespaced: bool = True
    scale: ScaleSubresource | None = None
    printer_columns: tuple[PrinterColumn, ...] = STANDARD_PRINTER_COLUMNS
    root_validations: tuple[Mapping[str, Any], ...] = field(default=())
    """CEL rules on the whole object (they may read metadata.name)."""

    @property
    def name(self) -> str:
        """The CRD's metadata.name: ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


def job_crd(
    *,
    kind: str,
    plural: str,
    singular: str,
    short_names: tuple[str, ...],
    spec_model: type[BaseModel],
    status_model: type[BaseModel],
    description: str,
    root_validations: tuple[Mapping[str, Any], ...],
    scale: ScaleSubresource | None = None,
) -> CrdInfo:
    """The :class:`CrdInfo` of a T9k job kind: group, version and category filled in."""
    return CrdInfo(
        group=GROUP,
        version=VERSION,
        kind=kind,
        plural=plural,
        singular=singular,
        short_names=short_names,
        categories=("t9k",),
        spec_model=spec_model,
        status_model=status_model,
        description=description,
        scale=scale,
        root_validations=root_validations,
    )


ELASTIC_SCALE = ScaleSubresource(
    spec_replicas_path=".spec.elastic.expectedReplicas",
    status_replicas_path=".status.replicas",
    label_selector_path=".status.selector",
)
"""The scale subresource of a kind with spec.elastic: it moves expectedReplicas."""


# -- job and pod names ---------------------------------------------------------------------

JOB_NAME_RULE: dict[str, Any] = {
    "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    "message": (
        "metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', "
        "starting with a letter): it also names the job's headless Service"
    ),
    "fieldPath": ".metadata.name",
}
"""A root CEL rule for kinds whose name also names a Service."""

MSG_JOB_NAME = str(JOB_NAME_RULE["message"])
DNS_1035_PATTERN = r"[a-z]([-a-z0-9]*[a-z0-9])?"


def matches_dns_1035(name: str) -> bool:
    """Whether ``name`` is a DNS-1035 label (the shape :data:`JOB_NAME_RULE` demands)."""
    return re.fullmatch(DNS_1035_PATTERN, name) is not None


def check_job_name(name: str, pod_names_fit: Callable[[], bool], too_long: str) -> None:
    """The Python side of :data:`JOB_NAME_RULE` and a kind's pod-name-length rule.

    Raises ``ValueError`` (:data:`MSG_JOB_NAME`, else ``too_long``) for a bad name;
    an empty name (not named yet, generateName) is left to the API server.
    """
    if not name:
        return
    if not matches_dns_1035(name):
        raise ValueError(MSG_JOB_NAME)
    if not pod_names_fit():
        raise ValueError(too_long)


def last_index_cel(replicas: str, *, elastic: bool = False) -> str:
    """CEL: the highest pod index given ``replicas`` (a CEL expression); with
    ``elastic``, spec.elastic.maxReplicas counts when larger."""
    plain = f"({replicas} > 0 ? {replicas} - 1 : 0)"
    if not elastic:
        return plain
    return (
        "(has(self.spec.elastic) && has(self.spec.elastic.maxReplicas) "
        f"&& self.spec.elastic.maxReplicas > {replicas} ? self.spec.elastic.maxReplicas - 1 : "
        f"{plain})"
    )


def pod_name_fits_cel(middle_size: str, last_index: str, *, extra: int = 0) -> str:
    """CEL on the object: whether ``<metadata.name><middle><last index>`` fits in a DNS
    label; ``middle_size`` is a CEL size expression, ``extra`` further characters."""
    plus = f" + {extra}" if extra else ""
    return (
        f"size(self.metadata.name) + {middle_size} + size(string({last_index})){plus} "
        f"<= {DNS_LABEL_MAX}"
    )


def pod_name_length_rule(rule: str, message: str) -> dict[str, Any]:
    """A root CEL rule on the length of metadata.name (errors name .metadata.name)."""
    return {"rule": rule, "message": message, "fieldPath": ".metadata.name"}
