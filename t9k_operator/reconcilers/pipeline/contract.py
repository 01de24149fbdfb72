"""The integration contract: what a job gets beyond its own children.

An integration (gang scheduling, Kueue, the job's TensorBoard, ...) is one
folder of ``t9k_operator/integrations`` holding one class that satisfies
:class:`Integration`, listed once in
:data:`~t9k_operator.registry.INTEGRATIONS`. Its class is its
:class:`Setup`: its flags and the RBAC rules it needs. An integration that
serves something (the progress endpoint) has a server hook too, kept out of
the pure integrations (``reconcilers/serving.py``).
For each job, in a reconcile, the apply step asks every integration that is
on, in registry order:

1. ``observe``: its state for this job, read from the informers' caches
   (never the API server), and the job's view as it leaves it: it reads what
   the job asks of it with ``view.ask`` (a type of
   :mod:`~t9k_operator.kinds.asks`), and may rewrite that for the integrations
   after it with ``view.asking`` (Kueue takes the job's queue from the
   scheduling request);
2. ``prepare``: what it keeps in every phase of the job (a refusal is
   recorded and comes back through ``refused`` in the next pass, whose status
   says what became of it; it never fails the job);
3. ``gate``: whether the engine must hold the job back, and why;
   ``heartbeats``: the pods it hears from and how long each may be silent,
   for the engine's hang rule (what it heard stays in its state);
   ``checkpoints``: the checkpoints the pods reported, for a stop that waits
   for them; ``stop_gate``: a gate the engine asks, in this pass, before it
   deletes the job's replicas for a stop that is not the job's own
   (:class:`~t9k_operator.reconcilers.engine.planning.StopGate`);
4. after the plan: ``status`` (its part of the job's status, and Events);
   ``children`` while the job is active, ``release`` once it has finished or
   is paused (what it gives back); ``decorate`` on every pod created.

A job handed to another controller (``spec.managedBy``) skips all of that:
only ``observe`` and ``handed_over`` are asked
(:mod:`~t9k_operator.reconcilers.pipeline.handed_over`).

Everything here is pure, and the pipeline's own: an integration returns
:class:`Action` s, the plan (:mod:`~t9k_operator.reconcilers.pipeline.plan`)
puts them in the pass's one ordered list, and the apply step
(:mod:`~t9k_operator.reconcilers.pipeline.job`) carries them out. Neither the
pipeline nor the engine names an integration: the integrations import this
contract, and gates, heartbeats, stop gates and status parts are all the
engine sees of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from t9k_operator.api.parts import StatusPart
from t9k_operator.kinds.contract import JobKind, Stored
from t9k_operator.kinds.view import Checkpointed, Gate, Heartbeat, JobView
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import TERMINAL, StopGate
from t9k_operator.resources import Resource

S = TypeVar("S")
Event = tuple[str, str, str]
"""An Event to record on the job: type (Normal | Warning), reason, message."""
Templates = Callable[[str], Obj]
"""A replica type's pod as the kind builds it (index 0, no debug or resume);
raises :class:`~t9k_operator.kinds.contract.ChildNotReady` while a
child it needs is missing."""


class Caches(Protocol):
    """The informers' caches, as an integration reads them."""

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj | None:
        """The cached object ``name`` (``namespace`` None: cluster-scoped)."""
        ...

    def owned(self, resource: Resource, uid: str) -> list[Obj]:
        """The cached objects whose controller owner has ``uid``."""
        ...

    def source(self, name: str) -> object | None:
        """What the server of the integration ``name`` has taken in, read-only
        (``reconcilers/serving.py``); None when no server of it runs."""
        ...


@dataclass(frozen=True)
class Watch:
    """A resource an integration reads, which the operator then caches.

    ``owned``: the job's own children, watched by the operator's labels; a change
    reconciles their owner. ``by_name``: objects a job names after itself (a
    change reconciles the job of that namespace and name, whoever owns it).
    Neither: objects read by name (priority classes, flavors); a change of one
    reconciles nothing."""

    resource: Resource
    owned: bool = False
    by_name: bool = False


