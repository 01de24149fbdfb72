"""The operator's gang scheduling setting, and reading a PodGroup back.

``--gang-scheduler`` names the cluster's gang scheduler (``none``, the
default; ``volcano``; ``coscheduling``); with one, every job gets a PodGroup
(:mod:`t9k_operator.builders.gang`) and its pods join it. Without one, a job
that asks for gang scheduling (``spec.scheduler.t9kScheduler``, MSJob's
``schedulingPolicy``) gets a Warning Event and runs with the default
scheduler, or, with ``--gang-unavailable=hold``, waits (Pending, with a
condition saying why) until the operator runs with a gang scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t9k_operator.builders.gang import Backend
from t9k_operator.kube import KubeClient, Resource
from t9k_operator.kube.discovery import not_served as api_not_served
from t9k_operator.reconcilers.kind import GroupState

WARN, HOLD = "warn", "hold"
UNAVAILABLE_POLICIES = (WARN, HOLD)
UNAVAILABLE = "GangSchedulerUnavailable"
"""Reason of the Event (and, when held, of the condition) of a job that asks for
gang scheduling from an operator that has none."""
QUEUE_NOT_SUPPORTED = "QueueNotSupported"


@dataclass(frozen=True)
class GangConfig:
    backend: Backend | None = None
    hold: bool = False
    """Without a backend, hold jobs that ask for gang scheduling instead of
    running them with the default scheduler."""

    @property
    def resource(self) -> Resource | None:
        be = self.backend
        return None if be is None else Resource(be.group, be.version, "podgroups", "PodGroup")


NO_GANG_SCHEDULER = GangConfig()


def not_served(client: KubeClient, config: GangConfig) -> str | None:
    """Why the backend cannot be used (its PodGroup API is not served), or None."""
    resource = config.resource
    if resource is None:
        return None
    missing = api_not_served(client, resource)
    if missing is None:
        return None
    assert config.backend is not None
    return (
        f"--gang-scheduler={config.backend.name} needs the PodGroup API {missing}, which "
        "this cluster does not serve: install the gang scheduler (docs/scheduling.md) "
        "or run the operator with --gang-scheduler=none"
    )


def group_state(backend: Backend, name: str, group: Mapping[str, Any] | None) -> GroupState:
    """A PodGroup (or its absence) as the engine reads it."""
    status = (group or {}).get("status") or {}
    waiting = [
        str(c.get("message") or c.get("reason") or "")
        for c in status.get("conditions") or []
        if c.get("type") == "Unschedulable" and c.get("status") == "True"
    ]
    return GroupState(
        backend=backend.name,
        name=name,
        phase=str(status.get("phase") or ""),
        queue=str(((group or {}).get("spec") or {}).get("queue") or ""),
        message=waiting[-1] if waiting else "",
    )
