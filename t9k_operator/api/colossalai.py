"""The ColossalAIJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

A ColossalAIJob runs two kinds of replicas:

* ``spec.worker.replicas`` workers (``<job>-worker-<i>``), built from
  ``spec.worker.template``; each runs sshd (at ``spec.ssh.sshdPath``, with the
  job's key at ``spec.ssh.authMountPath``) and waits;
* one launcher (``<job>-launcher``), a pod the operator builds itself from
  ``spec.launcher`` (image, workingDir, env, resources). It runs
  ``colossalai run --nproc_per_node=<procPerWorker> --hostfile=... <command>``,
  which reaches every worker over ssh and starts torchrun there (with
  ``spec.worker.torchArgs``).

A worker that fails cannot rejoin the training, so workers are never
recreated; ``spec.runPolicy`` accordingly has ``cleanUpWorkers`` (delete the
workers once the job has finished; the launcher, whose log tells the result,
stays) instead of a clean-up policy. Its ``backoffLimit`` is stored but not
acted on: the launcher is not restarted either (a relaunched launcher would
start the training over on workers that may still be busy), so any failure
fails the job.

As for the other kinds, the invariants are written twice: as schema rules
(the API server refuses a bad object at admission, naming the field) and as
pydantic validators with the same messages (an object that reaches the
operator some other way still fails to parse). The worker template is kept
whole; its schema declares just enough (``spec.containers``, at least one) to
refuse a template without a container, every level still keeping the fields
it does not declare.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator, model_validator

from t9k_operator.api import specs
from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    JobObject,
    job_crd,
    last_pod_name_fits,
    pod_name_length_rule,
    worker_pod_name_fits_cel,
)
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.schema import (
    DNS_LABEL_MAX,
    ENV_VAR,
    KUBERNETES_SCHEMA,
    MAX_INT32,
    MAX_PROCS,
    MAX_REPLICAS,
    RESOURCE_REQUIREMENTS,
    Arg,
    cel_strings,
    preserved_object_schema,
)
from t9k_operator.api.specs import (
    DEBUG_ON_CEL,
    RESUME_SPECS_REMOVAL_RULE,
    DebugMode,
    RunMode,
    SchedulerPolicy,
    deadline_field,
    scheduler_field,
)
from t9k_operator.api.template import PodTemplate, named_or_first_container, pod_template_field
from t9k_operator.api.tensorboard import (
    TENSORBOARD_NAME_RULE,
    T9kJobStatus,
    TensorBoardSpec,
    tensorboard_spec_field,
)

KIND = "ColossalAIJob"
PLURAL = "colossalaijobs"
LAUNCHER = "launcher"
"""Replica type of the launcher; its pod is named ``<job>-launcher``."""
WORKER = "worker"
"""Replica type of the workers; their pods are named ``<job>-worker-<i>``."""
TRAINING_CONTAINER = "worker"
"""The worker's training container is the one of this name, else the template's first."""
DEFAULT_AUTH_MOUNT_PATH = "/root/.ssh"
DEFAULT_SSHD_PATH = "/usr/sbin/sshd"
MAX_PATH_LENGTH = 4096

# Messages shared by the schema rules and the pydantic validators.
MSG_AUTH_MOUNT_PATH = (
    "spec.ssh.authMountPath must be an absolute path (start with /): the job's ssh key "
    "is mounted there in every worker"
)
AUTH_MOUNT_FORBIDDEN = ("/tmp", "/var/tmp", "/dev", "/proc", "/sys", "/t9k")
"""Where the key may not go: places others may write (sshd's StrictModes
refuses keys below them), kernel file systems, and the operator's own /t9k."""
MSG_AUTH_MOUNT_PLACE = (
    "spec.ssh.authMountPath must be a plain directory path (not /, no // nor . or .. parts) "
    "outside " + ", ".join(AUTH_MOUNT_FORBIDDEN) + ": sshd refuses keys below a "
    "directory others may write, and /t9k is the operator's"
)
MSG_SSHD_PATH = (
    "spec.ssh.sshdPath must be an absolute path (start with /): "
    "sshd must be started by its absolute path"
)
MSG_COMMAND_REQUIRED = (
    "spec.worker.command (the training script and its arguments) is required "
    "unless spec.runMode.debug.enabled is true"
)
MSG_NO_CONTAINER = "spec.worker.template.spec.containers must hold at least one container"
MSG_ENV_NAME = "spec.launcher.env: every item needs a name (a non-empty string)"
MSG_ENV_VALUE = "spec.launcher.env: an item's value must be a string"
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: the pod names <name>-launcher and <name>-worker-<index> "
    "must fit in 63 characters (they are also the pods' hostnames)"
)


