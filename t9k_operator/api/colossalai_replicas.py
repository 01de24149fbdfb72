"""The replicas of a ColossalAIJob: ``spec.ssh``, ``spec.launcher`` and ``spec.worker``.

The workers (``<job>-worker-<i>``, from ``spec.worker.template``) run sshd at
``spec.ssh.sshdPath`` with the job's key at ``spec.ssh.authMountPath``; the
launcher (``<job>-launcher``) is a pod the operator builds itself from
``spec.launcher``. The paths are checked by
rules (:class:`~t9k_operator.api.rules.Rule`); the launcher's env and resources
get the Kubernetes types' schemas, and the worker template's schema declares
just enough (``spec.containers``, at least one) to refuse a template without
a container, every level still keeping the fields it does not declare. The
spec as a whole, the status and the CRD are in :mod:`t9k_operator.api.colossalai`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, field_validator

from t9k_operator.api.base import T9kModel
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    ENV_VAR,
    KUBERNETES_SCHEMA,
    MAX_PROCS,
    MAX_REPLICAS,
    RESOURCE_REQUIREMENTS,
    Arg,
    cel_strings,
    preserved_object_schema,
)
from t9k_operator.api.template import PodTemplate, named_or_first_container, pod_template_field

LAUNCHER = "launcher"
"""Replica type of the launcher; its pod is named ``<job>-launcher``."""
WORKER = "worker"
"""Replica type of the workers; their pods are named ``<job>-worker-<i>``."""
TRAINING_CONTAINER = "worker"
"""The worker's training container is the one of this name, else the template's first."""
DEFAULT_AUTH_MOUNT_PATH = "/root/.ssh"
DEFAULT_SSHD_PATH = "/usr/sbin/sshd"
MAX_PATH_LENGTH = 4096

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
MSG_NO_CONTAINER = "spec.worker.template.spec.containers must hold at least one container"
MSG_ENV_NAME = "spec.launcher.env: every item needs a name (a non-empty string)"
MSG_ENV_VALUE = "spec.launcher.env: an item's value must be a string"


def absolute_path_rule(message: str) -> Rule[str]:
    """The rule that a path field starts with /, saying ``message`` when it does not."""
    return Rule("self.startsWith('/')", message, lambda path: path.startswith("/"))


_DOT_PART = "/[.][.]?(/|$)"
"""A . or .. part of a path."""


def _is_plain_place(path: str) -> bool:
    """Not /, no empty, . or .. part, and outside :data:`AUTH_MOUNT_FORBIDDEN`."""
    return (
        path != "/"
        and "//" not in path
        and re.search(_DOT_PART, path) is None
        and not any(path == p or path.startswith(p + "/") for p in AUTH_MOUNT_FORBIDDEN)
    )


AUTH_MOUNT_PATH_RULE = absolute_path_rule(MSG_AUTH_MOUNT_PATH)
AUTH_MOUNT_PLACE_RULE: Rule[str] = Rule(
    f"self != '/' && !self.contains('//') && !self.matches('{_DOT_PART}') && !"
    + cel_strings(AUTH_MOUNT_FORBIDDEN)
    + ".exists(p, self == p || self.startsWith(p + '/'))",
    MSG_AUTH_MOUNT_PLACE,
    _is_plain_place,
)
SSHD_PATH_RULE = absolute_path_rule(MSG_SSHD_PATH)
SshdPath = Annotated[str, Rules(SSHD_PATH_RULE)]


def sshd_path_field() -> Any:
    """``sshdPath``, alike in every kind whose workers run sshd (ColossalAIJob, MPIJob)."""
    return Field(
        default=DEFAULT_SSHD_PATH,
        min_length=1,
        max_length=MAX_PATH_LENGTH,
        description=(
            "Absolute path of the sshd program in the worker image (sshd must be started "
            "by its absolute path). Defaults to /usr/sbin/sshd."
        ),
    )


# -- spec.ssh ---------------------------------------------------------------------------


class SSHConfig(T9kModel):
    """How the workers run sshd for the launcher. Unset: the defaults below."""

    auth_mount_path: Annotated[str, Rules(AUTH_MOUNT_PATH_RULE, AUTH_MOUNT_PLACE_RULE)] = Field(
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
    )
    sshd_path: SshdPath = sshd_path_field()


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
            "or valueFrom), kept as written. kubectl explain pod.spec.containers.env "
            "describes their fields."
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


def worker_containers(template: Mapping[str, Any]) -> list[Any]:
    """The containers of the workers' template, which must be a non-empty list of
    objects (else ValueError with :data:`MSG_NO_CONTAINER`)."""
    pod = template.get("spec")
    containers = pod.get("containers") if isinstance(pod, Mapping) else None
    if (
        not isinstance(containers, list)
        or not containers
        or not all(isinstance(c, Mapping) for c in containers)
    ):
        raise ValueError(MSG_NO_CONTAINER)
    return containers


def training_container(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The template's container named worker, else its first; None without containers."""
    return named_or_first_container(template, TRAINING_CONTAINER)


def proc_per_worker_field() -> Any:
    """The training processes per worker, in either layout (``spec.worker.procPerWorker``,
    ``spec.torchConfig.procPerWorker``)."""
    return Field(
        default=1,
        ge=1,
        le=MAX_PROCS,
        description=(
            "Training processes per worker (colossalai run --nproc_per_node), usually its "
            "number of GPUs. Defaults to 1."
        ),
    )


class WorkerSpec(T9kModel):
    """The workers: how many, how many training processes each, what they train."""

    replicas: int = Field(
        default=1, ge=1, le=MAX_REPLICAS, description="Number of workers. Defaults to 1."
    )
    proc_per_worker: int = proc_per_worker_field()
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
        worker_containers(template)
        return template
