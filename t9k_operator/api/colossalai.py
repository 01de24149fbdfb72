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

T9k's 2025 layout states the same job as ``spec.torchConfig`` (procPerWorker,
script, extraArgs) and ``spec.replicaSpecs[]`` (a worker entry, and a launcher
entry whose pod template the launcher pod is built from); one object uses one
layout (:data:`ONE_LAYOUT_RULE`, :data:`SOME_LAYOUT_RULE`). The spec reads both
the same way: :attr:`ColossalAIJobSpec.workers` and
:attr:`ColossalAIJobSpec.launcher_template` are all the builders and the kind
read of the replicas.

The replicas' parts of the spec (``spec.ssh``, ``spec.launcher``,
``spec.worker``) are in :mod:`t9k_operator.api.colossalai_replicas` (named
here too), the 2025 layout's in :mod:`t9k_operator.api.colossalai_layout`;
this module holds the run policy and modes, the spec as a whole,
the status, the object and the CRD. Each invariant is a
:class:`~t9k_operator.api.rules.Rule`, checked at admission by its CEL and on
parsing by its Python side, with the same message.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

from pydantic import Field

from t9k_operator.api import specs
from t9k_operator.api.base import T9kModel
from t9k_operator.api.colossalai_layout import (
    ReplicaSpecs,
    TorchConfig,
    index_of,
    launcher_template,
    replica_spec_field,
    workers_of,
)
from t9k_operator.api.colossalai_replicas import (
    DEFAULT_AUTH_MOUNT_PATH,
    DEFAULT_SSHD_PATH,
    LAUNCHER,
    MSG_AUTH_MOUNT_PATH,
    MSG_AUTH_MOUNT_PLACE,
    MSG_ENV_NAME,
    MSG_ENV_VALUE,
    MSG_NO_CONTAINER,
    MSG_SSHD_PATH,
    TRAINING_CONTAINER,
    WORKER,
    LauncherSpec,
    SSHConfig,
    WorkerSpec,
    training_container,
)
from t9k_operator.api.crd import (
    MSG_LAUNCHER_POD_NAME_LENGTH,
    JobObject,
    job_crd,
    last_index_cel,
    launcher_pod_names_fit,
    launcher_pod_names_fit_cel,
    pod_name_fits_cel,
    pod_name_length_rule,
)
from t9k_operator.api.managed_by import ManagedBy, managed_by_field
from t9k_operator.api.progress import ProgressPolicy, progress_field
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import MAX_INT32
from t9k_operator.api.specs import (
    DEBUG_ON_CEL,
    RESUME_SPECS_REMOVAL_RULE,
    DebugMode,
    RunMode,
    SchedulerPolicy,
    deadline_field,
    scheduler_field,
)
from t9k_operator.api.tensorboard import (
    T9kJobStatus,
    TensorBoardSpec,
    t9k_job_rules,
    tensorboard_spec_field,
)

# The replicas' parts live in colossalai_replicas; named here too, for the modules
# that import them from the kind. (Every name this module defines is public as well.)
__all__ = [
    "DEFAULT_AUTH_MOUNT_PATH",
    "DEFAULT_SSHD_PATH",
    "LAUNCHER",
    "MSG_AUTH_MOUNT_PATH",
    "MSG_AUTH_MOUNT_PLACE",
    "MSG_ENV_NAME",
    "MSG_ENV_VALUE",
    "MSG_NO_CONTAINER",
    "MSG_SSHD_PATH",
    "TRAINING_CONTAINER",
    "WORKER",
    "LauncherSpec",
    "ReplicaSpecs",
    "SSHConfig",
    "TorchConfig",
    "WorkerSpec",
    "training_container",
]

KIND = "ColossalAIJob"
PLURAL = "colossalaijobs"

