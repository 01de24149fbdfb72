"""What the T9k job kinds share when they view a job: the ``runPolicy`` and
``runMode`` fields in the engine's terms, success decided by one replica, and
the pods and objects of a kind whose launcher starts the training over ssh."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from t9k_operator.api.specs import ReplicaDebugSpec, ResumeSpec, RunMode, RunPolicy, SchedulerPolicy
from t9k_operator.builders import ssh
from t9k_operator.builders.scheduling import priority_class
from t9k_operator.kinds.asks import (
    SchedulingRequest,
    checkpoint_on_stop,
    hang_policy,
    with_tensorboard,
)
from t9k_operator.kinds.contract import PodMode, Services, job_view
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.view import JobView, Outcome, Override, Role, asks_of
from t9k_operator.objects import Obj


def _overrides(items: Sequence[ReplicaDebugSpec | ResumeSpec]) -> tuple[Override, ...]:
    return tuple(
        Override(
            type=item.type,
            command=tuple(item.command) if item.command else None,
            args=tuple(item.args) if isinstance(item, ResumeSpec) and item.args else None,
            skip_init_container=item.skip_init_container,
        )
        for item in items
    )


def run_mode_view(mode: RunMode | None) -> dict[str, Any]:
    """``spec.runMode`` (debug, pause) as JobView fields."""
    debug = mode.debug if mode is not None else None
    pause = mode.pause if mode is not None else None
    return {
        "debug": bool(debug and debug.enabled),
        "debug_overrides": _overrides(debug.replica_specs) if debug else (),
        "paused": bool(pause and pause.enabled),
        "resume_overrides": _overrides(pause.resume_specs) if pause else (),
    }


def run_policy_view(policy: RunPolicy, mode: RunMode | None) -> dict[str, Any]:
    """The T9k ``runPolicy`` and ``runMode`` as JobView fields (the models'
    defaults); what the job asks of its progress is the kind's to state."""
    return {
        "backoff_limit": policy.backoff_limit,
        "active_deadline_seconds": policy.active_deadline_seconds,
        "cleanup_policy": policy.clean_up_policy,
        "restart_scope": policy.restart_scope or "Replica",
        **run_mode_view(mode),
    }


def scheduling_request(scheduler: SchedulerPolicy | None, at_once: int) -> SchedulingRequest:
    """What a T9k job asks of a scheduler: ``at_once`` pods placed together, in
    the queue and with the priority of ``spec.scheduler.t9kScheduler``."""
    t9k = scheduler.t9k_scheduler if scheduler is not None else None
    if t9k is None:
        return SchedulingRequest(at_once)
    return SchedulingRequest(
        at_once,
        queue=t9k.queue,
        priority_class=priority_class(t9k.priority) if t9k.priority is not None else None,
        asked_by="spec.scheduler.t9kScheduler",
    )


def containerless_replica(templates: Sequence[Mapping[str, Any]]) -> str | None:
    """The error of a job whose ``spec.replicaSpecs[i].template`` (``templates``,
    in order) has no container, from which no pod can be built; None if all have."""
    for i, template in enumerate(templates):
        if not (template.get("spec") or {}).get("containers"):
            return (
                f"spec.replicaSpecs[{i}].template.spec.containers is empty: "
                "give the replica a container to run"
            )
    return None


class T9kSpec(Protocol):
    """The spec of a T9k kind with ``runPolicy``, ``runMode`` and ``scheduler``."""

    @property
    def scheduler(self) -> SchedulerPolicy | None: ...

    @property
    def run_policy(self) -> RunPolicy: ...

    @property
    def run_mode(self) -> RunMode | None: ...


def t9k_job_view(
    kind: str,
    meta: Mapping[str, Any],
    roles: tuple[Role, ...],
    error: str | None,
    spec: T9kSpec,
    at_once: int,
) -> JobView:
    """The view of a job whose ``runPolicy``, ``runMode`` and ``scheduler`` are the
    T9k kinds' own: ``at_once`` pods scheduled together, hung as runPolicy.progress
    says, restarted and cleaned up as runPolicy and runMode say."""
    return job_view(
        kind,
        meta,
        roles,
        error,
        asks=asks_of(
            scheduling_request(spec.scheduler, at_once),
            hang_policy(spec.run_policy.progress),
            checkpoint_on_stop(spec.run_policy.checkpoint),
            with_tensorboard(spec),
        ),
        **run_policy_view(spec.run_policy, spec.run_mode),
    )


class TypedReplicas(Protocol):
    """One entry of a T9k kind's ``spec.replicaSpecs``: its type, count and restart policy."""

    @property
    def type(self) -> str: ...

    @property
    def replicas(self) -> int: ...

    @property
    def restart_policy(self) -> str: ...


def replica_specs_view(
    kind: str,
    meta: Mapping[str, Any],
    error: str | None,
    spec: T9kSpec,
    replica_specs: Sequence[TypedReplicas],
) -> JobView:
    """:func:`t9k_job_view` of a kind whose roles are its ``spec.replicaSpecs``
    entries, all of them scheduled together."""
    roles = tuple(Role(rs.type, rs.replicas, rs.restart_policy) for rs in replica_specs)
    return t9k_job_view(kind, meta, roles, error, spec, sum(rs.replicas for rs in replica_specs))


def succeeded_with(state: ReplicaState | None) -> Outcome | None:
    """The job's success when the replica that decides it (the master, worker-0,
    the launcher) has succeeded; None while it has not."""
    if state is not None and state.phase == "Succeeded":
        return Outcome("Succeeded", "Succeeded", "The job has finished successfully.")
    return None


class DecidedByOneReplica:
    """The ``outcome`` of a kind whose job succeeds when the replica that
    decides it (its :meth:`deciding_replica`) has succeeded."""

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        raise NotImplementedError

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        return succeeded_with(replicas.get(self.deciding_replica(job)))


WORKERS_ONLY = frozenset({"worker"})


class LauncherBuilders(Protocol):
    """The builders module of a kind with one launcher pod and ssh workers."""

    def build_launcher(self, job: Any, mode: PodMode) -> Obj: ...

    def build_worker(self, job: Any, index: int, mode: PodMode) -> Obj: ...

    def build_service(self, job: Any) -> Obj: ...

    def hostfile_configmap(self, job: Any) -> Obj: ...

    def auth_dir(self, job: Any) -> str: ...


class LaunchedOverSsh:
    """A kind whose launcher pod starts the training over ssh on workers that run
    sshd (ColossalAIJob, MPIJob): the launcher decides the job, only the workers
    are cleaned up, and the pods, the Service, the hostfile and the ssh Secret
    come from the kind's :attr:`launcher_builders`."""

    launcher_builders: ClassVar[LauncherBuilders]
    pod_templates: tuple[str, ...] = ("spec.worker.template",)
    uses_ssh = True

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return ("launcher", 0)

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        return WORKERS_ONLY

    def build_pod(self, job: Any, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        if type_ == "launcher":
            return self.launcher_builders.build_launcher(job, mode)
        return self.launcher_builders.build_worker(job, index, mode)

    def extras(self, job: Any) -> list[Obj]:
        build = self.launcher_builders
        return [build.build_service(job), build.hostfile_configmap(job)]

    def ssh_secret(self, job: Any, private_key: str, public_key: str) -> Obj | None:
        auth_dir = self.launcher_builders.auth_dir(job)
        return ssh.ssh_secret(job, private_key, public_key, auth_dir)