AUTH_MOUNT_PLACE_CEL = (
    "self != '/' && !self.contains('//') "
    "&& !self.matches('/[.][.]?(/|$)') && !"
    + cel_strings(AUTH_MOUNT_FORBIDDEN)
    + ".exists(p, self == p || self.startsWith(p + '/'))"
)


def _absolute_path_rule(message: str) -> dict[str, Any]:
    return {"x-kubernetes-validations": [{"rule": "self.startsWith('/')", "message": message}]}


def _require_absolute(value: str, message: str) -> str:
    if not value.startswith("/"):
        raise ValueError(message)
    return value


# -- spec.ssh ---------------------------------------------------------------------------


class SSHConfig(T9kModel):
    """How the workers run sshd for the launcher. Unset: the defaults below."""

    auth_mount_path: str = Field(
        default=DEFAULT_AUTH_MOUNT_PATH,
        min_length=1,
        max_length=MAX_PATH_LENGTH,
        description=(
            "Absolute path of the ssh directory, in the workers and the launcher, that "
            "holds the job's key, authorized_keys and ssh config: the operator makes it a "
            "0700 directory with 0600 copies of the files at the pod's start, as sshd's "
            "StrictModes demands, and checks that no parent directory in the image may be "
            "written by others. Defaults to /root/.ssh."
        ),
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "self.startsWith('/')", "message": MSG_AUTH_MOUNT_PATH},
                {"rule": AUTH_MOUNT_PLACE_CEL, "message": MSG_AUTH_MOUNT_PLACE},
            ]
        },
    )
    sshd_path: str = Field(
        default=DEFAULT_SSHD_PATH,
        min_length=1,
        max_length=MAX_PATH_LENGTH,
        description=(
            "Absolute path of the sshd program in the worker image (sshd must be started "
            "by its absolute path). Defaults to /usr/sbin/sshd."
        ),
        json_schema_extra=_absolute_path_rule(MSG_SSHD_PATH),
    )

    @field_validator("auth_mount_path")
    @classmethod
    def _check_auth_mount_path(cls, value: str) -> str:
        _require_absolute(value, MSG_AUTH_MOUNT_PATH)
        parts = value.split("/")[1:]
        if value.endswith("/"):
            parts = parts[:-1]
        if (
            value == "/"
            or any(part in ("", ".", "..") for part in parts)
            or any(value == p or value.startswith(p + "/") for p in AUTH_MOUNT_FORBIDDEN)
        ):
            raise ValueError(MSG_AUTH_MOUNT_PLACE)
        return value

    @field_validator("sshd_path")
    @classmethod
    def _check_sshd_path(cls, value: str) -> str:
        return _require_absolute(value, MSG_SSHD_PATH)


# -- spec.launcher ----------------------------------------------------------------------

_ENV_SCHEMA: dict[str, Any] = {
    "items": {
        KUBERNETES_SCHEMA: ENV_VAR,
        "properties": {"name": {"minLength": 1}},
    }
}