MSG_COMMAND_REQUIRED = (
    "spec.worker.command (the training script and its arguments) is required "
    "unless spec.runMode.debug.enabled is true"
)
MSG_POD_NAME_LENGTH = MSG_LAUNCHER_POD_NAME_LENGTH


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
    "spec.runMode.pause.resumeSpecs[].command too, or change spec.worker.command "
    "(spec.torchConfig.script)"
)


class ColossalAIRunMode(RunMode):
    """Special run modes. Unset: the job trains normally."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        specs.resume_args_need_command_rule(MSG_RESUME_ARGS_NEED_COMMAND),
    )

    debug: DebugMode | None = Field(
        default=None,
        description=(
            "Debug mode: deploy the launcher and the workers (with the job's ssh key and "
            "hostfile, workers running sshd) without starting training; spec.worker.command "
            "(spec.torchConfig.script) may then be left out. Each replica (type launcher or "
            "worker) runs `sleep inf` "
            "unless replicaSpecs[].command says otherwise."
        ),
    )


# -- the spec -------------------------------------------------------------------------------

COMMAND_REQUIRED_RULE: Rule[ColossalAIJobSpec] = Rule(
    f"!has(self.worker) || ({DEBUG_ON_CEL}) || "
    "(has(self.worker.command) && size(self.worker.command) > 0)",
    MSG_COMMAND_REQUIRED,
    lambda spec: spec.worker is None or spec.debug_enabled or bool(spec.worker.command),
    field_path=".worker.command",
)
MSG_SCRIPT_REQUIRED = (
    "spec.torchConfig.script (the training script and its arguments) is required "
    "with spec.replicaSpecs unless spec.runMode.debug.enabled is true"
)
SCRIPT_REQUIRED_RULE: Rule[ColossalAIJobSpec] = Rule(
    f"!has(self.replicaSpecs) || ({DEBUG_ON_CEL}) || (has(self.torchConfig) && "
    "has(self.torchConfig.script) && size(self.torchConfig.script) > 0)",
    MSG_SCRIPT_REQUIRED,
    lambda spec: (
        spec.replica_specs is None
        or spec.debug_enabled
        or bool(spec.torch_config and spec.torch_config.script)
    ),
    field_path=".torchConfig",
)
MSG_ONE_LAYOUT = (
    "a ColossalAIJob has one layout: spec.torchConfig and spec.replicaSpecs (T9k's 2025 "
    "layout) cannot be mixed with spec.launcher and spec.worker (the older layout)"
)
ONE_LAYOUT_RULE: Rule[ColossalAIJobSpec] = Rule(
    "!(has(self.torchConfig) || has(self.replicaSpecs)) || "
    "!(has(self.launcher) || has(self.worker))",
    MSG_ONE_LAYOUT,
    lambda spec: (
        (spec.torch_config is None and spec.replica_specs is None)
        or (spec.launcher is None and spec.worker is None)
    ),
)
MSG_SOME_LAYOUT = (
    "a ColossalAIJob needs its replicas: spec.replicaSpecs (with spec.torchConfig), or "
    "spec.launcher and spec.worker together"
)
SOME_LAYOUT_RULE: Rule[ColossalAIJobSpec] = Rule(
    "has(self.replicaSpecs) || (has(self.launcher) && has(self.worker))",
    MSG_SOME_LAYOUT,
    lambda spec: (
        spec.replica_specs is not None or (spec.launcher is not None and spec.worker is not None)
    ),
)


class ColossalAIJobSpec(T9kModel):
    """Desired state of a ColossalAIJob, in either of its layouts."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        ONE_LAYOUT_RULE,
        SOME_LAYOUT_RULE,
        COMMAND_REQUIRED_RULE,
        SCRIPT_REQUIRED_RULE,
        RESUME_SPECS_REMOVAL_RULE,
    )

    ssh: SSHConfig = Field(
        default_factory=SSHConfig,
        description=(
            "Where the workers' sshd and the job's ssh key are. Unset: sshd at "
            "/usr/sbin/sshd, key at /root/.ssh."
        ),
    )
    launcher: LauncherSpec | None = Field(
        default=None,
        description=(
            "The older layout's launcher, a pod the operator builds from these settings; it "
            "runs colossalai run, which starts the training on every worker over ssh. The "
            "job succeeds or fails with it. Goes with spec.worker; not with "
            "spec.replicaSpecs."
        ),
    )
    worker: WorkerSpec | None = Field(
        default=None,
        description=(
            "The older layout's workers. Each runs sshd and waits for the launcher to start "
            "training. Goes with spec.launcher; not with spec.replicaSpecs."
        ),
    )
    torch_config: TorchConfig | None = Field(
        default=None,
        description=(
            "The 2025 layout's training settings (processes per worker, the script, torchrun "
            "options), with spec.replicaSpecs."
        ),
    )
    replica_specs: ReplicaSpecs | None = replica_spec_field()
    run_policy: ColossalAIRunPolicy = Field(
        default_factory=ColossalAIRunPolicy,
        description=(
            "Deadline of the job and clean-up of its workers (backoffLimit is stored but "
            "not acted on)."
        ),
    )
    scheduler: SchedulerPolicy | None = scheduler_field()
    managed_by: ManagedBy | None = managed_by_field()
    run_mode: ColossalAIRunMode | None = Field(
        default=None,
        description=(
            "Debug or pause mode. Unset: train normally. The debug-mode default command "
            "is `sleep inf`."
        ),
    )
    tensorboard_spec: TensorBoardSpec | None = tensorboard_spec_field()

    @property
    def debug_enabled(self) -> bool:
        return specs.debug_enabled(self.run_mode)

    # -- the one view of both layouts: what the builders and the kind read ----------

    @cached_property
    def workers(self) -> WorkerSpec:
        """The workers, whichever layout states them."""
        if self.replica_specs is not None:
            return workers_of(self.replica_specs, self.torch_config)
        if self.worker is None:  # the rules refuse such a spec
            raise ValueError(MSG_SOME_LAYOUT)
        return self.worker

    @property
    def launcher_template(self) -> dict[str, Any] | None:
        """The 2025 layout's launcher pod template ({} when it gives none); None in
        the older layout, whose launcher is ``spec.launcher``."""
        if self.replica_specs is None:
            return None
        return launcher_template(self.replica_specs)

    def path_of(self, replica_type: str) -> str:
        """Where the spec states ``replica_type`` (launcher or worker), for messages."""
        if self.replica_specs is None:
            return f"spec.{replica_type}"
        i = index_of(self.replica_specs, replica_type)
        return f"spec.replicaSpecs[{i}]" if i is not None else "spec.replicaSpecs"


