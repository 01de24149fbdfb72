"""The MPIJob kind (batch.tensorstack.dev/v1beta1): spec, status, CRD.

An MPIJob runs Open MPI's ``mpirun`` over ssh: workers (``<job>-worker-<i>``)
run sshd whatever their command says, and one launcher (``<job>-launcher``)
runs ``mpirun`` with the workers' hostfile. The job ends when mpirun does:
exit 0 completes it, any other exit fails it.

A spec is written in one of two layouts, never both (:data:`MIXED_LAYOUTS_RULE`):
T9k's 2025 one, ``spec.replicaSpecs`` and ``spec.mpiConfig``
(:mod:`~t9k_operator.api.mpijob_replicas`), or its older one, ``spec.worker``,
``spec.mca`` and ``spec.mpiHome`` (:mod:`~t9k_operator.api.mpijob_worker`).
:attr:`MPIJobSpec.run` reads either into the one
:class:`~t9k_operator.api.mpijob_replicas.MPIRun` everything else reads.
The older layout restarts no pod (a rank cannot rejoin a running ``mpirun``);
the 2025 one's ``restartPolicy`` may recreate a replica.
``spec.runPolicy.cleanUpWorkers`` deletes the workers once the job has ended,
keeping the launcher for its log.
Each invariant is a :class:`~t9k_operator.api.rules.Rule`, checked at
admission by its CEL and on parsing by its Python side, with the same message.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from t9k_operator.api import specs
from t9k_operator.api.base import T9kModel
from t9k_operator.api.colossalai_replicas import (
    MAX_PATH_LENGTH,
    absolute_path_rule,
)
from t9k_operator.api.colossalai_replicas import (
    MSG_NO_CONTAINER as MSG_NO_CONTAINER,
)
from t9k_operator.api.colossalai_replicas import (
    MSG_SSHD_PATH as MSG_SSHD_PATH,
)
from t9k_operator.api.colossalai_replicas import (
    SSHD_PATH_RULE as SSHD_PATH_RULE,
)
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    MSG_LAUNCHER_POD_NAME_LENGTH,
    JobObject,
    job_crd,
    last_index_cel,
    launcher_pod_names_fit,
    launcher_pod_names_fit_cel,
    pod_name_fits_cel,
    pod_name_length_rule,
)
from t9k_operator.api.managed_by import MANAGED_BY_IMMUTABLE_RULE, ManagedBy, managed_by_field
from t9k_operator.api.mpijob_replicas import (
    MPIConfig,
    MPIRun,
    ReplicaSpecs,
    mca_keys_rule,
    run_of_replica_specs,
)
from t9k_operator.api.mpijob_worker import (
    AUTH_MOUNT_PATH_RULE as AUTH_MOUNT_PATH_RULE,
)
from t9k_operator.api.mpijob_worker import (
    AUTH_PLACE_RULE as AUTH_PLACE_RULE,
)
from t9k_operator.api.mpijob_worker import (
    MSG_AUTH_MOUNT_PATH as MSG_AUTH_MOUNT_PATH,
)
from t9k_operator.api.mpijob_worker import (
    MSG_AUTH_MOUNT_PLACE as MSG_AUTH_MOUNT_PLACE,
)
from t9k_operator.api.mpijob_worker import (
    MSG_NAMELESS_CONTAINER as MSG_NAMELESS_CONTAINER,
)
from t9k_operator.api.mpijob_worker import (
    NAMELESS_CONTAINER_RULE as NAMELESS_CONTAINER_RULE,
)
from t9k_operator.api.mpijob_worker import (
    TRAINING_CONTAINER as TRAINING_CONTAINER,
)
from t9k_operator.api.mpijob_worker import (
    ProcessRecovery as ProcessRecovery,
)
from t9k_operator.api.mpijob_worker import (
    SSHConfig,
    WorkerConfig,
    older_run,
)
from t9k_operator.api.mpijob_worker import (
    training_container as training_container,
)
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.specs import (
    RESUME_SPECS_REMOVAL_RULE,
    DebugMode,
    RunMode,
    SchedulerPolicy,
    scheduler_field,
)
from t9k_operator.api.status import JobStatus

KIND = "MPIJob"
PLURAL = "mpijobs"
LAUNCHER = "launcher"
"""Replica type of the launcher; its pod is named ``<job>-launcher``."""
WORKER = "worker"
"""Replica type of the workers; their pods are named ``<job>-worker-<i>``."""
MSG_MPI_HOME = (
    "spec.mpiHome must be an absolute path (start with /): it is mpirun's --prefix, "
    "where the workers find Open MPI's orted"
)
MSG_MCA_KEY = (
    "spec.mca: every key must be an MCA parameter name (letters, digits and _ only, e.g. "
    "btl or plm_rsh_args); its value is passed as mpirun --mca <key> <value>"
)
MSG_POD_NAME_LENGTH = MSG_LAUNCHER_POD_NAME_LENGTH
MSG_MIXED_LAYOUTS = (
    "spec mixes MPIJob's two layouts: spec.replicaSpecs and spec.mpiConfig (the 2025 layout) "
    "take the place of spec.worker, spec.mca and spec.mpiHome (the older layout); write the "
    "job in one of them"
)
MSG_NO_LAYOUT = (
    "spec needs the workers: spec.replicaSpecs with an entry of type worker (the 2025 "
    "layout, with spec.mpiConfig) or spec.worker (the older layout)"
)
MSG_RESUME_ARGS_NEED_COMMAND = (
    "spec.runMode.pause.resumeSpecs[].args needs a command beside it: an MPIJob's launcher "
    "runs the operator's mpirun script and its workers run sshd, neither taking arguments, "
    "so args alone would be dropped; give spec.runMode.pause.resumeSpecs[].command too"
)


MPI_HOME_RULE = absolute_path_rule(MSG_MPI_HOME)
MCA_KEYS_RULE = mca_keys_rule(MSG_MCA_KEY)


# -- spec.ssh, spec.worker, spec.runPolicy, spec.runMode ---------------------------------------


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


def _older_layout(spec: MPIJobSpec) -> bool:
    return spec.worker is not None or spec.mca is not None or spec.mpi_home is not None


def _2025_layout(spec: MPIJobSpec) -> bool:
    return spec.replica_specs is not None or spec.mpi_config is not None


MIXED_LAYOUTS_RULE: Rule[MPIJobSpec] = Rule(
    "!(has(self.worker) || has(self.mca) || has(self.mpiHome)) || "
    "!(has(self.replicaSpecs) || has(self.mpiConfig))",
    MSG_MIXED_LAYOUTS,
    lambda spec: not (_older_layout(spec) and _2025_layout(spec)),
)
NO_LAYOUT_RULE: Rule[MPIJobSpec] = Rule(
    "has(self.worker) || has(self.replicaSpecs)",
    MSG_NO_LAYOUT,
    lambda spec: spec.worker is not None or spec.replica_specs is not None,
)


class MPIJobSpec(T9kModel):
    """Desired state of an MPIJob, in either layout: ``spec.replicaSpecs`` and
    ``spec.mpiConfig`` (T9k's 2025 manual), or ``spec.worker``, ``spec.mca`` and
    ``spec.mpiHome`` (its older one). :attr:`run` reads either."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        RESUME_SPECS_REMOVAL_RULE,
        MIXED_LAYOUTS_RULE,
        NO_LAYOUT_RULE,
    )

    replica_specs: ReplicaSpecs | None = Field(
        default=None,
        description=(
            "The 2025 layout: the workers (an entry of type worker) and the launcher (an "
            "entry of type launcher; left out or with an empty template, the operator's "
            "launcher). Goes with spec.mpiConfig, not with spec.worker."
        ),
    )
    mpi_config: MPIConfig | None = Field(
        default=None,
        description=(
            "The 2025 layout: how the launcher's mpirun starts the program. Goes with "
            "spec.replicaSpecs, not with spec.mca or spec.mpiHome."
        ),
    )
    worker: WorkerConfig | None = Field(
        default=None,
        description=(
            "The older layout: the worker replicas and their program. Goes with spec.mca "
            "and spec.mpiHome, not with spec.replicaSpecs."
        ),
    )
    mca: Annotated[dict[str, str], Rules(MCA_KEYS_RULE)] | None = Field(
        default=None,
        description=(
            "The older layout: Open MPI's Modular Component Architecture (MCA) parameters, "
            "each passed as mpirun --mca <key> <value> (e.g. btl: ^openib, pml: ob1)."
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
            "The older layout: Open MPI's installation path in the image (mpirun --prefix): "
            "the workers find orted and Open MPI's libraries below it. Unset: no --prefix, "
            "orted must be on the workers' default PATH."
        ),
    )
    scheduler: SchedulerPolicy | None = scheduler_field()
    managed_by: ManagedBy | None = managed_by_field()

    @property
    def debug_enabled(self) -> bool:
        return specs.debug_enabled(self.run_mode)

    @property
    def run(self) -> MPIRun:
        """What the operator runs, read from whichever layout the spec is in."""
        if self.replica_specs is not None:
            return run_of_replica_specs(self.mpi_config, self.replica_specs)
        assert self.worker is not None  # NO_LAYOUT_RULE
        return older_run(self.worker, self.mca or {}, self.mpi_home)


# -- status and the object --------------------------------------------------------------------


class MPIJobStatus(JobStatus):
    """Observed state of an MPIJob (tasks launcher and worker). Completed means mpirun
    ended with 0 (the launcher's log tells how the program went); Failed, that it did
    not or a pod could not run."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    launcher_pod_names_fit_cel(LAUNCHER, WORKER)
    + " && (!has(self.spec.replicaSpecs) || self.spec.replicaSpecs.all(r, r.type != 'worker' || "
    + pod_name_fits_cel(f"size('-{WORKER}-')", last_index_cel("r.replicas"))
    + "))",
    MSG_POD_NAME_LENGTH,
)


class MPIJobObject(JobObject[MPIJobSpec, MPIJobStatus]):
    """An MPIJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        JOB_NAME_RULE,
        POD_NAME_LENGTH_RULE,
        MANAGED_BY_IMMUTABLE_RULE,
    )

    def pod_names_fit(self) -> bool:
        """Whether ``<job>-launcher`` and ``<job>-worker-<last index>`` fit in a DNS label."""
        return launcher_pod_names_fit(self.name, LAUNCHER, WORKER, self.spec.run.replicas)


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