@dataclass(frozen=True)
class Action:
    """One write of a reconcile, as planned: the apply step carries out a pass's
    actions in order, and this is the one vocabulary they are written in (the
    job's status, its pods, its other children and the integrations' objects).

    ``create``: AlreadyExists is success when the object is the job's (else a
    name clash); ``replace`` / ``replace_status``: an optimistic update (a
    conflict retries the reconcile); ``delete``: with the object's uid as
    precondition, NotFound being success; ``create_pods``: the pods of
    ``body["items"]`` (a List), in slow-start batches that stop at the first
    refusal.

    How a refusal is read: a ``soft`` action's goes back to the integration that
    asked for it (``by``, through its ``refused`` in the next pass) and never holds
    or fails the job; any other's holds the job (a refusal retrying may cure) or
    fails it (an invalid object, a policy, a name held by another owner).
    ``strict``: a create with the API server's strict field validation, which
    refuses a field it does not know rather than drop it in silence."""

    verb: str  # create | replace | replace_status | delete | create_pods
    resource: Resource
    body: Obj
    what: str  # how a message names it: "the job's PodGroup"
    soft: bool = False
    by: str = ""  # the integration that asked for it ("" for the job's own writes)
    strict: bool = False

    @property
    def label(self) -> str:
        return f"{self.resource.kind} {self.body['metadata']['name']}"


@dataclass(frozen=True)
class HandedOver:
    """What an integration does for a job another controller runs: its writes,
    and the Events they are told with."""

    actions: list[Action]
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class Refusal:
    """Why a soft action did not happen; recorded by the apply step and given to
    its integration's ``refused`` in the next pass."""

    message: str  # the API server's words, or the name clash's
    clash: bool = False  # its name is held by something that is not the job's
    conflict: bool = False  # the object changed meanwhile (409): the next pass looks again
    permanent: bool = False  # retrying cannot help (an invalid object, a policy)


class Unavailable(Exception):
    """A child an integration needs cannot be built yet (a priority class that
    does not exist): the job waits, says so, and the reconcile is retried."""

    def __init__(self, what: str, child: str, message: str) -> None:
        super().__init__(message)
        self.what, self.child, self.message = what, child, message


@dataclass(frozen=True)
class JobInput:
    """A job as an integration observes it: its kind, as stored, parsed, viewed."""

    kind: JobKind[Any]
    stored: Stored
    job: Any  # the parsed job (the kind's model)
    view: JobView
    now: datetime


@dataclass(frozen=True)
class Needs:
    """An API an integration cannot work without, and what to tell the user
    when the cluster does not serve it."""

    resource: Resource
    unserved: Callable[[str], str]  # the missing part -> the message


class Integration(Protocol[S]):
    """One integration, configured (from the operator's flags) and on."""

    name: str
    serves: ClassVar[tuple[type, ...]]
    """The requests (types of :mod:`~t9k_operator.kinds.asks`) it acts on: a
    job asking one that no integration that is on serves is told so when it is
    accepted (``FieldNotActedOn``), never ignored in silence."""

    @property
    def needs(self) -> tuple[Needs, ...]:
        """The APIs it cannot work without: the operator refuses to start when the
        cluster does not serve one."""
        ...

    def watches(self) -> tuple[Watch, ...]:
        """What it reads from the caches (started only while it is on)."""
        ...

    def observe(self, job: JobInput, caches: Caches) -> tuple[S, JobView] | None:
        """Its state for ``job`` and the view as it leaves it; None when the job
        is none of its business."""
        ...

    def gate(self, state: S, view: JobView) -> Gate | None:
        """Whether, and why, the engine must hold the job back."""
        ...

    def heartbeats(self, state: S, view: JobView) -> tuple[Heartbeat, ...]:
        """The job's pods it hears from, and how long each may be silent before
        the engine finds the job hung."""
        ...

    def checkpoints(self, state: S, view: JobView) -> tuple[Checkpointed, ...]:
        """The checkpoints the job's pods reported to it (the newest of each)."""
        ...

    def stop_gate(self, state: S, view: JobView) -> StopGate | None:
        """A stop gate for this pass of the job (made anew for each pass), or None."""
        ...

    def prepare(self, state: S, view: JobView) -> list[Action]:
        """What it keeps in every phase of the job (the job's status says what
        became of it once a refusal comes back through ``refused``)."""
        ...

    def refused(self, state: S, action: Action, refusal: Refusal) -> S:
        """Its state once a soft action of its own was refused."""
        ...

    def children(self, state: S, view: JobView, templates: Templates, pods: int) -> list[Action]:
        """What the active job (neither finished nor paused) needs from it, given
        how many pods the job has; may raise :class:`Unavailable`."""
        ...

    def release(self, state: S, view: JobView) -> list[Action]:
        """What it gives back once the job has finished or is paused."""
        ...

    def decorate(self, state: S, view: JobView, pod: Obj) -> None:
        """Add its labels, annotations or scheduling fields to a new pod."""
        ...

    def status(self, state: S, view: JobView, status: Obj) -> list[Event]:
        """Add its part to the job's new ``status`` (``view.status`` is the last
        one written); the Events that go with it."""
        ...

    def accepted(self, state: S, view: JobView) -> list[Event]:
        """Events told once, when the job's first status is stored."""
        ...

    def handed_over(
        self, state: S, view: JobView, templates: Templates, ended: bool
    ) -> HandedOver | None:
        """What it does for a job another controller runs (``spec.managedBy``),
        whose pods and status are not this operator's: the job has ended or is
        paused with ``ended``. None: it does nothing for such a job."""
        ...


