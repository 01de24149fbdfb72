"""The parts of a job's spec that the T9k job kinds share.

PyTorchTrainingJob, DeepSpeedJob and ColossalAIJob spell several parts of
their spec the same way, and this module holds them:

* ``spec.runPolicy`` (:class:`RunPolicy`: restart limit, deadline, clean-up)
  and the restart policies of a replica type (:data:`RestartPolicy`);
* ``spec.scheduler`` (:class:`SchedulerPolicy`: gang scheduling in a queue,
  with a priority of at most :data:`MAX_PRIORITY`);
* ``spec.runMode`` (:class:`RunMode`): debug mode (:class:`ReplicaDebugSpec`
  per replica type) and pause mode (:class:`ResumeSpec` per replica type),
  with the rules that keep ``resumeSpecs`` immutable and permanent once set;
* ``spec.elastic``: :class:`~t9k_operator.api.elastic.ElasticConfig`, whose
  module :mod:`t9k_operator.api.elastic` holds it (named here too, for the
  kinds and tests that import it with the other shared parts).

A kind whose wording differs subclasses a model and redeclares its fields
with its own descriptions; the ``*_field`` helpers give the fields every
kind declares alike (MSJob, whose API is the MindSpore operator's, borrows
just :func:`deadline_field`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.checkpoint import CheckpointPolicy, checkpoint_field
from t9k_operator.api.elastic import (
    MSG_ELASTIC_BOUNDS_REQUIRED,
    MSG_ELASTIC_EXPECTED,
    MSG_ELASTIC_MIN_MAX,
    ElasticConfig,
)
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    MAX_ARGS,
    MAX_INT32,
    MAX_REPLICA_SPECS,
    Arg,
    ReplicaType,
)

# spec.elastic lives in t9k_operator.api.elastic; named here too, with the other
# shared parts. (Every name this module defines is public as well.)
__all__ = [
    "MSG_ELASTIC_BOUNDS_REQUIRED",
    "MSG_ELASTIC_EXPECTED",
    "MSG_ELASTIC_MIN_MAX",
    "ElasticConfig",
]

CleanUpPolicy = Literal["None", "All", "Unfinished"]
RestartPolicy = Literal["Never", "OnFailure", "Always", "ExitCode"]
RestartScope = Literal["Replica", "Job"]
"""When the operator recreates a failed replica (ExitCode: only after a retryable exit code)."""


# -- spec.runPolicy, spec.scheduler, spec.runMode ------------------------------------


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
    restart_scope: RestartScope | None = Field(
        default=None,
        description=(
            "An extension of the T9k API. Replica (when omitted too, as T9k documents): "
            "a replica that is restarted is recreated alone. Job: any replica restart "
            "recreates every replica of the job, as one attempt counted once against "
            "backoffLimit; for launchers whose ranks cannot re-join a running group one at "
            "a time (plain torch.distributed without torchrun, MindSpore; docs/kinds.md)."
        ),
    )
    progress: ProgressPolicy | None = progress_field("the T9k API")
    checkpoint: CheckpointPolicy | None = checkpoint_field()


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
        description=(
            "Arguments of the command on resume. Unset: the args of its template. Given "
            "without a command, they replace the template's args (in a PyTorchTrainingJob's "
            "torchrun mode, the script and its arguments after the torchrun line); a "
            "DeepSpeedJob or ColossalAIJob, whose pods run the operator's scripts, needs a "
            "command with them."
        ),
    )


RESUME_SPECS_IMMUTABLE = "spec.runMode.pause.resumeSpecs is immutable once set"
RESUME_SPECS_PERMANENT = (
    "spec.runMode.pause.resumeSpecs cannot be removed once set; "
    "set spec.runMode.pause.enabled to false to resume the job instead"
)
RESUME_SPECS_IMMUTABLE_RULE: Rule[Any] = Rule(
    "!oldSelf.hasValue() || self == oldSelf.value()",
    RESUME_SPECS_IMMUTABLE,
    None,  # a transition rule: only the API server sees the old object
    optional_old_self=True,
)


class PauseMode(T9kModel):
    """Pause mode: the replicas are deleted (or not created) and training stops."""

    enabled: bool = Field(default=False, description="Whether the job is paused.")
    resume_specs: Annotated[list[ResumeSpec], Rules(RESUME_SPECS_IMMUTABLE_RULE)] = Field(
        # A Python-side default only: in the CRD the field stays absent until a
        # user sets it, so "set" (and hence immutable) means what it says.
        default_factory=list,
        max_length=MAX_REPLICA_SPECS,
        description=(
            "How each replica type is restarted when the pause ends. Replica types not "
            "listed restart with their template's command. Immutable once set: decide "
            "it before the job is paused."
        ),
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
# runMode add it to their spec model's rules.
RESUME_SPECS_REMOVAL_RULE: Rule[Any] = Rule(
    "!has(oldSelf.runMode) || !has(oldSelf.runMode.pause) || "
    "!has(oldSelf.runMode.pause.resumeSpecs) || "
    "(has(self.runMode) && has(self.runMode.pause) && has(self.runMode.pause.resumeSpecs))",
    RESUME_SPECS_PERMANENT,
    None,  # a transition rule: only the API server sees the old object
    field_path=".runMode.pause.resumeSpecs",
)


def resume_args_need_command_rule(message: str) -> Rule[RunMode]:
    """The rule, on a kind's ``runMode``, refusing a ``resumeSpecs`` item that gives
    ``args`` without a ``command``: for a kind whose pods run the operator's own
    launch script, which takes no arguments, such args would be dropped."""
    return Rule(
        "!has(self.pause) || !has(self.pause.resumeSpecs) || "
        "self.pause.resumeSpecs.all(r, !has(r.args) || size(r.args) == 0 || "
        "(has(r.command) && size(r.command) > 0))",
        message,
        lambda run_mode: (
            run_mode.pause is None
            or all(r.command or not r.args for r in run_mode.pause.resume_specs)
        ),
        field_path=".pause.resumeSpecs",
    )


def debug_enabled(run_mode: RunMode | None) -> bool:
    """Whether ``run_mode`` turns debug mode on."""
    return run_mode is not None and run_mode.debug is not None and run_mode.debug.enabled


DEBUG_ON_CEL = (
    "has(self.runMode) && has(self.runMode.debug) && has(self.runMode.debug.enabled) "
    "&& self.runMode.debug.enabled"
)
"""CEL, evaluated on a spec: whether spec.runMode.debug.enabled is true."""