class LauncherSpec(T9kModel):
    """The launcher pod, which the operator builds itself: it runs `colossalai run`."""

    image: str = Field(
        min_length=1,
        description=(
            "Image of the launcher; it must contain ColossalAI (the colossalai command), "
            "usually the workers' image."
        ),
    )
    working_dir: str | None = Field(
        default=None,
        description=(
            "Working directory of the launcher. colossalai run changes to the same directory "
            "on every worker before it starts the training there, so the training script's "
            "relative paths resolve against it. Unset: the image's working directory."
        ),
    )
    env: list[dict[str, Any]] = Field(
        default_factory=list,
        description=(
            "Environment variables of the launcher (Kubernetes EnvVar objects: name with value "
            "or valueFrom), kept as written."
        ),
        json_schema_extra=_ENV_SCHEMA,
    )
    resources: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Compute resources of the launcher (Kubernetes ResourceRequirements: limits and "
            "requests), kept as written."
        ),
        json_schema_extra={KUBERNETES_SCHEMA: RESOURCE_REQUIREMENTS},
    )

    @field_validator("env")
    @classmethod
    def _check_env(cls, env: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for var in env:
            name = var.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError(MSG_ENV_NAME)
            if "value" in var and not isinstance(var["value"], str):
                raise ValueError(MSG_ENV_VALUE)
        return env


# -- spec.worker ------------------------------------------------------------------------


_TEMPLATE_SCHEMA: dict[str, Any] = {
    "required": ["spec"],
    "properties": {
        "spec": {
            **preserved_object_schema(
                "Pod spec of the workers, kept as written.",
                {
                    "containers": {
                        "type": "array",
                        "minItems": 1,
                        "description": (
                            "Containers of the worker pods, at least one. The training "
                            "container is the one named worker, else the first; the operator "
                            "runs sshd in it."
                        ),
                        "items": {
                            "type": "object",
                            "additionalProperties": True,
                            "description": "A container, kept as written.",
                        },
                    }
                },
            ),
            "required": ["containers"],
        }
    },
}


def training_container(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The template's container named worker, else its first; None without containers."""
    return named_or_first_container(template, TRAINING_CONTAINER)


class WorkerSpec(T9kModel):
    """The workers: how many, how many training processes each, what they train."""

    replicas: int = Field(
        default=1, ge=1, le=MAX_REPLICAS, description="Number of workers. Defaults to 1."
    )
    proc_per_worker: int = Field(
        default=1,
        ge=1,
        le=MAX_PROCS,
        description=(
            "Training processes per worker (colossalai run --nproc_per_node), usually its "
            "number of GPUs. Defaults to 1."
        ),
    )
    command: list[Arg] | None = Field(
        default=None,
        description=(
            "The training script and its arguments (e.g. [train.py, --lr, '0.1']), run on "
            "every worker by colossalai run from the launcher's working directory. Required "
            "unless debug mode is on."
        ),
    )
    torch_args: list[Arg] = Field(
        default=[],
        description=(
            "Further torchrun options for the training processes "
            "(colossalai run --extra_launch_args)."
        ),
    )
    template: PodTemplate = pod_template_field(
        "workers", _TEMPLATE_SCHEMA, more="; spec.containers must hold at least one container."
    )

    @field_validator("template")
    @classmethod
    def _check_containers(cls, template: dict[str, Any]) -> dict[str, Any]:
        pod = template.get("spec")
        containers = pod.get("containers") if isinstance(pod, Mapping) else None
        if (
            not isinstance(containers, list)
            or not containers
            or not all(isinstance(c, Mapping) for c in containers)
        ):
            raise ValueError(MSG_NO_CONTAINER)
        return template


# -- spec.runPolicy, spec.runMode -----------------------------------------------------------


class ColossalAIRunPolicy(T9kModel):
    """How long the job may run, and whether its workers are removed when it ends."""

    clean_up_workers: bool = Field(
        default=False,
        description=(
            "Delete the workers once the job has finished. The launcher is never deleted: "
            "its log tells whether the training succeeded. Defaults to false."
        ),
    )
    active_deadline_seconds: int | None = deadline_field()
    backoff_limit: int | None = Field(
        default=None,
        ge=0,
        le=MAX_INT32,
        description=(
            "Stored as written but not acted on: no pod of a ColossalAIJob is restarted. A "
            "failed worker cannot rejoin a ColossalAI training, and a relaunched launcher "
            "would start the training over on workers that may still be busy; so any "
            "failure fails the job. A job that sets it gets a Warning Event FieldNotActedOn."
        ),
    )
    progress: ProgressPolicy | None = progress_field(
        "the T9k API (a ColossalAIJob restarts no pod: onHang Restart fails it as Fail does)"
    )


MSG_RESUME_ARGS_NEED_COMMAND = (
    "spec.runMode.pause.resumeSpecs[].args needs a command beside it: a ColossalAIJob's "
    "launcher runs the operator's colossalai run script and its workers run sshd, neither "
    "taking arguments, so args alone would be dropped; give "
    "spec.runMode.pause.resumeSpecs[].command too, or change spec.worker.command"
)


class ColossalAIRunMode(RunMode):
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
            "Debug mode: deploy the launcher and the workers (with the job's ssh key and "
            "hostfile, workers running sshd) without starting training; spec.worker.command "
            "may then be left out. Each replica (type launcher or worker) runs `sleep inf` "
            "unless replicaSpecs[].command says otherwise."
        ),
    )

    @model_validator(mode="after")
    def _check_resume_args(self) -> ColossalAIRunMode:
        specs.check_resume_args_need_command(self, MSG_RESUME_ARGS_NEED_COMMAND)
        return self


