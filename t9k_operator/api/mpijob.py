"""The MPIJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

An MPIJob runs Open MPI's ``mpirun`` over ssh:

* ``spec.worker.replicas`` workers (``<job>-worker-<i>``), built from
  ``spec.worker.template``; the container ``mpi-worker`` (else the template's
  first) runs sshd (``spec.ssh.sshdPath``, the job's key at
  ``spec.ssh.sshAuthMountPath``) whatever its command says, and waits;
* one launcher (``<job>-launcher``), built from the same template, whose
  container runs ``mpirun`` with the workers' hostfile, ``spec.mca`` as
  ``--mca`` pairs, ``--prefix spec.mpiHome``, ``spec.worker.extraMPIArgs`` and
  then ``spec.worker.cmd``. The job ends when mpirun does: exit 0 completes it,
  any other exit fails it.

No pod is ever restarted (a rank cannot rejoin a running ``mpirun``), so the
API has no restart policy nor backoff limit; ``spec.runPolicy.cleanUpWorkers``
deletes the workers once the job has ended, keeping the launcher for its log.
Each invariant is a :class:`~t9k_operator.api.rules.Rule`, checked at
admission by its CEL and on parsing by its Python side, with the same message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from t9k_operator.api import specs
from t9k_operator.api.base import T9kModel
from t9k_operator.api.colossalai_replicas import (
    AUTH_MOUNT_FORBIDDEN,
    AUTH_MOUNT_PLACE_RULE,
    MAX_PATH_LENGTH,
    SSHD_PATH_RULE,
    absolute_path_rule,
    worker_containers,
)
from t9k_operator.api.colossalai_replicas import (
    MSG_NO_CONTAINER as MSG_NO_CONTAINER,
)
from t9k_operator.api.colossalai_replicas import (
    MSG_SSHD_PATH as MSG_SSHD_PATH,
)
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    MSG_LAUNCHER_POD_NAME_LENGTH,
    JobObject,
    job_crd,
    launcher_pod_names_fit,
    launcher_pod_names_fit_cel,
    pod_name_length_rule,
)
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    MAX_REPLICAS,
    NOT_REQUIRED,
    Arg,
    preserved_object_schema,
)
from t9k_operator.api.specs import (
    RESUME_SPECS_REMOVAL_RULE,
    DebugMode,
    RunMode,
    SchedulerPolicy,
    scheduler_field,
)
from t9k_operator.api.status import JobStatus
from t9k_operator.api.template import PodTemplate, named_or_first_container, pod_template_field

KIND = "MPIJob"
PLURAL = "mpijobs"
LAUNCHER = "launcher"
"""Replica type of the launcher; its pod is named ``<job>-launcher``."""
WORKER = "worker"
"""Replica type of the workers; their pods are named ``<job>-worker-<i>``."""
TRAINING_CONTAINER = "mpi-worker"
"""The container that runs sshd (workers) and mpirun (launcher): this one, else the first."""
DEFAULT_AUTH_MOUNT_PATH = "/root/.ssh"
DEFAULT_SSHD_PATH = "/usr/sbin/sshd"

MSG_AUTH_MOUNT_PATH = (
    "spec.ssh.sshAuthMountPath must be an absolute path (start with /): the job's ssh key "
    "is mounted there in the workers and the launcher"
)
MSG_AUTH_MOUNT_PLACE = (
    "spec.ssh.sshAuthMountPath must be a plain directory path (not /, no // nor . or .. "
    "parts) outside " + ", ".join(AUTH_MOUNT_FORBIDDEN) + ": sshd refuses keys below a "
    "directory others may write, and /t9k is the operator's"
)
MSG_MPI_HOME = (
    "spec.mpiHome must be an absolute path (start with /): it is mpirun's --prefix, "
    "where the workers find Open MPI's orted"
)
MSG_MCA_KEY = (
    "spec.mca: every key must be an MCA parameter name (letters, digits and _ only, e.g. "
    "btl or plm_rsh_args); its value is passed as mpirun --mca <key> <value>"
)
MSG_NAMELESS_CONTAINER = (
    "spec.worker.template.spec.containers: a container may be left without a name only when "
    "it is the only one (the operator names it mpi-worker)"
)
MSG_POD_NAME_LENGTH = MSG_LAUNCHER_POD_NAME_LENGTH
MSG_RESUME_ARGS_NEED_COMMAND = (
    "spec.runMode.pause.resumeSpecs[].args needs a command beside it: an MPIJob's launcher "
    "runs the operator's mpirun script and its workers run sshd, neither taking arguments, "
    "so args alone would be dropped; give spec.runMode.pause.resumeSpecs[].command too"
)


AUTH_MOUNT_PATH_RULE = absolute_path_rule(MSG_AUTH_MOUNT_PATH)
AUTH_PLACE_RULE: Rule[str] = replace(AUTH_MOUNT_PLACE_RULE, message=MSG_AUTH_MOUNT_PLACE)
"""ColossalAIJob's rule on where a key may go, with this kind's field name."""
MPI_HOME_RULE = absolute_path_rule(MSG_MPI_HOME)
NAMELESS_CONTAINER_RULE: Rule[list[Any]] = Rule(
    "size(self) == 1 || self.all(c, has(c.name) && size(c.name) > 0)",
    MSG_NAMELESS_CONTAINER,
    lambda containers: len(containers) == 1 or all(c.get("name") for c in containers),
)
MCA_KEY_PATTERN = "^[A-Za-z0-9_]+$"
MCA_KEYS_RULE: Rule[dict[str, str]] = Rule(
    f"self.all(k, k.matches('{MCA_KEY_PATTERN}'))",
    MSG_MCA_KEY,
    lambda mca: all(re.fullmatch(MCA_KEY_PATTERN, k) for k in mca),
)


# -- spec.ssh, spec.worker, spec.runPolicy, spec.runMode ---------------------------------------


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
    sshd_path: Annotated[str, Rules(SSHD_PATH_RULE)] = Field(
        default=DEFAULT_SSHD_PATH,
        min_length=1,
        max_length=MAX_PATH_LENGTH,
        description=(
            "Absolute path of the sshd program in the worker image (sshd must be started by "
            "its absolute path). Defaults to /usr/sbin/sshd."
        ),
    )


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


class MPIRunPolicy(T9kModel):
    """What is removed when the job ends, and how it may go without progress."""

    clean_up_workers: bool = Field(
        default=False,
        description=(
            "Delete the workers once the job has ended. The launcher is kept: its log tells "
            "how the MPI program went. Defaults to false."
        ),
    )
    progress: ProgressPolicy | None = progress_field(
        "the T9k API (an MPIJob restarts no pod: onHang Restart fails it as Fail does)"
    )


class MPIRunMode(RunMode):
    """Special run modes. Unset: the job runs normally."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        specs.resume_args_need_command_rule(MSG_RESUME_ARGS_NEED_COMMAND),
    )

    debug: DebugMode | None = Field(
        default=None,
        description=(
            "Debug mode: deploy the launcher and the workers (with the job's ssh key and "
            "hostfile) without starting mpirun; spec.worker.cmd may then be left out. The "
            "launcher runs `sleep inf` and the workers sshd, unless replicaSpecs[].command "
            "says otherwise."
        ),
    )


