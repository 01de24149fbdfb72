"""Kueue: the Workload a job waits in, and its admission as the job's gate.

``--kueue`` makes Kueue the gate of every job that names a queue: the job
gets a Workload (:mod:`t9k_operator.integrations.kueue.build`) and creates its pods
only once Kueue admits it. A job that names no queue runs at once, as Kueue
leaves such jobs alone by default (``manageJobsWithoutQueueName: false``).

Which queue: the label ``kueue.x-k8s.io/queue-name`` on the job, else its
``spec.scheduler.t9kScheduler.queue`` (MSJob: ``schedulingPolicy.queue``).
Kueue then serves the job's queue: a gang scheduler places the admitted
job's pods all at once without a queue of its own (Volcano's PodGroup goes
to its default queue), and without a gang scheduler the job is neither
warned nor held for one. So this integration comes before gang scheduling
in the registry: it takes the queue out of the job's view.

Eviction: Kueue marks an admitted Workload ``Evicted`` (preempted by a
higher priority, deactivated, ...) and waits for its owner to stop. The job
loses its pods (its gate holds everything); once none is left the Workload's
quota reservation is given back (what Kueue's own job integrations do), and
Kueue queues the Workload again. Topology-aware placement: ``topology.py``.

The Workload's priority, and the admitted flavors' node labels and
tolerations its pods get, are read from caches of WorkloadPriorityClasses,
PriorityClasses and ResourceFlavors, never from the API server.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from t9k_operator.api.parts import StatusPart
from t9k_operator.builders import scheduling
from t9k_operator.builders.common import REPLICA_TYPE
from t9k_operator.integrations.kueue import build as kueue
from t9k_operator.integrations.kueue import dispatch, prebuilt, topology
from t9k_operator.integrations.kueue.admission import (
    AdmissionState,
    admission_state,
    give_back,
    holds_quota,
)
from t9k_operator.kinds.asks import SchedulingRequest, TopologyPlacement
from t9k_operator.kinds.contract import ChildNotReady
from t9k_operator.kinds.view import Gate, Hold, JobView
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import TERMINAL, fmt_time
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Base,
    Caches,
    Event,
    HandedOver,
    JobInput,
    Needs,
    Rule,
    Templates,
    Unavailable,
    Watch,
    last_seen,
)
from t9k_operator.reconcilers.pipeline.unserved import NOT_ACTED_ON
from t9k_operator.resources import WORKLOADS, Resource

WORKLOAD_PRIORITY_CLASSES = Resource(
    kueue.GROUP,
    kueue.VERSION,
    "workloadpriorityclasses",
    "WorkloadPriorityClass",
    namespaced=False,
)
RESOURCE_FLAVORS = Resource(
    kueue.GROUP, kueue.VERSION, "resourceflavors", "ResourceFlavor", namespaced=False
)
POD_PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
WAITING_FOR_ADMISSION = "WaitingForAdmission"
EVICTED = "EvictedByKueue"


def queue_of(job: Mapping[str, Any], asked: str | None) -> str | None:
    """The LocalQueue a stored job names: its queue-name label, else the queue
    its spec asks for (``asked``)."""
    labels = job["metadata"].get("labels") or {}
    return labels.get(kueue.QUEUE_LABEL) or asked


def priority(caches: Caches, name: str) -> kueue.WorkloadPriority | None:
    """The WorkloadPriorityClass ``name``, else the PriorityClass ``name`` (Kueue's
    order), with its value; None when there is neither."""
    found = caches.get(WORKLOAD_PRIORITY_CLASSES, None, name)
    if found is not None:
        return kueue.WorkloadPriority(name, int(found.get("value") or 0))
    found = caches.get(POD_PRIORITY_CLASSES, None, name)
    if found is not None:
        return kueue.WorkloadPriority(name, int(found.get("value") or 0), kueue.POD_PRIORITY_CLASS)
    return None


def placements(caches: Caches, workload: Obj) -> dict[str, kueue.Placement]:
    """Where an admitted Workload's flavors put each pod set."""
    out: dict[str, kueue.Placement] = {}
    for pod_set, names in kueue.assigned_flavors(workload).items():
        labels: dict[str, str] = {}
        tolerations: list[Obj] = []
        for name in sorted(names):
            flavor = caches.get(RESOURCE_FLAVORS, None, name)
            if flavor is None:
                continue  # deleted since the admission: Kueue will evict it
            spec = flavor.get("spec") or {}
            labels.update(spec.get("nodeLabels") or {})
            tolerations.extend(spec.get("tolerations") or [])
        out[pod_set] = kueue.Placement(labels, tuple(tolerations))
    return out


