"""The kind contract: what a job kind gives the operator, in one place.

A kind is its API module (``t9k_operator.api.<kind>``: the models, and the
``CRD`` that declares its identity: group, version, plural, kind), its
builders (``t9k_operator.builders.<kind>``: pure functions from a job to its
children) and a class here satisfying :class:`JobKind`, listed once in
:data:`t9k_operator.reconcilers.registry.KINDS`. Everything else (the
controller, the CRD and RBAC generators, the thread pool, the tests' list of
kinds) derives from that list.

The types the engine and the hooks exchange live here too, so the engine, the
kinds and the reconciler share one vocabulary and this module stays pure (no
I/O, no runtime plumbing: the import contract in pyproject.toml checks it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from t9k_operator.api.common import CrdInfo
from t9k_operator.builders.common import PodMode as PodMode  # part of the contract
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pods import ReplicaState

Replicas = Mapping[tuple[str, int], ReplicaState]
"""The job's pods by (replica type, index)."""
Job = Mapping[str, Any]
"""A job as stored (the raw object; kinds parse it with their API model)."""
Services = Mapping[str, Obj]
"""The job's Services by name."""


@dataclass(frozen=True)
class Role:
    """One replica type of a job."""

    type: str
    replicas: int
    restart_policy: str = "Never"


@dataclass(frozen=True)
class Override:
    """A per-type debug or resume setting from ``spec.runMode``."""

    type: str
    command: tuple[str, ...] | None = None
    args: tuple[str, ...] | None = None
    skip_init_container: bool = False


@dataclass(frozen=True)
class JobView:
    """What the engine needs to know about a job, in kind-neutral terms."""

    kind: str
    namespace: str
    name: str
    uid: str
    generation: int
    roles: tuple[Role, ...]
    backoff_limit: int = 3
    active_deadline_seconds: int | None = None
    cleanup_policy: str = "None"  # None | All | Unfinished
    debug: bool = False
    debug_overrides: tuple[Override, ...] = ()
    paused: bool = False
    resume_overrides: tuple[Override, ...] = ()
    status: Mapping[str, Any] = field(default_factory=dict)
    spec_error: str | None = None  # an invalid spec the schema could not catch
    spec_error_reason: str = "InvalidSpec"  # the Failed reason that spec_error gives
    waiting: str | None = None  # why pods cannot be created yet (a refusal that may pass)
    extra: Mapping[str, Any] = field(default_factory=dict)  # kind-specific, for its hooks


@dataclass(frozen=True)
class Outcome:
    phase: str  # Succeeded | Failed
    reason: str
    message: str


class ChildNotReady(Exception):
    """A child a pod depends on is not ready yet (MSJob: the scheduler Service's
    ClusterIP); the reconciler looks again shortly."""


class JobKind(Protocol):
    """Everything the operator needs from one job kind."""

    crd: CrdInfo
    """Its identity and CRD (declared in its API module)."""
    training_containers: tuple[str, ...]
    """Names of the container that trains, in order of preference (else the first)."""
    debug_command: tuple[str, ...]
    """What debug pods run unless the job says otherwise."""
    uses_ssh: bool
    """Whether replicas talk over ssh: the job then gets its own key Secret."""

    # -- reading the job -------------------------------------------------------------

    def view(self, job: Mapping[str, Any]) -> JobView:
        """The job in the engine's terms; ``spec_error`` names what admission
        could not refuse (an object stored before the CRD's rules)."""
        ...

    def fields_not_acted_on(self, job: Mapping[str, Any]) -> list[str]:
        """Fields the job sets that are stored but not acted on."""
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

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        """The pod of one replica. ``services`` are the job's Services by name, for
        kinds whose pods need a Service's value (MSJob: the scheduler's ClusterIP);
        raise :class:`ChildNotReady` when it is not there yet."""
        ...

    def extras(self, job: Mapping[str, Any]) -> list[Obj]:
        """Children besides pods: Services (created once) and ConfigMaps (kept
        equal to what is built, so a hostfile follows scaling)."""
        ...

    def ssh_secret(self, job: Mapping[str, Any], private_key: str, public_key: str) -> Obj | None:
        """The job's ssh key Secret, for kinds whose replicas talk over ssh."""
        ...

    # -- the status shape ----------------------------------------------------------------

    def render_status(self, job: Mapping[str, Any], engine_status: Obj) -> Obj:
        """The status to store, from the engine's. A kind whose stored status has
        another shape (MSJob's is Kubeflow's) also reads the engine's back in
        ``view``."""
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


class KindBase:
    """The hook defaults most kinds keep: create any role at once, clean up every
    type, store the engine's status as it is, no ssh, every field acted on."""

    uses_ssh = False
    not_acted_on: tuple[str, ...] = ()
    """Fields the API stores but this operator does not act on (yet): a job
    that sets one gets a Warning Event saying so."""

    def fields_not_acted_on(self, job: Mapping[str, Any]) -> list[str]:
        return present_fields(job, self.not_acted_on)

    def may_create(self, job: JobView, replica_type: str, replicas: Replicas) -> bool:
        return True

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        return None

    def render_status(self, job: Mapping[str, Any], engine_status: Obj) -> Obj:
        return engine_status

    def ssh_secret(self, job: Mapping[str, Any], private_key: str, public_key: str) -> Obj | None:
        return None
