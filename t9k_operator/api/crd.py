"""A kind as a whole: the object model, the CRD descriptor, the rules on names.

Each kind module declares its object model, a :class:`JobObject` of its spec
and status (apiVersion, kind and metadata kept as sent), and ``CRD``, a
:class:`CrdInfo`: the kind's identity (group, version, plural, kind), short
names, printer columns and scale subresource, from which ``hack/generate/crds.py``
writes the CustomResourceDefinition (:func:`job_crd` fills in what the T9k
job kinds share).

The rules on the whole object live here too. A job's name also names its
headless Service and is the prefix of its pods' names, so the CRD refuses a
name that is not a DNS-1035 label (:data:`JOB_NAME_RULE`, from
:func:`dns_1035_name_rule`) or that leaves a
pod name longer than a DNS label (:func:`pod_name_length_rule`, whose CEL is
built from :func:`last_index_cel`, :func:`pod_name_fits_cel` and, for a kind
whose workers are ``spec.worker``, :func:`worker_pod_name_fits_cel`). Each is a
:class:`~t9k_operator.api.rules.Rule` on the object (:func:`name_rule`): a
kind's object model lists them in its ``rules``, which its ``CrdInfo`` takes
as ``root_rules``; the Python side of a pod-name-length rule is the object's
:meth:`JobObject.pod_names_fit` (from :func:`last_pod_name_fits`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Protocol, Self, TypeVar

from pydantic import BaseModel, Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import DNS_LABEL_MAX

GROUP = "batch.tensorstack.dev"
"""API group of every T9k job kind."""
VERSION = "v1beta1"
"""API version of every T9k job kind."""


# -- the object -------------------------------------------------------------------------

SpecT = TypeVar("SpecT", bound=BaseModel)
StatusT = TypeVar("StatusT", bound=BaseModel)


class JobObject(T9kModel, Generic[SpecT, StatusT]):
    """A whole custom object: apiVersion, kind, metadata, spec and status."""

    api_version: str = Field(description="API version of the object.")
    kind: str = Field(description="Kind of the object.")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Standard object metadata, kept as sent by the API server.",
    )
    spec: SpecT = Field(description="Desired state of the job.")
    status: StatusT | None = Field(default=None, description="Observed state of the job.")

    def pod_names_fit(self) -> bool:
        """Whether every pod name the job may get fits in a DNS label; the Python
        side of the kind's :func:`pod_name_length_rule`."""
        return True

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Self:
        """Parse a raw object as read from the API server (camelCase keys).

        Raises ``pydantic.ValidationError`` when the object does not fit the model.
        """
        return cls.model_validate(obj)

    def to_dict(self) -> dict[str, Any]:
        """The wire shape (camelCase keys, unset optional fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def generation(self) -> int:
        return int(self.metadata.get("generation", 0))


# -- CRD descriptors ----------------------------------------------------------------------


@dataclass(frozen=True)
class PrinterColumn:
    """One column of ``kubectl get`` (an additionalPrinterColumns entry)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0


@dataclass(frozen=True)
class ScaleSubresource:
    """Where the scale subresource reads and writes the replica count."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


REASON_DESCRIPTION = (
    "Why the job runs or not: WaitingForAdmission (Kueue), WaitingForGangScheduler, "
    "Unschedulable, Paused, EvictedByKueue, or how it ended."
)


def reason_column(conditions: str) -> PrinterColumn:
    """The reason of the engine's Running condition, kept in ``.status.<conditions>``."""
    path = f'.status.{conditions}[?(@.type=="Running")].reason'
    return PrinterColumn("Reason", "string", path, REASON_DESCRIPTION)


STANDARD_PRINTER_COLUMNS: tuple[PrinterColumn, ...] = (
    PrinterColumn("Phase", "string", ".status.phase", "Phase of the job."),
    reason_column("conditions"),
    PrinterColumn("Ready", "integer", ".status.readyReplicas", "Replicas running and ready."),
    PrinterColumn("Replicas", "integer", ".status.replicas", "Replicas that currently exist."),
    PrinterColumn("Restarts", "integer", ".status.restartCount", "Replica restarts so far."),
    PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
)


