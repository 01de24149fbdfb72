"""MPIJob's 2025 layout (``spec.mpiConfig``, ``spec.replicaSpecs[]``), and
:class:`MPIRun`, what the operator runs whichever layout a job is written in.

T9k's 2025 manual describes an MPIJob by ``spec.mpiConfig`` (``mca``,
``home``, ``extraArgs``, ``script``) and a ``spec.replicaSpecs`` list of a
``worker`` entry and an optional ``launcher`` entry, each with ``replicas``,
``restartPolicy.{policy, limit}`` and ``template``; the older manual by
``spec.worker`` with ``spec.mca`` and ``spec.mpiHome``. Both are stored as
written. The spec reads either into one :class:`MPIRun` (``MPIJobSpec.run``),
and the builders, the kind and the local runner read only that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.colossalai_replicas import MAX_PATH_LENGTH, absolute_path_rule
from t9k_operator.api.replica_specs import DISTINCT_TYPES_RULE
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import MAX_CONTAINERS, MAX_INT32, MAX_REPLICAS, NOT_REQUIRED, Arg
from t9k_operator.api.template import PodTemplate, pod_template_schema

WORKER_CONTAINER = "worker"
"""The 2025 layout's worker container (else the template's first), which runs sshd."""
LAUNCHER_CONTAINER = "launcher"
"""The 2025 layout's launcher container (else its template's first), which runs mpirun."""

MSG_MCA_KEY = (
    "spec.mpiConfig.mca: every key must be an MCA parameter name (letters, digits and _ "
    "only, e.g. btl or plm_rsh_args); its value is passed as mpirun --mca <key> <value>"
)
MSG_HOME = (
    "spec.mpiConfig.home must be an absolute path (start with /): it is mpirun's --prefix, "
    "where the workers find Open MPI's orted"
)
MSG_WORKER_ENTRY = "spec.replicaSpecs needs one entry of type worker"
MSG_LAUNCHER_REPLICAS = "spec.replicaSpecs: the launcher entry's replicas must be 1"
MSG_WORKER_TEMPLATE = (
    "spec.replicaSpecs: the worker entry's template.spec.containers must hold at least one "
    "container (the one named worker, else the first, runs sshd)"
)
MSG_LAUNCHER_TEMPLATE = (
    "spec.replicaSpecs: the launcher entry's template is either empty (the operator's "
    "launcher: the worker's template, running mpirun) or has template.spec.containers (the "
    "one named launcher, else the first, runs mpirun)"
)
MSG_NAMELESS = (
    "spec.replicaSpecs[].template.spec.containers: a container may be left without a name "
    "only when it is the only one (the operator names it after the entry's type)"
)

MCA_KEY_PATTERN = "^[A-Za-z0-9_]+$"


def mca_keys_rule(message: str) -> Rule[dict[str, str]]:
    """Every key of an ``mca`` map is an MCA parameter name."""
    return Rule(
        f"self.all(k, k.matches('{MCA_KEY_PATTERN}'))",
        message,
        lambda mca: all(re.fullmatch(MCA_KEY_PATTERN, k) for k in mca),
    )


MCA_KEYS_RULE = mca_keys_rule(MSG_MCA_KEY)
HOME_RULE = absolute_path_rule(MSG_HOME)


class MPIConfig(T9kModel):
    """How the launcher's mpirun starts the program (the 2025 layout)."""

    mca: Annotated[dict[str, str], Rules(MCA_KEYS_RULE)] = Field(
        default={},
        description=(
            "Open MPI's Modular Component Architecture (MCA) parameters, each passed as "
            "mpirun --mca <key> <value> (e.g. btl: ^openib, pml: ob1)."
        ),
    )
    home: Annotated[str, Rules(HOME_RULE)] | None = Field(
        default=None,
        max_length=MAX_PATH_LENGTH,
        description=(
            "Open MPI installation path in the image (mpirun --prefix): the workers find "
            "orted and Open MPI's libraries below it. Unset: no --prefix."
        ),
    )
    extra_args: list[Arg] = Field(
        default=[],
        description=(
            "Further mpirun options, passed as given before the program (e.g. [-N, '3'] for "
            "3 processes per worker, [-bind-to, none])."
        ),
    )
    script: list[Arg] | None = Field(
        default=None,
        description=(
            "The program each MPI process runs, with its arguments (e.g. [python3, "
            "train.py]), started by mpirun on every worker once all of them accept ssh, in "
            "the launcher's working directory. Needed unless debug mode is on: without it "
            "the job fails, naming this field."
        ),
    )


