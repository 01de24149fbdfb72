"""Gang scheduling: the job's PodGroup in the cluster's gang scheduler.

``--gang-scheduler`` names the cluster's gang scheduler (``none``, the
default, or one of :data:`~t9k_operator.integrations.gang.build.BACKENDS`); with one,
every job gets a PodGroup (:mod:`t9k_operator.integrations.gang.build`), its pods join
it, and a job whose pods are all created waits, Pending, saying which
scheduler places its group and why it has not yet. The PodGroup follows an
elastic job's ``minMember`` and is deleted when the job finishes or pauses.

Without one, a job that asks for gang scheduling (``spec.scheduler.t9kScheduler``,
MSJob's ``schedulingPolicy``) gets a Warning Event and runs with the default
scheduler, or, with ``--gang-unavailable=hold``, waits (Pending, with a
condition saying why) until the operator runs with a gang scheduler.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from t9k_operator.api.parts import StatusPart
from t9k_operator.builders import scheduling
from t9k_operator.integrations.gang import build as gang
from t9k_operator.integrations.gang.build import Backend
from t9k_operator.kinds.asks import NOTHING_ASKED, SchedulingRequest
from t9k_operator.kinds.view import Gate, Hold, JobView
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Base,
    Caches,
    Event,
    JobInput,
    Needs,
    Rule,
    Templates,
    Watch,
    last_seen,
)
from t9k_operator.resources import Resource

WARN, HOLD = "warn", "hold"
UNAVAILABLE_POLICIES = (WARN, HOLD)
UNAVAILABLE = "GangSchedulerUnavailable"
"""Reason of the Event (and, when held, of the condition) of a job that asks for
gang scheduling from an operator that has none."""
QUEUE_NOT_SUPPORTED = "QueueNotSupported"
WAITING_FOR_GANG = "WaitingForGangScheduler"


def podgroups(be: Backend) -> Resource:
    """The PodGroup API of a gang scheduler."""
    return Resource(be.group, be.version, "podgroups", "PodGroup")


@dataclass(frozen=True)
class GroupState:
    """The job's PodGroup as last seen."""

    backend: str  # the gang scheduler: volcano | coscheduling
    name: str
    phase: str = ""  # the PodGroup's status.phase ("" until the scheduler writes one)
    message: str = ""  # why it waits, from its conditions
    queue: str = ""  # the queue it waits in ("" for a scheduler without queues)


def group_state(backend: Backend, name: str, group: Mapping[str, Any] | None) -> GroupState:
    """A PodGroup (or its absence) as the job reads it."""
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


def request_of(view: JobView) -> SchedulingRequest:
    """What the job asks of a gang scheduler (nothing, when it states nothing)."""
    return view.ask(SchedulingRequest) or NOTHING_ASKED


def waiting_gate(group: GroupState, request: SchedulingRequest) -> Gate:
    """What a job whose pods are all created says while its group is not placed."""
    queue = group.queue or request.queue
    where = f", queue {queue}" if queue else ""
    message = (
        f"Waiting for the gang scheduler ({group.backend}) to place all {request.pods_at_once} "
        f"pods of PodGroup {group.name} at once{where}: PodGroup phase "
        f"{group.phase or 'not reported yet'}"
    )
    where = f" in queue {queue}" if queue else ""
    event = (
        f"Waiting for the gang scheduler ({group.backend}) to place PodGroup {group.name}{where}"
    )
    return Gate(WAITING_FOR_GANG, message, Hold.NONE, event=event, detail=group.message)


@dataclass(frozen=True)
class GangState:
    """A job as gang scheduling sees it."""

    group: GroupState | None = None  # its PodGroup as last seen (with a gang scheduler)
    seen: Obj | None = None  # that PodGroup's object, if it exists
    desired: Obj | None = None  # the PodGroup the job should have
    held: bool = False  # it asks for gang scheduling; there is none and the operator holds it


