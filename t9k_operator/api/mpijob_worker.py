"""MPIJob's ``spec.ssh`` and its older layout's ``spec.worker``.

``spec.ssh`` is the same in both layouts. ``spec.worker`` (with ``spec.mca``
and ``spec.mpiHome``, which the spec holds) is the older manual's: the
workers' count and template, mpirun's further options and the program, and
two shorthands older files carry: ``processesPerWorker`` (``mpirun -N``) and
``processRecovery`` (``--enable-recovery --max-restarts``).
:func:`older_run` reads it into the :class:`MPIRun` the operator runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any

from pydantic import Field, field_validator

from t9k_operator.api.base import T9kModel
from t9k_operator.api.colossalai_replicas import (
    AUTH_MOUNT_FORBIDDEN,
    AUTH_MOUNT_PLACE_RULE,
    MAX_PATH_LENGTH,
    SshdPath,
    absolute_path_rule,
    sshd_path_field,
    worker_containers,
)
from t9k_operator.api.mpijob_replicas import MPIRun, Restart
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    MAX_INT32,
    MAX_PROCS,
    MAX_REPLICAS,
    NOT_REQUIRED,
    Arg,
    preserved_object_schema,
)
from t9k_operator.api.template import PodTemplate, named_or_first_container, pod_template_field

TRAINING_CONTAINER = "mpi-worker"
"""The container that runs sshd (workers) and mpirun (launcher): this one, else the first."""
DEFAULT_AUTH_MOUNT_PATH = "/root/.ssh"

MSG_AUTH_MOUNT_PATH = (
    "spec.ssh.sshAuthMountPath must be an absolute path (start with /): the job's ssh key "
    "is mounted there in the workers and the launcher"
)
MSG_AUTH_MOUNT_PLACE = (
    "spec.ssh.sshAuthMountPath must be a plain directory path (not /, no // nor . or .. "
    "parts) outside " + ", ".join(AUTH_MOUNT_FORBIDDEN) + ": sshd refuses keys below a "
    "directory others may write, and /t9k is the operator's"
)

MSG_NAMELESS_CONTAINER = (
    "spec.worker.template.spec.containers: a container may be left without a name only when "
    "it is the only one (the operator names it mpi-worker)"
)

AUTH_MOUNT_PATH_RULE = absolute_path_rule(MSG_AUTH_MOUNT_PATH)
AUTH_PLACE_RULE: Rule[str] = replace(AUTH_MOUNT_PLACE_RULE, message=MSG_AUTH_MOUNT_PLACE)
"""ColossalAIJob's rule on where a key may go, with this kind's field name."""

NAMELESS_CONTAINER_RULE: Rule[list[Any]] = Rule(
    "size(self) == 1 || self.all(c, has(c.name) && size(c.name) > 0)",
    MSG_NAMELESS_CONTAINER,
    lambda containers: len(containers) == 1 or all(c.get("name") for c in containers),
)


class SSHConfig(T9kModel):
    """How the workers run sshd for the launcher. Unset: the defaults below."""

    ssh_auth_mount_path: Annotated[str, Rules(AUTH_MOUNT_PATH_RULE, AUTH_PLACE_RULE)] = Field(
        default=DEFAULT_AUTH_MOUNT_PATH,
        min_length=1,
        max_length=MAX_PATH_LENGTH,
        description=(
            "Absolute path of the ssh directory, in the workers and the launcher, that holds "
            "the job's own key, authorized_keys and ssh config (the operator makes it a 0700 "
            "directory with 0600 copies of the files, as sshd's StrictModes demands). "
            'Defaults to "/root/.ssh".'
        ),
    )
    sshd_path: SshdPath = sshd_path_field()


_TEMPLATE_SCHEMA: dict[str, Any] = {
    "required": ["spec"],
    "properties": {
        "spec": {
            **preserved_object_schema(
                "Pod spec of the workers and the launcher, kept as written.",
                {
                    "containers": {
                        "type": "array",
                        "minItems": 1,
                        # a list, not a map by name: the operator names a lone nameless one
                        "x-kubernetes-list-type": "atomic",
                        "x-kubernetes-validations": [NAMELESS_CONTAINER_RULE.cel_rule()],
                        "description": (
                            "Containers of the pods, at least one. The one named mpi-worker "
                            "(else the first) runs sshd in the workers and mpirun in the "
                            "launcher; its command and args are not used."
                        ),
                        "items": {
                            "type": "object",
                            "additionalProperties": True,
                            "description": (
                                "A container, kept as written; a lone container may be left "
                                "without a name: it is then named mpi-worker."
                            ),
                            NOT_REQUIRED: ["name"],
                        },
                    }
                },
            ),
            "required": ["containers"],
        }
    },
}


def training_container(template: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The template's container named mpi-worker, else its first; None without containers."""
    return named_or_first_container(template, TRAINING_CONTAINER)