class MPIRestartPolicy(T9kModel):
    """When the operator recreates a replica of this type, and how often."""

    policy: Literal["Never", "OnFailure", "Always"] = Field(
        default="OnFailure",
        description=(
            "Never, OnFailure (recreate a replica that failed) or Always (recreate a replica "
            "that ended). A recreated launcher runs mpirun over again; a recreated worker "
            "waits for the next mpirun. Defaults to OnFailure."
        ),
    )
    limit: int = Field(
        default=0,
        ge=0,
        le=MAX_INT32,
        description=(
            "Most restarts of the replicas of this type, all of them together. Defaults to "
            "0: no restart."
        ),
    )


_NAMELESS_CEL = (
    "!has(self.template.spec) || size(self.template.spec.containers) == 1 || "
    "self.template.spec.containers.all(c, has(c.name) && size(c.name) > 0)"
)
NAMELESS_RULE: Rule[Any] = Rule(
    _NAMELESS_CEL,
    MSG_NAMELESS,
    lambda rs: (
        len(_containers(rs.template)) <= 1
        or all(isinstance(c, Mapping) and c.get("name") for c in _containers(rs.template))
    ),
)
WORKER_TEMPLATE_RULE: Rule[Any] = Rule(
    "self.type != 'worker' || (has(self.template.spec) && size(self.template.spec.containers) > 0)",
    MSG_WORKER_TEMPLATE,
    lambda rs: rs.type != "worker" or bool(_containers(rs.template)),
)
LAUNCHER_TEMPLATE_RULE: Rule[Any] = Rule(
    "self.type != 'launcher' || (!has(self.template.metadata) && !has(self.template.spec)) "
    "|| (has(self.template.spec) && size(self.template.spec.containers) > 0)",
    MSG_LAUNCHER_TEMPLATE,
    lambda rs: rs.type != "launcher" or not rs.template or bool(_containers(rs.template)),
)
LAUNCHER_REPLICAS_RULE: Rule[Any] = Rule(
    "self.type != 'launcher' || self.replicas == 1",
    MSG_LAUNCHER_REPLICAS,
    lambda rs: rs.type != "launcher" or rs.replicas == 1,
)
WORKER_ENTRY_RULE: Rule[list[Any]] = Rule(
    "self.exists(r, r.type == 'worker')",
    MSG_WORKER_ENTRY,
    lambda specs: any(rs.type == "worker" for rs in specs),
)


def _containers(template: Mapping[str, Any]) -> list[Any]:
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    return containers if isinstance(containers, list) else []


_REPLICA_TEMPLATE_SCHEMA: dict[str, Any] = {
    "properties": {
        "spec": {
            "type": "object",
            "additionalProperties": True,
            "description": "Pod spec of the replicas, kept as written.",
            "properties": {
                "containers": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_CONTAINERS,
                    # a list, not a map by name: the operator names a lone nameless one
                    "x-kubernetes-list-type": "atomic",
                    "description": (
                        "Containers of the pods. The worker's container named worker (the "
                        "launcher's named launcher), else the first, is the operator's: its "
                        "command and args are not used."
                    ),
                    "items": {
                        "type": "object",
                        "additionalProperties": True,
                        "description": (
                            "A container, kept as written; a lone container may be left "
                            "without a name: it is then named after the entry's type."
                        ),
                        NOT_REQUIRED: ["name"],
                    },
                }
            },
        }
    },
}