@dataclass(frozen=True)
class CrdInfo:
    """Everything the CRD generator needs to know about one kind (and the RBAC
    generator: its group, plural and :attr:`deletes_finished`)."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    spec_model: type[BaseModel]
    status_model: type[BaseModel]
    description: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    namespaced: bool = True
    scale: ScaleSubresource | None = None
    printer_columns: tuple[PrinterColumn, ...] = STANDARD_PRINTER_COLUMNS
    root_rules: tuple[Rule[Any], ...] = field(default=())
    """Rules on the whole object (they may read metadata.name): the ``rules`` of
    the kind's object model."""
    deletes_finished: bool = False
    """Whether the operator deletes a finished job of this kind (its
    ``ttlSecondsAfterFinished``): the operator's ClusterRole then grants delete
    on the kind's jobs (``hack/generate/rbac.py``)."""

    @property
    def name(self) -> str:
        """The CRD's metadata.name: ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def status_defaults(self) -> Mapping[str, Any]:
        """The status fields the API server fills in when a write leaves them
        out, with their values: :func:`status_defaults` of the status model."""
        return status_defaults(self.status_model)


@functools.cache
def status_defaults(model: type[BaseModel]) -> Mapping[str, Any]:
    """The top-level fields of ``model`` with a default the CRD declares (the
    model's non-null defaults: ``hack/generate/crds.py`` keeps them, and the API
    server fills them into a stored status that lacks them), by wire name."""
    schema = model.model_json_schema(by_alias=True, mode="validation")
    props = schema.get("properties") or {}
    return MappingProxyType(
        {k: v["default"] for k, v in props.items() if v.get("default") is not None}
    )


def job_crd(
    *,
    kind: str,
    plural: str,
    singular: str,
    short_names: tuple[str, ...],
    spec_model: type[BaseModel],
    status_model: type[BaseModel],
    description: str,
    root_rules: tuple[Rule[Any], ...],
    scale: ScaleSubresource | None = None,
) -> CrdInfo:
    """The :class:`CrdInfo` of a T9k job kind: group, version and category filled in."""
    return CrdInfo(
        group=GROUP,
        version=VERSION,
        kind=kind,
        plural=plural,
        singular=singular,
        short_names=short_names,
        categories=("t9k",),
        spec_model=spec_model,
        status_model=status_model,
        description=description,
        scale=scale,
        root_rules=root_rules,
    )


ELASTIC_SCALE = ScaleSubresource(
    spec_replicas_path=".spec.elastic.expectedReplicas",
    status_replicas_path=".status.replicas",
    label_selector_path=".status.selector",
)
"""The scale subresource of a kind with spec.elastic: it moves expectedReplicas."""


# -- job and pod names ---------------------------------------------------------------------

DNS_1035_PATTERN = r"[a-z]([-a-z0-9]*[a-z0-9])?"


Job = JobObject[Any, Any]


def name_rule(cel: str, message: str, holds: Callable[[Job], bool]) -> Rule[Job]:
    """A root rule about metadata.name (its errors name .metadata.name). Its Python
    side leaves an empty name (not named yet, generateName) to the API server."""
    return Rule(cel, message, lambda obj: not obj.name or holds(obj), field_path=".metadata.name")


def matches_dns_1035(name: str) -> bool:
    """Whether ``name`` is a DNS-1035 label (the shape :data:`JOB_NAME_RULE` demands)."""
    return re.fullmatch(DNS_1035_PATTERN, name) is not None


def dns_1035_name_rule(message: str) -> Rule[Job]:
    """A root rule: metadata.name is a DNS-1035 label (:data:`DNS_1035_PATTERN`),
    refused with ``message`` (a kind says what its name also names)."""
    return name_rule(
        f"self.metadata.name.matches('^{DNS_1035_PATTERN}$')",
        message,
        lambda obj: matches_dns_1035(obj.name),
    )


JOB_NAME_RULE = dns_1035_name_rule(
    "metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', "
    "starting with a letter): it also names the job's headless Service"
)
"""A root rule for kinds whose name also names a Service."""

MSG_JOB_NAME = JOB_NAME_RULE.message


def last_pod_name_fits(job_name: str, replica_type: str, replicas: int) -> bool:
    """Whether ``<job>-<replica type>-<last index>`` fits in a DNS label, for
    ``replicas`` pods (none: index 0); the Python side of :func:`pod_name_fits_cel`."""
    return len(f"{job_name}-{replica_type}-{max(replicas - 1, 0)}") <= DNS_LABEL_MAX


def last_index_cel(replicas: str, *, elastic: bool = False) -> str:
    """CEL: the highest pod index given ``replicas`` (a CEL expression); with
    ``elastic``, spec.elastic.maxReplicas counts when larger."""
    plain = f"({replicas} > 0 ? {replicas} - 1 : 0)"
    if not elastic:
        return plain
    return (
        "(has(self.spec.elastic) && has(self.spec.elastic.maxReplicas) "
        f"&& self.spec.elastic.maxReplicas > {replicas} ? self.spec.elastic.maxReplicas - 1 : "
        f"{plain})"
    )


def pod_name_fits_cel(middle_size: str, last_index: str, *, extra: int = 0) -> str:
    """CEL on the object: whether ``<metadata.name><middle><last index>`` fits in a DNS
    label; ``middle_size`` is a CEL size expression, ``extra`` further characters."""
    plus = f" + {extra}" if extra else ""
    return (
        f"size(self.metadata.name) + {middle_size} + size(string({last_index})){plus} "
        f"<= {DNS_LABEL_MAX}"
    )


def worker_pod_name_fits_cel(replica_type: str, *, elastic: bool = False) -> str:
    """CEL on the object, for a kind whose workers are ``spec.worker``: whether
    ``<metadata.name>-<replica type>-<last index>`` fits in a DNS label (true while
    spec.worker.replicas is unset; with ``elastic``, as :func:`last_index_cel`)."""
    replicas = "self.spec.worker.replicas"
    return f"!has(self.spec.worker) || !has({replicas}) || " + pod_name_fits_cel(
        f"size('-{replica_type}-')", last_index_cel(replicas, elastic=elastic)
    )


MSG_LAUNCHER_POD_NAME_LENGTH = (
    "metadata.name is too long: the pod names <name>-launcher and <name>-worker-<index> "
    "must fit in 63 characters (they are also the pods' hostnames)"
)


def launcher_pod_names_fit(job_name: str, launcher: str, worker: str, workers: int) -> bool:
    """Whether ``<job>-<launcher>`` and ``<job>-<worker>-<last index>`` fit in a DNS
    label, for a kind with one launcher pod and ``workers`` in ``spec.worker``; the
    Python side of :func:`launcher_pod_names_fit_cel`."""
    return len(f"{job_name}-{launcher}") <= DNS_LABEL_MAX and last_pod_name_fits(
        job_name, worker, workers
    )


def launcher_pod_names_fit_cel(launcher: str, worker: str) -> str:
    """CEL on the object: whether ``<metadata.name>-<launcher>`` and the workers' pod
    names (as :func:`worker_pod_name_fits_cel`) fit in a DNS label."""
    return (
        f"size(self.metadata.name) + size('-{launcher}') <= {DNS_LABEL_MAX} && "
        f"({worker_pod_name_fits_cel(worker)})"
    )


class ReplicaCount(Protocol):
    """One entry of ``spec.replicaSpecs``, as far as its pod names go."""

    @property
    def type(self) -> str: ...

    @property
    def replicas(self) -> int: ...


def replica_specs_pod_names_fit(
    job_name: str, replica_specs: Iterable[ReplicaCount], *, at_least: int = 0
) -> bool:
    """Whether ``<job>-<type>-<last index>`` fits in a DNS label for every type,
    each counting ``at_least`` replicas (an elastic job's maximum); the Python side
    of :func:`replica_specs_pod_names_fit_cel`."""
    return all(
        last_pod_name_fits(job_name, rs.type, max(rs.replicas, at_least)) for rs in replica_specs
    )


def replica_specs_pod_names_fit_cel(*, elastic: bool = False) -> str:
    """CEL on the object, for a kind whose replicas are ``spec.replicaSpecs``:
    whether ``<metadata.name>-<type>-<last index>`` fits in a DNS label for every
    type (with ``elastic``, as :func:`last_index_cel`)."""
    last_index = last_index_cel("r.replicas", elastic=elastic)
    return (
        "self.spec.replicaSpecs.all(r, "
        + pod_name_fits_cel("size(r.type)", last_index, extra=2)
        + ")"
    )


def pod_name_length_rule(cel: str, message: str) -> Rule[Job]:
    """A root rule on the length of metadata.name: ``cel`` says whether every pod name
    fits, as the object's :meth:`JobObject.pod_names_fit` does in Python."""
    return name_rule(cel, message, lambda obj: obj.pod_names_fit())
