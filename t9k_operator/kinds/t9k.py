"""What the T9k job kinds share when they view a job: the ``runPolicy`` and
``runMode`` fields in the engine's terms, and success decided by one replica."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from t9k_operator.api.specs import ReplicaDebugSpec, ResumeSpec, RunMode, RunPolicy, SchedulerPolicy
from t9k_operator.builders.gang import priority_class
from t9k_operator.kinds.asks import SchedulingRequest
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.view import JobView, Outcome, Override


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