class ProcessRecovery(T9kModel):
    """Open MPI's own recovery of a failed process (the older layout's shorthand)."""

    enable: bool = Field(
        default=False,
        description="Pass mpirun --enable-recovery and --max-restarts limit. Defaults to false.",
    )
    limit: int = Field(
        default=0,
        ge=0,
        le=MAX_INT32,
        description=(
            "mpirun --max-restarts: the most times mpirun restarts a failed process. Defaults "
            "to 0: none is restarted, yet with recovery on a failed process no longer stops "
            "the others (see docs/kinds.md)."
        ),
    )


class WorkerConfig(T9kModel):
    """The workers, and what mpirun runs on them."""

    replicas: int = Field(
        default=1, ge=1, le=MAX_REPLICAS, description="Number of workers. Defaults to 1."
    )
    extra_mpi_args: list[Arg] = Field(
        default=[],
        alias="extraMPIArgs",
        description=(
            "Further mpirun options (e.g. [-N, '3'] for 3 processes per worker, "
            "[-bind-to, none]), placed before the program. Each worker has, unless they say "
            "otherwise, as many slots as it has cores (Open MPI's default for a hostfile "
            "line without slots)."
        ),
    )
    processes_per_worker: int | None = Field(
        default=None,
        ge=1,
        le=MAX_PROCS,
        description=(
            "Processes mpirun starts on each worker (mpirun -N n), each worker's hostfile "
            "line then having as many slots. Unset: extraMPIArgs say, else one per core."
        ),
    )
    process_recovery: ProcessRecovery | None = Field(
        default=None,
        description=(
            "Restarting a failed process in place (mpirun --enable-recovery --max-restarts "
            "limit): mpirun restarts it, no pod is recreated. Unset: off."
        ),
    )
    cmd: list[Arg] | None = Field(
        default=None,
        description=(
            "The MPI program and its arguments (e.g. [python3, train.py]), started by mpirun "
            "on every worker once all of them accept ssh, in the launcher's working "
            "directory. Needed unless debug mode is on: without it the job fails, naming "
            "this field."
        ),
    )
    template: PodTemplate = pod_template_field(
        "workers and the launcher",
        _TEMPLATE_SCHEMA,
        more=(
            "; spec.containers must hold at least one container. The launcher is built from "
            "it too, resources included (its mpi-worker container runs mpirun)."
        ),
    )

    @field_validator("template")
    @classmethod
    def _check_containers(cls, template: dict[str, Any]) -> dict[str, Any]:
        NAMELESS_CONTAINER_RULE.check(worker_containers(template))
        return template


def older_run(worker: WorkerConfig, mca: Mapping[str, str], home: str | None) -> MPIRun:
    """The older layout's :class:`MPIRun`: ``spec.worker``, ``spec.mca``, ``spec.mpiHome``."""
    recovery = worker.process_recovery
    return MPIRun(
        replicas=worker.replicas,
        worker_template=worker.template,
        worker_container=TRAINING_CONTAINER,
        launcher_template=None,
        launcher_container=TRAINING_CONTAINER,
        mca=mca,
        home=home,
        extra_args=tuple(worker.extra_mpi_args),
        program=tuple(worker.cmd or ()),
        worker_field="spec.worker.template",
        launcher_field="spec.worker.template",
        program_field="spec.worker.cmd",
        processes_per_worker=worker.processes_per_worker,
        max_restarts=recovery.limit if recovery is not None and recovery.enable else None,
        worker_restart=Restart(),
        launcher_restart=Restart(),
    )