@dataclass(frozen=True)
class KueueState:
    """A queued job as Kueue sees it (``admission`` None: it names no queue)."""

    admission: AdmissionState | None = None
    seen: Obj | None = None  # its Workload, unless there is none or it is on its way out
    job: Any = None  # the parsed job, to build the Workload from
    priority: kueue.WorkloadPriority | None = None
    priority_name: str | None = None  # the priority class the job names, if any
    placements: Mapping[str, kueue.Placement] = field(default_factory=dict)
    by_topology: frozenset[str] = frozenset()  # pod sets Kueue placed by topology
    now: str = ""
    prebuilt: bool = False  # its Workload is MultiKueue's (``prebuilt.py``)
    adopt: Obj | None = None  # that Workload, once the job is its owner, when it is not yet


class Kueue(Base[KueueState]):
    """The Kueue integration (on with ``--kueue``)."""

    name = "kueue"
    serves: ClassVar[tuple[type, ...]] = (SchedulingRequest, TopologyPlacement)
    parts: ClassVar[tuple[StatusPart, ...]] = (kueue.WORKLOAD_PART,)
    engine = "Kueue LocalQueue"
    """It queues a pod that is no job's too (``queued.py``)."""

    def queue_pod(self, pod: Obj, queue: str) -> Obj:
        return kueue.queue_pod(pod, queue)

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--kueue",
            action="store_true",
            help=(
                "queue jobs with Kueue: a job that names a queue (the label "
                "kueue.x-k8s.io/queue-name, spec.scheduler.t9kScheduler.queue, MSJob's "
                "schedulingPolicy.queue) gets a Workload in that LocalQueue and starts only "
                "when Kueue admits it"
            ),
        )

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        return None

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        read = ("list", "watch")
        return (
            Rule(
                (kueue.GROUP,),
                (WORKLOADS.plural,),
                ("get", "list", "watch", "create", "update", "delete"),
                why="The job's Kueue Workload, with --kueue: created when the job is queued,\n"
                "deleted when it finishes, pauses or changes size; its status written only\n"
                "to give an evicted job's quota reservation back once its pods are gone.\n"
                "On a MultiKueue worker the Workload MultiKueue made for a job is updated\n"
                "once, to make the job its owner, and its status marked Finished at the end;\n"
                "on the manager a dispatched job's is annotated with the worker holding it,\n"
                "and with the count of workers lost.\n"
                "The WorkloadPriorityClass a job's priority names is read for its value\n"
                "(else the PriorityClass of that name, as Kueue does), and the\n"
                "ResourceFlavors an admission assigns for their node labels and tolerations:\n"
                "from caches (list and watch), never read on a reconcile.",
            ),
            Rule((kueue.GROUP,), (f"{WORKLOADS.plural}/status",), ("update",)),
            Rule(
                ("",),
                ("pods",),
                ("patch",),
                why="A queued pod that is no job's (a TensorBoard's naming a queue), with\n"
                "--kueue: patched to take its scheduling gate off (with its admitted\n"
                "flavors' node labels and tolerations) once Kueue admits its Workload,\n"
                "and to say why it waits meanwhile.",
            ),
            Rule((kueue.GROUP,), (WORKLOAD_PRIORITY_CLASSES.plural, RESOURCE_FLAVORS.plural), read),
            Rule((POD_PRIORITY_CLASSES.group,), (POD_PRIORITY_CLASSES.plural,), read),
        )

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> Kueue | None:
        return cls() if args.kueue else None

    @property
    def needs(self) -> tuple[Needs, ...]:
        return (
            Needs(
                WORKLOADS,
                lambda missing: (
                    f"--kueue needs the Workload API {missing}, which this cluster does not "
                    "serve: install Kueue v0.15 or later (docs/scheduling.md) or run the "
                    "operator without --kueue"
                ),
            ),
        )

    def watches(self) -> tuple[Watch, ...]:
        return (
            Watch(WORKLOADS, owned=True),
            Watch(WORKLOAD_PRIORITY_CLASSES),
            Watch(POD_PRIORITY_CLASSES),
            Watch(RESOURCE_FLAVORS),
        )

    def observe(self, job: JobInput, caches: Caches) -> tuple[KueueState, JobView]:
        view = job.view
        request = view.ask(SchedulingRequest)
        queue = queue_of(job.stored, request.queue if request is not None else None)
        if not queue:
            return KueueState(), view
        made = prebuilt.prebuilt(job.stored)  # MultiKueue's, on a worker cluster
        name = made or scheduling.group_name(view.name, view.uid)  # the PodGroup's name too
        seen = caches.get(WORKLOADS, view.namespace, name)
        if seen is not None and seen["metadata"].get("deletionTimestamp"):
            seen = None  # on its way out: the next one waits afresh
        admission = admission_state(name, queue, seen)
        named = request.priority_class if request is not None else None
        state = KueueState(
            admission=admission,
            seen=seen,
            job=job.job,
            priority=priority(caches, named) if named else None,
            priority_name=named,
            placements=placements(caches, seen) if seen and admission.admitted else {},
            by_topology=topology.assigned(seen) if seen and admission.admitted else frozenset(),
            now=fmt_time(job.now),
            prebuilt=made is not None,
            adopt=prebuilt.adopted(seen, job.stored) if made and seen else None,
        )
        # Kueue serves the job's queue: the gang scheduler neither queues nor holds it.
        if request is not None:
            view = view.asking(replace(request, queue=None, asked_by=None))
        return state, view

    def gate(self, state: KueueState, view: JobView) -> Gate | None:
        admission = state.admission
        if admission is None or admission.admitted:
            return None
        why = admission.message or "not evaluated yet"
        if state.prebuilt and state.seen is None:
            why = (
                f"MultiKueue has not created it on this cluster yet (the job's label "
                f"{prebuilt.PREBUILT_LABEL} names it)"
            )
        if admission.evicted:
            message = (
                f"Kueue evicted Workload {admission.workload} ({admission.evicted}: {why}): "
                f"the job's pods are deleted; it waits to be admitted again in LocalQueue "
                f"{admission.queue}"
            )
            return Gate(EVICTED, message, Hold.ALL, event=message, warning=True)
        message = (
            f"Waiting for Kueue to admit Workload {admission.workload} in LocalQueue "
            f"{admission.queue}: {why}"
        )
        return Gate(WAITING_FOR_ADMISSION, message, Hold.ALL, event=message)

    def children(
        self, state: KueueState, view: JobView, templates: Templates, pods: int
    ) -> list[Action]:
        """Create the job's Workload when it has none; when the job's size no
        longer matches it, delete it (the job queues again at its new size); once
        an evicted job's pods are gone, give its quota reservation back."""
        admission, seen = state.admission, state.seen
        if admission is None:
            return []
        what = "the job's Workload"
        roles = [r for r in view.roles if r.replicas]
        if state.adopt is not None:  # MultiKueue's (prebuilt.py): taken as the job's
            return [Action("replace", WORKLOADS, state.adopt, what)]
        if seen is not None:
            resized = kueue.counts(seen) != {kueue.pod_set_name(r.type): r.replicas for r in roles}
            if resized and not state.prebuilt:  # MultiKueue's is never resized here
                return [Action("delete", WORKLOADS, seen, what)]
            if admission.evicted and not pods and holds_quota(seen):
                body = give_back(seen, admission, state.now)
                return [Action("replace_status", WORKLOADS, body, what)]
            return []
        if state.prebuilt:
            return []  # MultiKueue makes it; its event wakes the job (its labels name it)
        if state.priority_name and state.priority is None:
            raise Unavailable(
                what,
                f"Workload {admission.workload}",
                f"neither a WorkloadPriorityClass nor a PriorityClass named "
                f"{state.priority_name} exists",
            )
        try:
            sets = [
                kueue.PodSet(kueue.pod_set_name(r.type), r.replicas, templates(r.type))
                for r in roles
            ]
        except ChildNotReady:
            return []  # the Services first; the reconcile comes back for it
        body = kueue.workload(state.job, admission.workload, admission.queue, sets, state.priority)
        return [Action("create", WORKLOADS, body, what)]

    def release(self, state: KueueState, view: JobView) -> list[Action]:
        seen = state.seen
        if seen is None:
            return []
        if state.prebuilt:  # MultiKueue's: marked Finished once the job's end is stored
            phase = view.status.get("phase")
            if view.paused or phase not in TERMINAL:
                return []
            done = prebuilt.finished(seen, phase == "Succeeded", f"The job {phase}.", state.now)
            return [Action("replace_status", WORKLOADS, done, "the job's Workload")] if done else []
        return [Action("delete", WORKLOADS, seen, "the job's Workload")]

    def handed_over(
        self, state: KueueState, view: JobView, templates: Templates, ended: bool
    ) -> HandedOver | None:
        """A job MultiKueue runs on a worker: its Workload alone, while it is
        active, remembering the worker that holds it (``dispatch.py``)."""
        admission, seen = state.admission, state.seen
        if admission is None:
            return None  # names no queue: MultiKueue does not take it
        if ended:
            return HandedOver(self.release(state, view))
        due = dispatch.due(seen, admission.evicted, admission.admitted) if seen else None
        if due is not None:
            updated, events = due
            return HandedOver([Action("replace", WORKLOADS, updated, "the job's Workload")], events)
        return HandedOver(self.children(state, view, templates, 0))

    def decorate(self, state: KueueState, view: JobView, pod: Obj) -> None:
        labels = pod["metadata"].get("labels") or {}
        pod_set = kueue.pod_set_name(str(labels.get(REPLICA_TYPE)))
        placement = state.placements.get(pod_set)
        if placement is not None:
            kueue.place(pod, placement)
        if pod_set in state.by_topology and state.admission is not None:
            topology.await_domain(pod, pod_set, state.admission.workload)

    def accepted(self, state: KueueState, view: JobView) -> list[Event]:
        placement = view.ask(TopologyPlacement)
        if placement is None or state.admission is not None:
            return []
        return [("Warning", NOT_ACTED_ON, topology.unqueued(placement.asked_by))]

    def status(self, state: KueueState, view: JobView, status: Obj) -> list[Event]:
        """``status.workload``: the job's Kueue Workload as last seen, while it has one."""
        admission = state.admission
        seen: Obj | None = None
        if admission is not None:
            seen = {
                "name": admission.workload,
                "queue": admission.queue,
                "admitted": admission.admitted,
            }
            if admission.cluster_queue:
                seen["clusterQueue"] = admission.cluster_queue
            if admission.message and not admission.admitted:
                seen["message"] = admission.message
        last_seen(status, view, kueue.WORKLOAD_PART.key, seen)
        if state.prebuilt and state.seen is not None:
            # Workers lost before this one, counted on the manager (dispatch.py).
            carried = dispatch.disruptions(state.seen)
            if carried > int(status.get("disruptionCount") or 0):
                status["disruptionCount"] = carried
        return []