class Base(Generic[S]):
    """The hook defaults: an integration overrides what it does."""

    parts: ClassVar[tuple[StatusPart, ...]] = ()
    serves: ClassVar[tuple[type, ...]] = ()

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        """An integration without flags of its own adds none."""
        return None

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        return None

    @property
    def needs(self) -> tuple[Needs, ...]:
        return ()

    def watches(self) -> tuple[Watch, ...]:
        return ()

    def gate(self, state: S, view: JobView) -> Gate | None:
        return None

    def heartbeats(self, state: S, view: JobView) -> tuple[Heartbeat, ...]:
        return ()

    def checkpoints(self, state: S, view: JobView) -> tuple[Checkpointed, ...]:
        return ()

    def stop_gate(self, state: S, view: JobView) -> StopGate | None:
        return None

    def prepare(self, state: S, view: JobView) -> list[Action]:
        return []

    def refused(self, state: S, action: Action, refusal: Refusal) -> S:
        return state

    def children(self, state: S, view: JobView, templates: Templates, pods: int) -> list[Action]:
        return []

    def release(self, state: S, view: JobView) -> list[Action]:
        return []

    def decorate(self, state: S, view: JobView, pod: Obj) -> None:
        return None

    def status(self, state: S, view: JobView, status: Obj) -> list[Event]:
        return []

    def accepted(self, state: S, view: JobView) -> list[Event]:
        return []

    def handed_over(
        self, state: S, view: JobView, templates: Templates, ended: bool
    ) -> HandedOver | None:
        return None


@dataclass(frozen=True)
class Rule:
    """An RBAC rule an integration needs, as hack/generate/rbac.py writes it: in
    the operator's ClusterRole, or, ``own_namespace``, in a Role of the
    operator's own namespace (``resource_names``: only these objects)."""

    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str = ""
    """The comment above the rule (lines), said once for the rules after it."""
    resource_names: tuple[str, ...] = ()
    own_namespace: bool = False


class Setup(Protocol):
    """An integration as the registry lists it: its flags, the integration
    they configure (None: off), and the RBAC rules it needs whenever it may be
    turned on."""

    name: str
    parts: ClassVar[tuple[StatusPart, ...]]
    """Its parts of a job's status (listed in :data:`t9k_operator.registry.PARTS`,
    where the CRD generator and ``t9k describe`` read them)."""

    @staticmethod
    def rbac() -> tuple[Rule, ...]: ...

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None: ...

    @staticmethod
    def from_flags(args: argparse.Namespace) -> Integration[Any] | None: ...

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        """What is wrong with the flags' combination, or None."""
        ...


def last_seen(status: Obj, view: JobView, key: str, seen: Obj | None) -> None:
    """``status[key]`` is ``seen`` (what the integration sees now) while the job
    runs; once it has finished or is paused, or without ``seen``, it stays what
    was last written, if anything."""
    if seen is None or status["phase"] in (*TERMINAL, "Paused"):
        if view.status.get(key):
            status[key] = dict(view.status[key])
        return
    status[key] = seen


def clash(kind: str, name: str, owner: Mapping[str, Any] | None) -> str:
    """The message of a child whose name is held by ``owner`` (its controller
    ownerReference, or None), not by the job."""
    held = f"{owner['kind']} {owner['name']}" if owner else "nothing (it has no controller)"
    return (
        f"{kind} {name} already exists and belongs to {held}: two jobs "
        "whose children's names collide cannot share a namespace; rename this job"
    )
