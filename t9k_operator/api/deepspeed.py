"""The DeepSpeedJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

A DeepSpeedJob runs ``spec.worker.replicas`` identical workers; every worker
runs sshd, and the first one (``worker-0``) also runs the ``deepspeed``
launcher, which reaches the others over ssh through the job's hostfile.
``spec.config`` says what the launcher runs (``run.python``, ``run.module`` or
``run.exec``) and with which launcher options; its models are in
:mod:`t9k_operator.api.deepspeed_config`. This module holds the rest of the
spec (the workers, elastic training, run modes), the status, the object and
the CRD.

As for PyTorchTrainingJob, the invariants are written twice: as schema rules
(the API server refuses a bad object at admission) and as pydantic validators
with the same messages (an object that reaches the operator some other way
still fails to parse with a message naming the field). The reserved-mount
rule reads the pod template, which is otherwise kept whole: the template's
schema declares just the parts the rule reads (``spec.containers[*].name``
and ``.volumeMounts[*].mountPath``, capped at :data:`MAX_CONTAINERS`
containers and :data:`MAX_VOLUME_MOUNTS` mounts to bound the CEL cost), every
level still preserving unknown fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator, model_validator

from t9k_operator.api import specs
from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    ELASTIC_SCALE,
    JOB_NAME_RULE,
    JobObject,
    job_crd,
    last_pod_name_fits,
    pod_name_length_rule,
    worker_pod_name_fits_cel,
)
from t9k_operator.api.deepspeed_config import DEFAULT_SLOTS, DeepSpeedConfig, RunKind
from t9k_operator.api.schema import (
    DNS_LABEL_MAX,
    MAX_REPLICAS,
    cel_strings,
    preserved_object_schema,
)
from t9k_operator.api.specs import (
    DEBUG_ON_CEL,
    RESUME_SPECS_REMOVAL_RULE,
    DebugMode,
    RestartPolicy,
    RunMode,
    RunPolicy,
    SchedulerPolicy,
    run_policy_field,
    scheduler_field,
)
from t9k_operator.api.template import PodTemplate, named_or_first_container, pod_template_field
from t9k_operator.api.tensorboard import (
    TENSORBOARD_NAME_RULE,
    T9kJobStatus,
    TensorBoardSpec,
    tensorboard_spec_field,
)

KIND = "DeepSpeedJob"
PLURAL = "deepspeedjobs"
WORKER = "worker"
"""The only replica type; pods are named ``<job>-worker-<i>``."""
TRAINING_CONTAINER = "worker"
"""The training container is the one of this name, else the template's first."""

RESERVED_MOUNT_PATHS = ("/root/.ssh", "/t9k/hostfile", "/root/.deepspeed_env")
"""The operator mounts the job's ssh key, hostfile and remote environment here."""
MAX_CONTAINERS = 64
"""At most this many containers in the worker template (bounds the CEL cost)."""
MAX_VOLUME_MOUNTS = 256
"""At most this many volumeMounts per container of the worker template."""

_POD_RESTART_POLICIES = ("Never", "OnFailure", "Always")

# Messages shared by the schema rules and the pydantic validators.
MSG_RUN_REQUIRED = (
    "spec.config.run needs what to train: one of python, module or exec, not empty "
    "(e.g. run: {python: [train.py]}); only a debug job (spec.runMode.debug.enabled: true) "
    "may leave it out or empty"
)
MSG_TEMPLATE_RESTART_POLICY = (
    "spec.worker.template.spec.restartPolicy must be Never, OnFailure or Always "
    "(the Pod API's values)"
)
MSG_RESERVED_MOUNTS = (
    "the training container of spec.worker.template (the one named worker, else the first) "
    "must not mount a volume at /root/.ssh, /t9k/hostfile or "
    "/root/.deepspeed_env (nor below them): the operator mounts the job's ssh key, "
    "hostfile and remote environment there"
)
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-worker-<index> "
    "must fit in 63 characters (it is also the pod's hostname)"
)