class MPIReplicaSpec(T9kModel):
    """The workers or the launcher (the 2025 layout)."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        WORKER_TEMPLATE_RULE,
        LAUNCHER_TEMPLATE_RULE,
        LAUNCHER_REPLICAS_RULE,
        NAMELESS_RULE,
    )

    type: Literal["worker", "launcher"] = Field(
        description="worker (the pods mpirun starts the program on) or launcher (mpirun's pod)."
    )
    replicas: int = Field(
        default=1,
        ge=1,
        le=MAX_REPLICAS,
        description="Number of replicas of this type (the launcher's is 1). Defaults to 1.",
    )
    restart_policy: MPIRestartPolicy = Field(
        default_factory=MPIRestartPolicy,
        description="How replicas of this type restart. Unset: OnFailure with limit 0.",
    )
    template: PodTemplate = Field(
        default={},
        description=(
            "Pod template of the replicas (a Kubernetes PodTemplateSpec: metadata and spec), "
            "kept as written. The worker's must hold a container; a launcher's left empty "
            "({}) makes the operator's launcher: the worker's template, running mpirun."
        ),
        json_schema_extra=pod_template_schema(_REPLICA_TEMPLATE_SCHEMA),
    )


ReplicaSpecs = Annotated[
    list[MPIReplicaSpec],
    Rules(WORKER_ENTRY_RULE, DISTINCT_TYPES_RULE),
    Field(min_length=1, max_length=2),
]


# -- what the operator runs -------------------------------------------------------------


@dataclass(frozen=True)
class Restart:
    """A replica type's restart policy in the engine's terms."""

    policy: str = "Never"
    limit: int | None = None


@dataclass(frozen=True)
class MPIRun:
    """An MPIJob as the operator runs it, read from either layout."""

    replicas: int
    worker_template: Mapping[str, Any]
    worker_container: str
    """The worker's container run as sshd (named so, else the template's first)."""
    launcher_template: Mapping[str, Any] | None
    """The launcher's own template; None: the worker's (the operator's launcher)."""
    launcher_container: str
    mca: Mapping[str, str]
    home: str | None
    extra_args: tuple[str, ...]
    program: tuple[str, ...]
    worker_field: str
    """Where the worker's template is, for messages (``spec.worker.template``)."""
    launcher_field: str
    program_field: str
    processes_per_worker: int | None = None
    """mpirun -N, and the hostfile's slots (the older layout's shorthand)."""
    max_restarts: int | None = None
    """mpirun --enable-recovery --max-restarts (the older layout's shorthand); None: off."""
    worker_restart: Restart = Restart()
    launcher_restart: Restart = Restart()


def run_of_replica_specs(config: MPIConfig | None, specs: list[MPIReplicaSpec]) -> MPIRun:
    """The 2025 layout's :class:`MPIRun`."""
    config = config or MPIConfig()
    index = {rs.type: i for i, rs in enumerate(specs)}
    worker = specs[index["worker"]]
    launcher = specs[index["launcher"]] if "launcher" in index else None
    own = launcher is not None and bool(launcher.template)
    return MPIRun(
        replicas=worker.replicas,
        worker_template=worker.template,
        worker_container=WORKER_CONTAINER,
        launcher_template=launcher.template if launcher is not None and own else None,
        launcher_container=LAUNCHER_CONTAINER if own else WORKER_CONTAINER,
        mca=config.mca,
        home=config.home,
        extra_args=tuple(config.extra_args),
        program=tuple(config.script or ()),
        worker_field=f"spec.replicaSpecs[{index['worker']}].template",
        launcher_field=(
            f"spec.replicaSpecs[{index['launcher']}].template"
            if own
            else f"spec.replicaSpecs[{index['worker']}].template"
        ),
        program_field="spec.mpiConfig.script",
        worker_restart=_restart(worker),
        launcher_restart=_restart(launcher) if launcher is not None else Restart("OnFailure", 0),
    )


def _restart(rs: MPIReplicaSpec) -> Restart:
    return Restart(rs.restart_policy.policy, rs.restart_policy.limit)
