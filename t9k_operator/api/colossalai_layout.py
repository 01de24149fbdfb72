"""A ColossalAIJob's 2025 layout: ``spec.torchConfig`` and ``spec.replicaSpecs[]``.

T9k's 2025 manual writes a ColossalAIJob's replicas as a list of typed entries
(``launcher``: at most one, a pod template of its own; ``worker``: exactly one
entry, its count and template) and the training settings in
``spec.torchConfig`` (``procPerWorker``, ``script``, ``extraArgs`` for
torchrun), where the older layout has ``spec.launcher`` and ``spec.worker``.
Both are accepted, one per object (the rules on the spec, in
:mod:`t9k_operator.api.colossalai`).

The operator reads either layout through one view: :func:`workers_of` gives the
2025 layout's workers as the older layout's :class:`WorkerSpec`, and
:func:`launcher_template` the launcher's pod template (empty when the job
gives none: the builders then add a default ``launcher`` container).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.colossalai_replicas import (
    LAUNCHER,
    WORKER,
    WorkerSpec,
    proc_per_worker_field,
)
from t9k_operator.api.replica_specs import DISTINCT_TYPES_RULE
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import MAX_INT32, MAX_REPLICAS, Arg
from t9k_operator.api.template import PodTemplate, pod_template_schema

MSG_ONE_WORKER_SPEC = (
    "spec.replicaSpecs needs one item of type worker (the workers; a launcher item is "
    "optional), and each type at most once"
)
MSG_ONE_LAUNCHER = "spec.replicaSpecs[type=launcher].replicas must be 1: a job has one launcher"
MSG_WORKER_CONTAINERS = (
    "spec.replicaSpecs[type=worker].template.spec.containers must hold at least one container"
)


class TorchConfig(T9kModel):
    """How the launcher starts the training on the workers (the 2025 layout)."""

    proc_per_worker: int = proc_per_worker_field()
    script: list[Arg] | None = Field(
        default=None,
        description=(
            "The training script and its arguments (e.g. [train.py, --lr, '0.1']), run on "
            "every worker from the launcher container's workingDir. Required unless debug "
            "mode is on."
        ),
    )
    extra_args: list[Arg] = Field(
        default=[],
        description=(
            "Further torchrun options for the training processes "
            "(colossalai run --extra_launch_args)."
        ),
    )


class ColossalAIRestartPolicy(T9kModel):
    """A replica type's restart policy, as T9k's 2025 API has it: stored, not acted on."""

    policy: Literal["Never", "OnFailure", "Always"] | None = Field(
        default=None, description="Never, OnFailure or Always."
    )
    limit: int | None = Field(default=None, ge=0, le=MAX_INT32, description="Most restarts.")


ONE_LAUNCHER_RULE: Rule[ColossalAIReplicaSpec] = Rule(
    f"self.type != '{LAUNCHER}' || !has(self.replicas) || self.replicas == 1",
    MSG_ONE_LAUNCHER,
    lambda spec: spec.type != LAUNCHER or spec.replicas == 1,
    field_path=".replicas",
)
WORKER_CONTAINERS_RULE: Rule[ColossalAIReplicaSpec] = Rule(
    f"self.type != '{WORKER}' || (has(self.template) && has(self.template.spec) && "
    "has(self.template.spec.containers) && size(self.template.spec.containers) > 0)",
    MSG_WORKER_CONTAINERS,
    lambda spec: spec.type != WORKER or bool((spec.template.get("spec") or {}).get("containers")),
    field_path=".template",
)


class ColossalAIReplicaSpec(T9kModel):
    """One entry of spec.replicaSpecs: the launcher or the workers."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (ONE_LAUNCHER_RULE, WORKER_CONTAINERS_RULE)

    type: Literal["launcher", "worker"] = Field(
        description=(
            "launcher (one pod, <job>-launcher, which runs colossalai run; the job succeeds "
            "or fails with it) or worker (pods <job>-worker-<i>, each running sshd)."
        )
    )
    replicas: int = Field(
        default=1,
        ge=1,
        le=MAX_REPLICAS,
        description="Number of replicas of this type (a launcher: 1). Defaults to 1.",
    )
    restart_policy: ColossalAIRestartPolicy | None = Field(
        default=None,
        description=(
            "Stored as written but not acted on: no pod of a ColossalAIJob is restarted (a "
            "failed worker cannot rejoin a ColossalAI training), so any failure fails the "
            "job. A job that sets it gets a Warning Event FieldNotActedOn."
        ),
    )
    template: PodTemplate = Field(
        default_factory=dict,
        description=(
            "Pod template of these replicas (a Kubernetes PodTemplateSpec), kept as written. "
            "The workers' container named worker (else the first) runs sshd; the launcher's "
            "container named launcher runs colossalai run, and is added (the workers' image) "
            "when the template has none. The launcher's workingDir is where the workers run "
            "the script."
        ),
        json_schema_extra=pod_template_schema(),
    )


WORKER_SPEC_RULE: Rule[Sequence[ColossalAIReplicaSpec]] = Rule(
    f"self.exists_one(r, r.type == '{WORKER}')",
    MSG_ONE_WORKER_SPEC,
    lambda specs: sum(1 for r in specs if r.type == WORKER) == 1,
)

ReplicaSpecs = Annotated[list[ColossalAIReplicaSpec], Rules(DISTINCT_TYPES_RULE, WORKER_SPEC_RULE)]


def replica_spec_field() -> Any:
    return Field(
        default=None,
        min_length=1,
        max_length=2,
        description=(
            "The 2025 layout's replicas: one item of type worker and at most one of type "
            "launcher (with spec.torchConfig, in place of spec.launcher and spec.worker)."
        ),
    )


def index_of(specs: Sequence[ColossalAIReplicaSpec], replica_type: str) -> int | None:
    """The index in spec.replicaSpecs of the entry of ``replica_type``; None without one."""
    return next((i for i, r in enumerate(specs) if r.type == replica_type), None)


def workers_of(specs: Sequence[ColossalAIReplicaSpec], torch: TorchConfig | None) -> WorkerSpec:
    """The 2025 layout's workers, as the older layout's ``spec.worker`` states them."""
    config = torch or TorchConfig()
    entry = specs[index_of(specs, WORKER) or 0]
    return WorkerSpec.model_construct(
        replicas=entry.replicas,
        proc_per_worker=config.proc_per_worker,
        command=config.script,
        torch_args=config.extra_args,
        template=entry.template,
    )


def launcher_template(specs: Sequence[ColossalAIReplicaSpec]) -> dict[str, Any]:
    """The launcher's pod template of the 2025 layout; empty when it gives none."""
    i = index_of(specs, LAUNCHER)
    return specs[i].template if i is not None else {}