# -- the spec ---------------------------------------------------------------------------------


class MPIJobSpec(T9kModel):
    """Desired state of an MPIJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (RESUME_SPECS_REMOVAL_RULE,)

    worker: WorkerConfig = Field(description="Specifications for the worker replicas.")
    mca: Annotated[dict[str, str], Rules(MCA_KEYS_RULE)] = Field(
        default={},
        description=(
            "Open MPI's Modular Component Architecture (MCA) parameters, each passed as "
            "mpirun --mca <key> <value> (e.g. btl: ^openib, pml: ob1)."
        ),
    )
    ssh: SSHConfig = Field(
        default_factory=SSHConfig,
        description="Where the workers' sshd and the job's ssh key are.",
    )
    run_policy: MPIRunPolicy = Field(
        default_factory=MPIRunPolicy,
        description="Clean-up of the workers once the job has ended.",
    )
    run_mode: MPIRunMode | None = Field(
        default=None,
        description="Debug or pause mode. Unset: the job runs mpirun at once.",
    )
    mpi_home: Annotated[str, Rules(MPI_HOME_RULE)] | None = Field(
        default=None,
        alias="mpiHome",
        max_length=MAX_PATH_LENGTH,
        description=(
            "Open MPI installation path in the image (mpirun --prefix): the workers find "
            "orted and Open MPI's libraries below it. Unset: no --prefix, orted must be on "
            "the workers' default PATH."
        ),
    )
    scheduler: SchedulerPolicy | None = scheduler_field()

    @property
    def debug_enabled(self) -> bool:
        return specs.debug_enabled(self.run_mode)


# -- status and the object --------------------------------------------------------------------


class MPIJobStatus(JobStatus):
    """Observed state of an MPIJob (tasks launcher and worker). Completed means mpirun
    ended with 0 (the launcher's log tells how the program went); Failed, that it did
    not or a pod could not run."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    launcher_pod_names_fit_cel(LAUNCHER, WORKER), MSG_POD_NAME_LENGTH
)


class MPIJobObject(JobObject[MPIJobSpec, MPIJobStatus]):
    """An MPIJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (JOB_NAME_RULE, POD_NAME_LENGTH_RULE)

    def pod_names_fit(self) -> bool:
        """Whether ``<job>-launcher`` and ``<job>-worker-<last index>`` fit in a DNS label."""
        return launcher_pod_names_fit(self.name, LAUNCHER, WORKER, self.spec.worker.replicas)


CRD = job_crd(
    kind=KIND,
    plural=PLURAL,
    singular="mpijob",
    short_names=("mpij",),
    spec_model=MPIJobSpec,
    status_model=MPIJobStatus,
    description=(
        "MPIJob runs an Open MPI program: workers that run sshd, and a launcher pod running "
        "mpirun, which starts the program on every worker over ssh."
    ),
    root_rules=MPIJobObject.rules,
)
