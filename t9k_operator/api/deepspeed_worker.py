"""The workers of a DeepSpeedJob: ``spec.worker``.

Every worker runs sshd, and ``worker-0`` also runs the ``deepspeed`` launcher.
The worker template is kept whole, but the operator mounts the job's ssh
key, hostfile and remote environment into its training container, so the
:data:`RESERVED_MOUNTS_RULE` refuses a template that mounts anything there.
The template's schema declares just the parts the rule reads
(``spec.containers[*].name`` and ``.volumeMounts[*].mountPath``, capped at
:data:`~t9k_operator.api.schema.MAX_CONTAINERS` containers and
:data:`MAX_VOLUME_MOUNTS` mounts to bound the CEL cost), every level still
preserving unknown fields. The spec as a
whole, the status and the CRD are in :mod:`t9k_operator.api.deepspeed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, field_validator

from t9k_operator.api.base import T9kModel
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import (
    MAX_REPLICAS,
    cel_strings,
    containers_schema,
    preserved_object_schema,
)
from t9k_operator.api.specs import RestartPolicy
from t9k_operator.api.template import PodTemplate, named_or_first_container, pod_template_field

WORKER = "worker"
"""The only replica type; pods are named ``<job>-worker-<i>``."""
TRAINING_CONTAINER = "worker"
"""The training container is the one of this name, else the template's first."""

RESERVED_MOUNT_PATHS = ("/root/.ssh", "/t9k/hostfile", "/root/.deepspeed_env")
"""The operator mounts the job's ssh key, hostfile and remote environment here."""
MAX_VOLUME_MOUNTS = 256
"""At most this many volumeMounts per container of the worker template."""

_POD_RESTART_POLICIES = ("Never", "OnFailure", "Always")

MSG_TEMPLATE_RESTART_POLICY = (
    "spec.worker.template.spec.restartPolicy must be Never, OnFailure or Always "
    "(the Pod API's values)"
)
"""The model's message for a restartPolicy the template's schema (an enum) refuses."""
MSG_RESERVED_MOUNTS = (
    "the training container of spec.worker.template (the one named worker, else the first) "
    "must not mount a volume at /root/.ssh, /t9k/hostfile or "
    "/root/.deepspeed_env (nor below them): the operator mounts the job's ssh key, "
    "hostfile and remote environment there"
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


def _mounts_reserved(container: Any) -> bool:
    """Whether ``container`` mounts a volume at a reserved path (or below one)."""
    mounts = container.get("volumeMounts") if isinstance(container, Mapping) else None
    return any(
        isinstance(m, Mapping)
        and isinstance(m.get("mountPath"), str)
        and is_reserved_mount_path(m["mountPath"])
        for m in mounts or []
    )


def _training_mounts_free(template: Mapping[str, Any]) -> bool:
    """Whether the training container (those named worker, else the first) mounts
    nothing at a reserved path."""
    containers = (template.get("spec") or {}).get("containers") or []
    named = [
        c for c in containers if isinstance(c, Mapping) and c.get("name") == TRAINING_CONTAINER
    ]
    return not any(_mounts_reserved(c) for c in named or containers[:1])


RESERVED_MOUNTS_RULE: Rule[Mapping[str, Any]] = Rule(
    f"!has(self.spec) || !has({_CONTAINERS}) || size({_CONTAINERS}) == 0 || "
    f"({_CONTAINERS}.exists(c, {_IS_TRAINING}) ? "
    f"{_CONTAINERS}.all(c, !({_IS_TRAINING}) || {_mounts_ok('c')}) : "
    f"{_mounts_ok(_CONTAINERS + '[0]')})",
    MSG_RESERVED_MOUNTS,
    _training_mounts_free,
    field_path=".spec.containers",
)

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
                "containers": containers_schema(
                    "Containers of the worker pods. The training container is the one "
                    "named worker, else the first; it must not mount anything at "
                    "/root/.ssh, /t9k/hostfile or /root/.deepspeed_env.",
                    volumeMounts={
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
                ),
            },
        )
    },
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
    template: Annotated[PodTemplate, Rules(RESERVED_MOUNTS_RULE)] = pod_template_field(
        "workers", _TEMPLATE_SCHEMA
    )

    @field_validator("template")
    @classmethod
    def _check_restart_policy(cls, template: dict[str, Any]) -> dict[str, Any]:
        # The schema's enum, for an object that reaches the operator some other way.
        policy = (template.get("spec") or {}).get("restartPolicy")
        if policy is not None and policy not in _POD_RESTART_POLICIES:
            raise ValueError(MSG_TEMPLATE_RESTART_POLICY)
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
