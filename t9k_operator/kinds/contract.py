"""The kind contract: what a job kind gives the operator, in one place.

A kind is its API module (``t9k_operator.api.<kind>``: the models, and the
``CRD`` that declares its identity: group, version, plural, kind), its
builders (``t9k_operator.builders.<kind>``: pure functions from a job to its
children) and a class in this package satisfying :class:`JobKind`, listed once
in :data:`t9k_operator.kinds.registry.KINDS`. Everything else (the
controller, the CRD and RBAC generators, the thread pool, the tests' list of
kinds) derives from that list. The types the engine and the hooks exchange are
in :mod:`~t9k_operator.kinds.view`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from pydantic import ValidationError

from t9k_operator.api.crd import CrdInfo, JobObject
from t9k_operator.api.schema import MAX_INT32
from t9k_operator.builders.common import KindFacts
from t9k_operator.builders.common import PodMode as PodMode  # part of the contract
from t9k_operator.kinds.command import CommandDefaults, CommandHooks
from t9k_operator.kinds.local import EachReplica, LocalRun, Program
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.templates import (
    each_at,
    template_metadata_not_acted_on,
    topology_placement,
)
from t9k_operator.kinds.view import JobView, Outcome, Role
from t9k_operator.objects import Obj, training_container

Replicas = Mapping[tuple[str, int], ReplicaState]
"""The job's pods by (replica type, index)."""
Stored = Mapping[str, Any]
"""A job as stored: the raw object, for what is about the stored shape itself
(the status, which fields the user wrote). Everything else reads the parsed job."""
Services = Mapping[str, Obj]
"""The job's Services by name."""


class ChildNotReady(Exception):
    """A child a pod depends on is not ready yet (MSJob: the scheduler Service's
    ClusterIP); the reconciler looks again shortly."""


J = TypeVar("J", bound=JobObject[Any, Any])


