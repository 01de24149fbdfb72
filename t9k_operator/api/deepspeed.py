"""The DeepSpeedJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

A DeepSpeedJob runs ``spec.worker.replicas`` identical workers; every worker
runs sshd, and the first one (``worker-0``) also runs the ``deepspeed``
launcher, which reaches the others over ssh through the job's hostfile.
``spec.config`` says what the launcher runs (``run.python``, ``run.module`` or
``run.exec``) and with which launcher options; its models are in
:mod:`t9k_operator.api.deepspeed_config`. The workers (``spec.worker``) are in
:mod:`t9k_operator.api.deepspeed_worker` (named here too). This module holds
the rest of the spec (elastic training, run modes), the status, the object
and the CRD.

As for PyTorchTrainingJob, each invariant is a
:class:`~t9k_operator.api.rules.Rule`: its CEL checks it at admission, its
Python side on parsing (an object that reaches the operator some other way
still fails to parse with a message naming the field), with the same message.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from t9k_operator.api import specs
from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    ELASTIC_SCALE,
    JobObject,
    job_crd,
    last_pod_name_fits,
    pod_name_length_rule,
    worker_pod_name_fits_cel,
)
from t9k_operator.api.deepspeed_config import DEFAULT_SLOTS, DeepSpeedConfig, RunKind
from t9k_operator.api.deepspeed_worker import (
    MAX_VOLUME_MOUNTS,
    MSG_RESERVED_MOUNTS,
    MSG_TEMPLATE_RESTART_POLICY,
    RESERVED_MOUNT_PATHS,
    TRAINING_CONTAINER,
    WORKER,
    WorkerSpec,
    is_reserved_mount_path,
    training_container,
)
from t9k_operator.api.managed_by import ManagedBy, managed_by_field
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import MAX_CONTAINERS, MAX_REPLICAS
from t9k_operator.api.specs import (
    DEBUG_ON_CEL,
    RESUME_SPECS_REMOVAL_RULE,
    DebugMode,
    RunMode,
    RunPolicy,
    SchedulerPolicy,
    run_policy_field,
    scheduler_field,
)
from t9k_operator.api.tensorboard import (
    T9kJobStatus,
    TensorBoardSpec,
    t9k_job_rules,
    tensorboard_spec_field,
)

# The workers live in deepspeed_worker; named here too, for the modules that
# import them from the kind. (Every name this module defines is public as well.)
__all__ = [
    "MAX_CONTAINERS",
    "MAX_VOLUME_MOUNTS",
    "MSG_RESERVED_MOUNTS",
    "MSG_TEMPLATE_RESTART_POLICY",
    "RESERVED_MOUNT_PATHS",
    "TRAINING_CONTAINER",
    "WORKER",
    "WorkerSpec",
    "is_reserved_mount_path",
    "training_container",
]

KIND = "DeepSpeedJob"
PLURAL = "deepspeedjobs"
MSG_RUN_REQUIRED = (
    "spec.config.run needs what to train: one of python, module or exec, not empty "
    "(e.g. run: {python: [train.py]}), unless spec.config.customCommand gives the launch "
    "command; only a debug job (spec.runMode.debug.enabled: true) may leave both out"
)
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-worker-<index> "
    "must fit in 63 characters (it is also the pod's hostname)"
)


# -- spec.elastic, spec.runMode ---------------------------------------------------------


class ElasticConfig(specs.ElasticConfig):
    """Elastic training: the number of workers follows expectedReplicas within its bounds."""

    enabled: bool = Field(
        default=False,
        description="Whether elastic training is on (spec.worker.replicas is then ignored).",
    )
    min_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="Smallest number of workers training runs with.",
    )
    max_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="Largest number of workers training runs with.",
    )
    expected_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description=(
            "Number of workers wanted now, between minReplicas and maxReplicas; may be "
            "changed while the job runs (also through the scale subresource)."
        ),
    )


MSG_RESUME_ARGS_NEED_COMMAND = (
    "spec.runMode.pause.resumeSpecs[].args needs a command beside it: a DeepSpeedJob's "
    "workers run the operator's launch script (deepspeed on worker-0, sshd on the others), "
    "which takes no arguments, so args alone would be dropped; give "
    "spec.runMode.pause.resumeSpecs[].command too, or change spec.config.run"
)


class DeepSpeedRunMode(RunMode):
    """Special run modes. Unset: the job trains normally."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        specs.resume_args_need_command_rule(MSG_RESUME_ARGS_NEED_COMMAND),
    )

    debug: DebugMode | None = Field(
        default=None,
        description=(
            "Debug mode: deploy the workers (with the job's ssh key and hostfile) without "
            "starting training; spec.config may then be left out. Each worker runs "
            "`/usr/sbin/sshd -D` unless replicaSpecs[].command (type worker) says otherwise."
        ),
    )


# -- the spec -------------------------------------------------------------------------------


RUN_REQUIRED_RULE: Rule[DeepSpeedJobSpec] = Rule(
    f"({DEBUG_ON_CEL}) || (has(self.config) && "
    "(has(self.config.run) || has(self.config.customCommand)))",
    MSG_RUN_REQUIRED,
    # Stricter than the CEL: config.run's commands are untyped in the schema, so
    # CEL cannot see an empty one (python: []); the model refuses it too.
    lambda spec: spec.debug_enabled or spec.launch_given,
    field_path=".config.run",
)


