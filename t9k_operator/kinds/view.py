"""A job in the engine's terms: the vocabulary the kinds, the engine and the
integrations share.

A kind reads its parsed job into a :class:`JobView`: roles, policies, and
what the job asks beyond its pods (``asks``: the types of
:mod:`~t9k_operator.kinds.asks`, keyed by type). The integrations read what
they serve through :meth:`JobView.ask`, and add :class:`Gate` s (why the job
may not have pods yet, or why its pods wait) and :class:`Heartbeat` s (when
each pod they hear from was last heard, and how long it may be silent) and
:class:`Checkpointed` s (the checkpoints the pods reported, which a stop
gate reads); the engine plans from it. Nothing here names a kind or an integration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypeVar

A = TypeVar("A")


@dataclass(frozen=True)
class Role:
    """One replica type of a job."""

    type: str
    replicas: int
    restart_policy: str = "Never"
    restart_limit: int | None = None
    """Restarts the replicas of this type may have in all (``status.tasks[].restartCount``),
    besides the job's ``backoff_limit``; None: only the job's."""


@dataclass(frozen=True)
class Override:
    """A per-type debug or resume setting from ``spec.runMode``."""

    type: str
    command: tuple[str, ...] | None = None
    args: tuple[str, ...] | None = None
    skip_init_container: bool = False


@dataclass(frozen=True)
class Outcome:
    phase: str  # Succeeded | Failed
    reason: str
    message: str


class Hold(StrEnum):
    """How much of a job a :class:`Gate` holds back."""

    NONE = "none"
    """Nothing: pods are created; while the job waits for them to run, the gate
    says why (a gang scheduler placing the whole group)."""
    NEW = "new"
    """No pod is created; the pods there stay (a refusal being retried, a job
    held for a gang scheduler the operator does not have)."""
    ALL = "all"
    """The job has no pods at all and its clock does not run (a queue that has
    not admitted it, or took its admission back)."""


@dataclass(frozen=True)
class Gate:
    """Why a job may not go on yet, as the engine reads it: a condition's
    reason and message, and an Event when the job starts waiting on it."""

    reason: str
    message: str
    hold: Hold = Hold.NEW
    event: str = ""
    """The Event's message when the job starts to wait here ("" for none)."""
    warning: bool = False
    """Whether that Event is a Warning (else Normal)."""
    detail: str = ""
    """With :attr:`Hold.NONE`: the waiting party's own word on why; without one,
    the engine adds the scheduler's word on the first pod it cannot place."""


@dataclass(frozen=True)
class Heartbeat:
    """A pod of the job an integration hears from, and how long it may be
    silent: past :attr:`due` the engine's hang rule finds the job hung and fails
    it, or (``restart``) restarts every replica as one counted attempt."""

    uid: str  # the pod's uid: a pod since replaced says nothing of its replica
    last: datetime  # when it was last heard from
    window_seconds: int  # the job's hangTimeoutSeconds
    restart: bool = False

    @property
    def due(self) -> datetime:
        return self.last + timedelta(seconds=self.window_seconds)


@dataclass(frozen=True)
class Checkpointed:
    """A checkpoint a pod of the job reported (from an integration: the
    progress reports): the step it wrote and when the report was received. A
    job that asks to checkpoint before a stop waits for one, received after
    its request, from every running replica (the checkpoint integration's
    stop gate reads them)."""

    uid: str  # the pod's uid
    name: str  # the pod's name
    step: int
    at: datetime


def asks_of(*asks: object | None) -> Mapping[type, object]:
    """What a job asks, keyed by type, for :attr:`JobView.asks` (None: not asked)."""
    return {type(a): a for a in asks if a is not None}


@dataclass(frozen=True)
class JobView:
    """What the engine needs to know about a job, in kind-neutral terms. A kind
    whose outcome rule needs more of its spec extends it with typed fields."""

    kind: str
    namespace: str
    name: str
    uid: str
    generation: int
    roles: tuple[Role, ...]
    backoff_limit: int = 3
    restart_scope: str = "Replica"  # Replica | Job: what one replica's restart recreates
    active_deadline_seconds: int | None = None
    cleanup_policy: str = "None"  # None | All | Unfinished
    ttl_seconds_after_finished: int | None = None
    """Seconds after the job finished when it is deleted (None: never)."""
    debug: bool = False
    debug_overrides: tuple[Override, ...] = ()
    paused: bool = False
    resume_overrides: tuple[Override, ...] = ()
    status: Mapping[str, Any] = field(default_factory=dict)
    spec_error: str | None = None  # an invalid spec the schema could not catch
    spec_error_reason: str = "InvalidSpec"  # the Failed reason that spec_error gives
    asks: Mapping[type, object] = field(default_factory=dict)
    """What the job asks beyond its pods, keyed by type (read with :meth:`ask`)."""
    gates: tuple[Gate, ...] = ()  # what holds the job back, from its integrations and the apply
    disruption_limit: int = 10  # engine.DEFAULT_DISRUPTION_LIMIT
    """Disruptions (evictions, preemptions, lost nodes) the job's replicas may
    suffer, each recreated without counting against ``backoff_limit``, before
    the job fails (the operator's ``--disruption-limit``; 0: no limit)."""
    failure_rules: tuple[tuple[tuple[str, int], ...], ...] | None = None
    """Sets of replicas (type, index): a replica failed for good fails the job only
    once every replica of one set has (GenericJob's ``failureRules``); None: any
    replica failed for good does. A replica that cannot start, hangs or is
    disrupted too often fails the job either way."""
    start_timeout: float | None = None
    """Seconds a pod placed on a node may take to start its containers before
    the job fails (the job's annotation ``t9k.dev/pod-start-timeout-seconds``;
    None: the operator's ``--pod-start-timeout``; 0: no limit)."""
    heartbeats: tuple[Heartbeat, ...] = ()
    """The pods the integrations hear from: what the hang rule judges."""
    checkpoints: tuple[Checkpointed, ...] = ()
    """The newest checkpoint each pod reported (from the integrations)."""

    def ask(self, of: type[A]) -> A | None:
        """What the job asks of type ``of``; None when it asks nothing of it."""
        found = self.asks.get(of)
        return found if isinstance(found, of) else None

    def asking(self, *asks: object) -> JobView:
        """The view with ``asks`` in place of what the job asked of their types
        (an integration that serves a request rewrites it for those after it)."""
        return replace(self, asks={**self.asks, **asks_of(*asks)})

    def gate(self, *holds: Hold) -> Gate | None:
        """The first gate that holds back as much as one of ``holds``."""
        return next((g for g in self.gates if g.hold in holds), None)