# -- the spec -------------------------------------------------------------------------------

COMMAND_REQUIRED_RULE: dict[str, Any] = {
    "rule": (
        f"!has(self.worker) || ({DEBUG_ON_CEL}) || "
        "(has(self.worker.command) && size(self.worker.command) > 0)"
    ),
    "message": MSG_COMMAND_REQUIRED,
    "fieldPath": ".worker.command",
}


class ColossalAIJobSpec(T9kModel):
    """Desired state of a ColossalAIJob."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [COMMAND_REQUIRED_RULE, RESUME_SPECS_REMOVAL_RULE]
        }
    )

    ssh: SSHConfig = Field(
        default_factory=SSHConfig,
        description=(
            "Where the workers' sshd and the job's ssh key are. Unset: sshd at "
            "/usr/sbin/sshd, key at /root/.ssh."
        ),
    )
    launcher: LauncherSpec = Field(
        description=(
            "The launcher, a pod the operator builds from these settings; it runs "
            "colossalai run, which starts the training on every worker over ssh. The job "
            "succeeds or fails with it."
        )
    )
    worker: WorkerSpec = Field(
        description="The workers. Each runs sshd and waits for the launcher to start training."
    )
    run_policy: ColossalAIRunPolicy = Field(
        default_factory=ColossalAIRunPolicy,
        description=(
            "Deadline of the job and clean-up of its workers (backoffLimit is stored but "
            "not acted on)."
        ),
    )
    scheduler: SchedulerPolicy | None = scheduler_field()
    run_mode: ColossalAIRunMode | None = Field(
        default=None,
        description=(
            "Debug or pause mode. Unset: train normally. The debug-mode default command "
            "is `sleep inf`."
        ),
    )
    tensorboard_spec: TensorBoardSpec | None = tensorboard_spec_field()

    @model_validator(mode="after")
    def _check_command(self) -> ColossalAIJobSpec:
        if not self.debug_enabled and not self.worker.command:
            raise ValueError(MSG_COMMAND_REQUIRED)
        return self

    @property
    def debug_enabled(self) -> bool:
        return specs.debug_enabled(self.run_mode)


def pod_names_fit(job_name: str, spec: ColossalAIJobSpec) -> bool:
    """Whether ``<job>-launcher`` and ``<job>-worker-<last index>`` fit in a DNS label."""
    return len(f"{job_name}-{LAUNCHER}") <= DNS_LABEL_MAX and last_pod_name_fits(
        job_name, WORKER, spec.worker.replicas
    )


# -- status and the object --------------------------------------------------------------------


class ColossalAIJobStatus(T9kJobStatus):
    """Observed state of a ColossalAIJob, written by the operator (tasks launcher and worker)."""


class ColossalAIJobObject(JobObject[ColossalAIJobSpec, ColossalAIJobStatus]):
    """A ColossalAIJob as stored by the API server."""

    name_too_long: ClassVar[str] = MSG_POD_NAME_LENGTH

    def pod_names_fit(self) -> bool:
        return pod_names_fit(self.name, self.spec)


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    f"size(self.metadata.name) + size('-{LAUNCHER}') <= {DNS_LABEL_MAX} && "
    f"({worker_pod_name_fits_cel(WORKER)})",
    MSG_POD_NAME_LENGTH,
)

CRD = job_crd(
    kind=KIND,
    plural=PLURAL,
    singular="colossalaijob",
    short_names=("caij",),
    spec_model=ColossalAIJobSpec,
    status_model=ColossalAIJobStatus,
    description=(
        "ColossalAIJob runs distributed ColossalAI training: workers that run sshd, and a "
        "launcher pod running colossalai run, which starts the training on every worker "
        "over ssh."
    ),
    root_validations=(JOB_NAME_RULE, POD_NAME_LENGTH_RULE, TENSORBOARD_NAME_RULE),
)