def is_reserved_mount_path(path: str) -> bool:
    """Whether ``path`` is one of :data:`RESERVED_MOUNT_PATHS` or below one."""
    return any(path == p or path.startswith(p + "/") for p in RESERVED_MOUNT_PATHS)


# -- spec.worker ------------------------------------------------------------------------


def _mounts_ok(container: str) -> str:
    paths = cel_strings(RESERVED_MOUNT_PATHS)
    return (
        f"(!has({container}.volumeMounts) || {container}.volumeMounts.all(m, "
        f"!has(m.mountPath) || !{paths}.exists(p, m.mountPath == p || "
        "m.mountPath.startsWith(p + '/'))))"
    )


_CONTAINERS = "self.spec.containers"
_IS_TRAINING = f"has(c.name) && c.name == '{TRAINING_CONTAINER}'"
RESERVED_MOUNTS_RULE: dict[str, Any] = {
    "rule": (
        f"!has(self.spec) || !has({_CONTAINERS}) || size({_CONTAINERS}) == 0 || "
        f"({_CONTAINERS}.exists(c, {_IS_TRAINING}) ? "
        f"{_CONTAINERS}.all(c, !({_IS_TRAINING}) || {_mounts_ok('c')}) : "
        f"{_mounts_ok(_CONTAINERS + '[0]')})"
    ),
    "message": MSG_RESERVED_MOUNTS,
    "fieldPath": ".spec.containers",
}

_TEMPLATE_SCHEMA: dict[str, Any] = {
    "properties": {
        "spec": preserved_object_schema(
            "Pod spec of the workers, kept as written.",
            {
                "restartPolicy": {
                    "type": "string",
                    "enum": list(_POD_RESTART_POLICIES),
                    "description": (
                        "The Pod API's restartPolicy: Never, OnFailure or Always. The pods "
                        "always run with Never; this value is the workers' restart policy "
                        "when spec.worker.restartPolicy is unset."
                    ),
                },
                "containers": {
                    "type": "array",
                    "maxItems": MAX_CONTAINERS,
                    "description": (
                        "Containers of the worker pods. The training container is the one "
                        "named worker, else the first; it must not mount anything at "
                        "/root/.ssh, /t9k/hostfile or /root/.deepspeed_env."
                    ),
                    "items": preserved_object_schema(
                        "A container, kept as written.",
                        {
                            "name": {
                                "type": "string",
                                "maxLength": DNS_LABEL_MAX,
                                "description": "Name of the container.",
                            },
                            "volumeMounts": {
                                "type": "array",
                                "maxItems": MAX_VOLUME_MOUNTS,
                                "description": "Volumes mounted into the container.",
                                "items": preserved_object_schema(
                                    "A volume mount, kept as written.",
                                    {
                                        "mountPath": {
                                            "type": "string",
                                            "description": "Where the volume is mounted.",
                                        }
                                    },
                                ),
                            },
                        },
                    ),
                },
            },
        )
    },
    "x-kubernetes-validations": [RESERVED_MOUNTS_RULE],
}