class JobKind(CommandHooks[J], Protocol[J]):
    """Everything the operator needs from one job kind, whose jobs parse as ``J``
    (and, in :class:`CommandHooks`, what the t9k command and the SDK need).

    The reconciler parses each job once per reconcile with ``model``
    (:func:`read`); every hook and builder then takes the parsed job, so every
    default is the model's, which is what the CRD tells users."""

    crd: CrdInfo
    """Its identity and CRD (declared in its API module)."""
    model: type[J]
    """Its API model of a whole object."""
    uses_ssh: bool
    """Whether replicas talk over ssh: the job then gets its own key Secret."""
    pod_templates: tuple[str, ...]
    """Where the job's pod templates are (``spec.replicaSpecs[].template``)."""

    @property
    def training_containers(self) -> tuple[str, ...]:
        """Names of the container that trains, in order of preference (else the first)."""
        ...

    @property
    def debug_command(self) -> tuple[str, ...]:
        """What debug pods run unless the job says otherwise."""
        ...

    # -- reading the job -------------------------------------------------------------

    def view(self, job: J) -> JobView:
        """The parsed job in the engine's terms (its ``status`` is filled in by
        :func:`read`); ``spec_error`` names what the model lets through but no
        pod can be built from."""
        ...

    def fields_not_acted_on(self, job: Stored) -> list[str]:
        """Fields the job sets that are stored but not acted on (as the user wrote them)."""
        ...

    # -- the engine's hooks ------------------------------------------------------------

    def outcome(self, job: JobView, replicas: Replicas) -> Outcome | None:
        """Succeeded/Failed from the replicas' current states, or None while running.

        Replicas that failed for good (no restart left) are reported by the
        engine itself; this hook decides success and kind-specific failure.
        """
        ...

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        """Replica types the cleanup policy may delete (None: every type)."""
        ...

    def may_create(self, job: JobView, replica_type: str, replicas: Replicas) -> bool:
        """Whether pods of ``replica_type`` may be created yet (start-up order:
        MSJob creates its other roles once the scheduler exists)."""
        ...

    # -- building children -------------------------------------------------------------

    def build_pod(self, job: J, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        """The pod of one replica. ``services`` are the job's Services by name, for
        kinds whose pods need a Service's value (MSJob: the scheduler's ClusterIP);
        raise :class:`ChildNotReady` when it is not there yet."""
        ...

    def role_pod(self, job: J, type_: str) -> Obj:
        """The first pod of a replica type, built without the job's Services (what
        every pod of the type shares: its resources, its scheduling fields)."""
        ...

    def extras(self, job: J) -> list[Obj]:
        """Children besides pods: Services (created once) and ConfigMaps (kept
        equal to what is built, so a hostfile follows scaling)."""
        ...

    def ssh_secret(self, job: J, private_key: str, public_key: str) -> Obj | None:
        """The job's ssh key Secret, for kinds whose replicas talk over ssh."""
        ...

    # -- the status shape ----------------------------------------------------------------

    def engine_status(self, job: Stored) -> Obj:
        """The engine's status as it was last written, from the stored one."""
        ...

    def render_status(self, job: Stored, engine_status: Obj) -> Obj:
        """The status to store, from the engine's. A kind whose stored status has
        another shape (MSJob's is Kubeflow's) reads the engine's back in
        ``engine_status``."""
        ...

    # -- t9k run --local -----------------------------------------------------------------

    @property
    def local(self) -> LocalRun[J]:
        """What the local runner needs of the kind (:mod:`~t9k_operator.kinds.local`)."""
        ...


def present_fields(obj: Any, paths: Sequence[str]) -> list[str]:
    """Which of ``paths`` (dotted; ``[]`` stands for every item of a list) ``obj``
    sets to something other than null."""
    found: list[str] = []
    for path in paths:
        nodes: list[Any] = [obj]
        for part in path.split("."):
            key, each = (part[:-2], True) if part.endswith("[]") else (part, False)
            nodes = [n.get(key) for n in nodes if isinstance(n, Mapping)]
            nodes = [n for n in nodes if n is not None]
            if each:
                nodes = [item for n in nodes if isinstance(n, list) for item in n]
        if nodes:
            found.append(path)
    return found


class KindBase(CommandDefaults[J]):
    """A kind's identity, given as class keywords (``class PyTorchKind(KindBase[Job],
    crd=CRD, model=Job, facts=build.FACTS)``: the facts its builders state), and
    the hook defaults most kinds keep: create any role at once, clean up every
    type, store the engine's status as it is, no ssh, every field acted on (and
    :class:`CommandDefaults`)."""

    crd: CrdInfo
    model: type[J]
    facts: KindFacts
    uses_ssh = False

    def __init_subclass__(
        cls, *, crd: CrdInfo, model: type[Any], facts: KindFacts, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.crd, cls.model, cls.facts = crd, model, facts

    @property
    def training_containers(self) -> tuple[str, ...]:
        return self.facts.training_containers

    @property
    def debug_command(self) -> tuple[str, ...]:
        return self.facts.debug_command

    not_acted_on: tuple[str, ...] = ()
    """Fields the API stores but this operator does not act on (yet): a job
    that sets one gets a Warning Event saying so."""

    pod_templates: tuple[str, ...] = ()
    """Where the job's pod templates are (``spec.replicaSpecs[].template``): their
    metadata's name, namespace and finalizers are stored but not acted on."""

    def fields_not_acted_on(self, job: Stored) -> list[str]:
        return present_fields(job, self.not_acted_on) + template_metadata_not_acted_on(
            job, self.pod_templates
        )

    def may_create(self, job: JobView, replica_type: str, replicas: Replicas) -> bool:
        return True

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        return None

    def engine_status(self, job: Stored) -> Obj:
        return dict(job.get("status") or {})

    def render_status(self, job: Stored, engine_status: Obj) -> Obj:
        return engine_status

    def ssh_secret(self, job: J, private_key: str, public_key: str) -> Obj | None:
        return None

    @property
    def local(self) -> LocalRun[J]:
        return CommandInTemplates(self.pod_templates, self.training_containers)


class CommandInTemplates(EachReplica):
    """The local run of a kind whose every replica runs its own training
    container: a program given after ``--`` replaces that container's command
    (its args dropped) in every pod template at ``templates``."""

    def __init__(self, templates: Sequence[str], training: Sequence[str]) -> None:
        self.templates, self.training = tuple(templates), tuple(training)

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        out = copy.deepcopy(manifest)
        for pattern in self.templates:
            for _, template in each_at(out, pattern):
                c = training_container(template, self.training)
                if c is not None:
                    c["command"] = list(argv)
                    c.pop("args", None)
        return Program(out)


# -- reading a job: once per reconcile -------------------------------------------------------


def user_path(obj: Any, loc: Sequence[int | str]) -> str:
    """The field path a user wrote, from a pydantic error location: the longest
    prefix of ``loc`` that exists in ``obj`` (pydantic adds the names of union
    branches and validators, such as ``constrained-str``, which are not fields),
    plus the first missing field name if that is where it stops."""
    parts: list[str] = []
    node = obj
    for item in loc:
        if isinstance(node, Mapping) and isinstance(item, str) and item in node:
            parts.append(item)
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and 0 <= item < len(node):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
            node = node[item]
        else:
            if isinstance(node, Mapping) and isinstance(item, str) and item.isidentifier():
                parts.append(item)  # a required field that is missing
            break
    return ".".join(parts)


def parse(model: type[J], job: Stored) -> tuple[J | None, str | None]:
    """The job parsed by its kind's API model; or None and the first error as
    ``invalid spec: field.path: message``. Admission stops these normally; an
    object stored before the CRD's rules is not."""
    try:
        return model.from_dict(job), None
    except ValidationError as exc:
        err = exc.errors()[0]
        path = user_path(job, err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        return None, f"invalid spec: {path}: {message}"


START_TIMEOUT_ANNOTATION = "t9k.dev/pod-start-timeout-seconds"
"""A job's own limit on how long one of its pods, once placed on a node, may
take to start (whole seconds; 0: none), instead of the operator's
``--pod-start-timeout``. An annotation, so that every kind has it with its
API unchanged."""

DEFAULT_START_TIMEOUT = 600.0
"""Seconds a placed pod may take to start when neither the job nor the
operator says otherwise (``--pod-start-timeout``)."""


def pod_start_timeout(own: float | None, operator: float = DEFAULT_START_TIMEOUT) -> float:
    """The start timeout a job's pods get: its own, else the operator's."""
    return operator if own is None else own


def start_timeout(meta: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """The job's :data:`START_TIMEOUT_ANNOTATION` (None when unset), or an error
    naming it."""
    value = (meta.get("annotations") or {}).get(START_TIMEOUT_ANNOTATION)
    if value is None:
        return None, None
    text = str(value).strip()
    # ASCII digits only ("²".isdigit() is true, and int() refuses it), and no
    # more than an int32, as every other seconds field of the API.
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_INT32:
        return None, (
            f"invalid spec: metadata.annotations[{START_TIMEOUT_ANNOTATION}]: "
            f"must be a whole number of seconds up to {MAX_INT32} (0: no limit), not {value!r}"
        )
    return float(int(text)), None


def job_view(
    kind: str,
    meta: Mapping[str, Any],
    roles: tuple[Role, ...],
    error: str | None = None,
    *,
    view: type[JobView] = JobView,
    **fields: Any,
) -> JobView:
    """A JobView (or the kind's extension of it, ``view``) from the job's
    metadata, plus the kind's fields; no roles when ``error`` says the spec
    cannot be run."""
    timeout, annotation_error = start_timeout(meta)
    error = error or annotation_error
    return view(
        kind=kind,
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta["uid"],
        generation=int(meta.get("generation") or 0),
        roles=() if error else roles,
        spec_error=error,
        start_timeout=timeout,
        **fields,
    )


@dataclass(frozen=True)
class Read(Generic[J]):
    """A stored job as one reconcile reads it."""

    job: J | None
    """The job parsed by its kind's model; None when it does not parse."""
    view: JobView
    """The job in the engine's terms, with the engine's last status."""


def read(kind: JobKind[J], stored: Stored) -> Read[J]:
    """Parse ``stored`` once with the kind's model and view it; a job that does
    not parse gets a view with no roles and the error naming the user's field."""
    job, error = parse(kind.model, stored)
    view = job_view(kind.crd.kind, stored["metadata"], (), error) if job is None else kind.view(job)
    view = view.asking(topology_placement(stored, kind.pod_templates))
    return Read(job, replace(view, status=kind.engine_status(stored)))