class DeepSpeedJobSpec(T9kModel):
    """Desired state of a DeepSpeedJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (RUN_REQUIRED_RULE, RESUME_SPECS_REMOVAL_RULE)

    config: DeepSpeedConfig | None = Field(
        default=None,
        description=(
            "How deepspeed runs the training: what to run, slots per worker and launcher "
            "options. Required unless debug mode is on."
        ),
    )
    worker: WorkerSpec = Field(
        description=(
            "The workers. Each runs sshd; worker-0 also runs the deepspeed launcher, and the "
            "job succeeds or fails with it."
        )
    )
    elastic: ElasticConfig | None = Field(
        default=None,
        description="Elastic training: the number of workers may change while training.",
    )
    run_policy: RunPolicy = run_policy_field()
    scheduler: SchedulerPolicy | None = scheduler_field()
    managed_by: ManagedBy | None = managed_by_field()
    run_mode: DeepSpeedRunMode | None = Field(
        default=None,
        description=(
            "Debug or pause mode. Unset: train normally. The debug-mode default command "
            "is `/usr/sbin/sshd -D`."
        ),
    )
    disable_custom_env: bool = Field(
        default=False,
        description=(
            "false (the default): worker-0 writes the training container's environment "
            "(the env of spec.worker.template, and what the image sets) to "
            "/root/.deepspeed_env, which the deepspeed launcher reads and exports to every "
            "training process it starts on the workers. true: no such file is written, so the "
            "environment reaches only the containers' own programs (sshd and the launcher), "
            "not the training processes the launcher starts over ssh."
        ),
    )
    tensorboard_spec: TensorBoardSpec | None = tensorboard_spec_field()

    @property
    def launch_given(self) -> bool:
        """Whether the job says what worker-0 launches: config.customCommand, or a
        config.run that is not empty."""
        config = self.config
        if config is None:
            return False
        return config.custom or (config.run is not None and config.run.given)

    @property
    def debug_enabled(self) -> bool:
        return specs.debug_enabled(self.run_mode)

    @property
    def elastic_enabled(self) -> bool:
        return self.elastic is not None and self.elastic.enabled

    @property
    def max_workers(self) -> int:
        """The most workers the job may have at once (names of pods up to this count)."""
        high = self.elastic.max_replicas if self.elastic is not None else None
        return max(self.worker.replicas, high or 0)


# -- helpers for builders and reconcilers -------------------------------------------------------


def effective_slots(spec: DeepSpeedJobSpec) -> int:
    """Slots per worker: config.slotsPerWorker, else config.slotPerWorker, else 1."""
    return spec.config.slots if spec.config is not None else DEFAULT_SLOTS


def run_kind_and_argv(spec: DeepSpeedJobSpec) -> tuple[RunKind, list[str]]:
    """Which of python/module/exec is set, and the script/module/executable then its
    arguments (a string command line split with shlex).

    Raises ``ValueError`` when the spec has no ``config.run`` (only legal in debug mode).
    """
    if spec.config is None or spec.config.run is None or not spec.config.run.given:
        raise ValueError(MSG_RUN_REQUIRED)
    run = spec.config.run
    return run.kind, run.argv


def effective_worker_count(spec: DeepSpeedJobSpec) -> int:
    """Workers wanted now: with elastic training on, expectedReplicas clamped to
    [minReplicas, maxReplicas]; otherwise worker.replicas."""
    if spec.elastic is None:
        return spec.worker.replicas
    return spec.elastic.clamp(spec.worker.replicas)


def pod_name_fits(job_name: str, spec: DeepSpeedJobSpec) -> bool:
    """Whether ``<job>-worker-<last index>`` fits in a DNS label (63 characters)."""
    return last_pod_name_fits(job_name, WORKER, spec.max_workers)


# -- status and the object --------------------------------------------------------------------


class DeepSpeedJobStatus(T9kJobStatus):
    """Observed state of a DeepSpeedJob, written by the operator."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    worker_pod_name_fits_cel(WORKER, elastic=True), MSG_POD_NAME_LENGTH
)


class DeepSpeedJobObject(JobObject[DeepSpeedJobSpec, DeepSpeedJobStatus]):
    """A DeepSpeedJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = t9k_job_rules(POD_NAME_LENGTH_RULE)

    def pod_names_fit(self) -> bool:
        return pod_name_fits(self.name, self.spec)


CRD = job_crd(
    kind=KIND,
    plural=PLURAL,
    singular="deepspeedjob",
    short_names=("dsj",),
    spec_model=DeepSpeedJobSpec,
    status_model=DeepSpeedJobStatus,
    description=(
        "DeepSpeedJob runs distributed DeepSpeed training: workers that run sshd, and the "
        "deepspeed launcher on worker-0 reaching them over ssh through the job's hostfile."
    ),
    scale=ELASTIC_SCALE,
    root_rules=DeepSpeedJobObject.rules,
)