class GangScheduling(Base[GangState]):
    """The gang scheduling integration, configured with one backend or none."""

    name = "gang"
    serves: ClassVar[tuple[type, ...]] = (SchedulingRequest,)
    parts: ClassVar[tuple[StatusPart, ...]] = (gang.POD_GROUP_PART,)

    def __init__(self, backend: Backend | None = None, hold: bool = False) -> None:
        self.backend = backend
        self.hold = hold
        """Without a backend, hold jobs that ask for gang scheduling instead of
        running them with the default scheduler."""
        self.resource = None if backend is None else podgroups(backend)

    @property
    def engine(self) -> str:
        """It queues a pod that is no job's in a gang scheduler with queues
        (Volcano): a PodGroup of one (``queued.py``)."""
        be = self.backend
        return f"{be.name.capitalize()} queue" if be is not None and be.queues else ""

    def queue_pod(self, pod: Obj, queue: str) -> Obj:
        assert self.backend is not None  # only asked when engine says it queues
        return gang.queue_pod(pod, self.backend, queue)

    # -- configuration ---------------------------------------------------------------------

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--gang-scheduler",
            default="none",
            choices=("none", *gang.BACKENDS),
            help=(
                "the cluster's gang scheduler: every job gets a PodGroup of it and its pods "
                "join the group (default none; docs/scheduling.md)"
            ),
        )
        p.add_argument(
            "--gang-scheduler-name",
            default=None,
            help=(
                "schedulerName of the gang scheduler's pods (default: "
                + ", ".join(f"{v} for {k}" for k, v in gang.DEFAULT_SCHEDULER_NAMES.items())
                + ")"
            ),
        )
        p.add_argument(
            "--gang-unavailable",
            default=WARN,
            choices=UNAVAILABLE_POLICIES,
            help=(
                "with --gang-scheduler=none, what happens to a job that asks for gang "
                "scheduling (spec.scheduler.t9kScheduler, MSJob schedulingPolicy): warn (a "
                "Warning Event, then run with the default scheduler; the default) or hold "
                "(Pending until the operator runs with a gang scheduler)"
            ),
        )

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        """The PodGroups of every gang scheduler it can use."""
        return (
            Rule(
                tuple(sorted({gang.backend(name).group for name in gang.BACKENDS})),
                ("podgroups",),
                ("get", "list", "watch", "create", "update", "delete"),
                why="The job's PodGroup, with --gang-scheduler: created with the job, its\n"
                "minMember updated as an elastic job scales, deleted when the job finishes\n"
                "or pauses (a finished job holds no quota). With Volcano, a queued pod that\n"
                "is no job's (a TensorBoard's naming a queue) gets a PodGroup of one.",
            ),
        )

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        if args.gang_scheduler_name is not None and args.gang_scheduler == "none":
            return "--gang-scheduler-name needs --gang-scheduler"
        return None

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> GangScheduling:
        backend = (
            None
            if args.gang_scheduler == "none"
            else gang.backend(args.gang_scheduler, args.gang_scheduler_name)
        )
        return cls(backend, hold=args.gang_unavailable == HOLD)

    @property
    def needs(self) -> tuple[Needs, ...]:
        if self.backend is None or self.resource is None:
            return ()
        name = self.backend.name
        return (
            Needs(
                self.resource,
                lambda missing: (
                    f"--gang-scheduler={name} needs the PodGroup API {missing}, which "
                    "this cluster does not serve: install the gang scheduler "
                    "(docs/scheduling.md) or run the operator with --gang-scheduler=none"
                ),
            ),
        )

    def watches(self) -> tuple[Watch, ...]:
        return () if self.resource is None else (Watch(self.resource, owned=True),)

    # -- a job -------------------------------------------------------------------------------

    def observe(self, job: JobInput, caches: Caches) -> tuple[GangState, JobView]:
        view, request = job.view, request_of(job.view)
        if self.backend is None or self.resource is None:
            return GangState(held=self.hold and bool(request.asked_by)), view
        name = scheduling.group_name(view.name, view.uid)
        seen = caches.get(self.resource, view.namespace, name)
        desired = gang.pod_group(
            job.job,
            self.backend,
            request.pods_at_once,
            queue=request.queue,
            priority_class_name=request.priority_class,
            timeout_seconds=request.timeout_seconds,
            min_resources=request.min_resources,
        )
        return GangState(group_state(self.backend, name, seen), seen, desired), view

    def gate(self, state: GangState, view: JobView) -> Gate | None:
        if state.held:
            message = (
                f"{request_of(view).asked_by} asks for gang scheduling, but the operator runs "
                "without a gang scheduler (--gang-scheduler=none, --gang-unavailable=hold): "
                "the job waits until it runs with one"
            )
            return Gate(UNAVAILABLE, message, Hold.NEW)
        if state.group is not None:
            return waiting_gate(state.group, request_of(view))
        return None

    def children(
        self, state: GangState, view: JobView, templates: Templates, pods: int
    ) -> list[Action]:
        want, seen = state.desired, state.seen
        if want is None or self.resource is None:
            return []
        if seen is None:
            return [Action("create", self.resource, want, "the job's PodGroup")]
        if any(seen["spec"].get(k) != v for k, v in want["spec"].items()):
            # Elastic scaling moves minMember; the scheduler's own spec fields stay.
            updated = copy.deepcopy(seen)
            updated["spec"] = {**seen["spec"], **want["spec"]}
            return [Action("replace", self.resource, updated, "the job's PodGroup")]
        return []

    def release(self, state: GangState, view: JobView) -> list[Action]:
        seen = state.seen
        if seen is None or self.resource is None or seen["metadata"].get("deletionTimestamp"):
            return []
        return [Action("delete", self.resource, seen, "the job's PodGroup")]

    def decorate(self, state: GangState, view: JobView, pod: Obj) -> None:
        if self.backend is not None and state.group is not None:
            gang.join(pod, self.backend, state.group.name, request_of(view).priority_class)

    def status(self, state: GangState, view: JobView, status: Obj) -> list[Event]:
        """``status.podGroup``: the job's PodGroup as last seen, while the job has one."""
        group, request = state.group, request_of(view)
        seen: Obj | None = None
        if group is not None:
            seen = {"name": group.name, "scheduler": group.backend}
            seen["minMember"] = request.pods_at_once
            if group.queue or request.queue:
                seen["queue"] = group.queue or request.queue
            if group.phase:
                seen["phase"] = group.phase
            if group.message:
                seen["message"] = group.message
        last_seen(status, view, gang.POD_GROUP_PART.key, seen)
        return []

    def accepted(self, state: GangState, view: JobView) -> list[Event]:
        """Never silently: a job whose gang request this operator cannot serve is told."""
        request, be = request_of(view), self.backend
        asked, queue = request.asked_by, request.queue
        if not asked:
            return []
        if be is None:
            then = (
                "the job waits (Pending) until the operator runs with one"
                if self.hold
                else "the job runs with the default scheduler, its pods placed one by one"
            )
            message = (
                f"{asked} asks for gang scheduling (queue {queue}), but the operator runs "
                f"without a gang scheduler (--gang-scheduler=none): {then}"
            )
            return [("Warning", UNAVAILABLE, message)]
        if queue and not be.queues:
            message = (
                f"{asked} names queue {queue}, but the gang scheduler ({be.name}) has no "
                "queues: the job is gang-scheduled without one"
            )
            return [("Warning", QUEUE_NOT_SUPPORTED, message)]
        return []