def training_container(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The template's container named worker, else its first; None without containers."""
    return named_or_first_container(template, TRAINING_CONTAINER)


class WorkerSpec(T9kModel):
    """The workers: how many, how they restart, and their pod template."""

    replicas: int = Field(
        default=1,
        ge=0,
        le=MAX_REPLICAS,
        description=(
            "Number of workers (when elastic training is on, spec.elastic.expectedReplicas "
            "decides instead)."
        ),
    )
    restart_policy: RestartPolicy | None = Field(
        default=None,
        description=(
            "When the operator recreates a failed worker (pods themselves always run with "
            "restartPolicy Never): Never, OnFailure, Always, or ExitCode (only after exit "
            "codes 130, 137, 138 and 143). Unset: the template's restartPolicy (Never, "
            "OnFailure or Always), else OnFailure. Restarts are limited by "
            "spec.runPolicy.backoffLimit."
        ),
    )
    template: PodTemplate = pod_template_field("workers", _TEMPLATE_SCHEMA)

    @field_validator("template")
    @classmethod
    def _check_mounts(cls, template: dict[str, Any]) -> dict[str, Any]:
        policy = (template.get("spec") or {}).get("restartPolicy")
        if policy is not None and policy not in _POD_RESTART_POLICIES:
            raise ValueError(MSG_TEMPLATE_RESTART_POLICY)
        containers = (template.get("spec") or {}).get("containers") or []
        named = [
            c for c in containers if isinstance(c, Mapping) and c.get("name") == TRAINING_CONTAINER
        ]
        checked = named or containers[:1]
        for container in checked:
            if not isinstance(container, Mapping):
                continue
            for mount in container.get("volumeMounts") or []:
                path = mount.get("mountPath") if isinstance(mount, Mapping) else None
                if isinstance(path, str) and is_reserved_mount_path(path):
                    raise ValueError(MSG_RESERVED_MOUNTS)
        return template

    @property
    def effective_restart_policy(self) -> RestartPolicy:
        """restartPolicy, else the template's pod restartPolicy, else OnFailure."""
        if self.restart_policy is not None:
            return self.restart_policy
        pod_policy = (self.template.get("spec") or {}).get("restartPolicy")
        if pod_policy == "Never":
            return "Never"
        if pod_policy == "Always":
            return "Always"
        return "OnFailure"


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

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                specs.resume_args_need_command_rule(MSG_RESUME_ARGS_NEED_COMMAND)
            ]
        }
    )

    debug: DebugMode | None = Field(
        default=None,
        description=(
            "Debug mode: deploy the workers (with the job's ssh key and hostfile) without "
            "starting training; spec.config may then be left out. Each worker runs "
            "`/usr/sbin/sshd -D` unless replicaSpecs[].command (type worker) says otherwise."
        ),
    )

    @model_validator(mode="after")
    def _check_resume_args(self) -> DeepSpeedRunMode:
        specs.check_resume_args_need_command(self, MSG_RESUME_ARGS_NEED_COMMAND)
        return self


# -- the spec -------------------------------------------------------------------------------


class DeepSpeedJobSpec(T9kModel):
    """Desired state of a DeepSpeedJob."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": f"({DEBUG_ON_CEL}) || (has(self.config) && has(self.config.run))",
                    "message": MSG_RUN_REQUIRED,
                    "fieldPath": ".config.run",
                },
                RESUME_SPECS_REMOVAL_RULE,
            ]
        }
    )

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
    run_mode: DeepSpeedRunMode | None = Field(
        default=None,
        description=(
            "Debug or pause mode. Unset: train normally. The debug-mode default command "
            "is `/usr/sbin/sshd -D`."
        ),
    )
    tensorboard_spec: TensorBoardSpec | None = tensorboard_spec_field()

    @model_validator(mode="after")
    def _check_run(self) -> DeepSpeedJobSpec:
        run = self.config.run if self.config is not None else None
        if not self.debug_enabled and (run is None or not run.given):
            raise ValueError(MSG_RUN_REQUIRED)
        return self

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


class DeepSpeedJobObject(JobObject[DeepSpeedJobSpec, DeepSpeedJobStatus]):
    """A DeepSpeedJob as stored by the API server."""

    name_too_long: ClassVar[str] = MSG_POD_NAME_LENGTH

    def pod_names_fit(self) -> bool:
        return pod_name_fits(self.name, self.spec)


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    worker_pod_name_fits_cel(WORKER, elastic=True), MSG_POD_NAME_LENGTH
)

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
    root_validations=(JOB_NAME_RULE, POD_NAME_LENGTH_RULE, TENSORBOARD_NAME_RULE),
)