def pod_names_fit(job_name: str, spec: ColossalAIJobSpec) -> bool:
    """Whether ``<job>-launcher`` and ``<job>-worker-<last index>`` fit in a DNS label."""
    return launcher_pod_names_fit(job_name, LAUNCHER, WORKER, spec.workers.replicas)


# -- status and the object --------------------------------------------------------------------


class ColossalAIJobStatus(T9kJobStatus):
    """Observed state of a ColossalAIJob, written by the operator (tasks launcher and worker)."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(
    launcher_pod_names_fit_cel(LAUNCHER, WORKER)
    + " && (!has(self.spec.replicaSpecs) || self.spec.replicaSpecs.all(r, "
    + f"r.type != '{WORKER}' || !has(r.replicas) || "
    + pod_name_fits_cel(f"size('-{WORKER}-')", last_index_cel("r.replicas"))
    + "))",
    MSG_POD_NAME_LENGTH,
)


class ColossalAIJobObject(JobObject[ColossalAIJobSpec, ColossalAIJobStatus]):
    """A ColossalAIJob as stored by the API server."""

    rules: ClassVar[tuple[Rule[Any], ...]] = t9k_job_rules(POD_NAME_LENGTH_RULE)

    def pod_names_fit(self) -> bool:
        return pod_names_fit(self.name, self.spec)


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
    root_rules=ColossalAIJobObject.rules,
)
