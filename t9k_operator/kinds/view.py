"""A job in the engine's terms: the vocabulary the kinds, the engine and the
integrations share.

A kind reads its parsed job into a :class:`JobView` (roles, policies, what
it asks of a scheduler); the integrations add :class:`Gate` s to it (why the
job may not have pods yet, or why its pods wait); the engine plans from it.
Nothing here names a kind or an integration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from t9k_operator.api.progress import ProgressPolicy
from t9k_operator.builders.gang import NO_GANG, GangRequest


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
class HangPolicy:
    """How long a replica that has reported its progress may go without a
    report (``spec.runPolicy.progress``), and what then."""

    timeout_seconds: int
    on_hang: str = "Fail"  # Fail | Restart


def hang_policy(progress: ProgressPolicy | None, restarts: bool = True) -> HangPolicy | None:
    """A job's ``runPolicy.progress`` as the engine reads it (None: never hung);
    a kind that ``restarts`` no pod fails a hung job whatever onHang says."""
    if progress is None:
        return None
    return HangPolicy(progress.hang_timeout_seconds, progress.on_hang if restarts else "Fail")


@dataclass(frozen=True)
class Heard:
    """When the operator last received a progress report from one pod of the job."""

    uid: str  # the pod's uid: a report of a pod since replaced says nothing of its replica
    at: datetime


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
    gang: GangRequest = NO_GANG  # what the job asks of a (gang) scheduler and a queue
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

    hang: HangPolicy | None = None
    """``runPolicy.progress``: when a silent job is hung (None: never)."""
    heard: tuple[Heard, ...] = ()
    """The pods' last progress reports, from the progress integration (none
    without it): what the hang rule judges."""

    def gate(self, *holds: Hold) -> Gate | None:
        """The first gate that holds back as much as one of ``holds``."""
        return next((g for g in self.gates if g.hold in holds), None)
