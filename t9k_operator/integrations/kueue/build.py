"""Queueing and quota with Kueue: the Workload a job waits in.

With ``--kueue``, a job that names a queue (``spec.scheduler.t9kScheduler.queue``,
MSJob's ``runPolicy.schedulingPolicy.queue``, or the label
``kueue.x-k8s.io/queue-name``) gets a ``kueue.x-k8s.io/v1beta2`` Workload in
that LocalQueue, owned by the job: one pod set per replica type, with the
count and the pod template (containers' requests, node selector,
tolerations, affinity) Kueue charges against the ClusterQueue's quota. The
operator creates no pod until Kueue admits the Workload, and deletes the
Workload (giving the quota back at once) when the job ends or is paused.

The job's priority becomes the Workload's: a T9k ``priority`` n names the
WorkloadPriorityClass ``t9k-priority-<n>`` (value n, installed with
manifests/kueue), MSJob's ``priorityClass`` names one itself. The reconciler
reads its value; where no WorkloadPriorityClass has the name, it takes the
PriorityClass of that name (``priorityClassRef`` of group
``scheduling.k8s.io``), as Kueue does for a pod's priority class.

``v1beta2``: Kueue's storage version since v0.16 (served since v0.15;
``v1beta1`` is served only through Kueue's conversion webhook and is to go
in v0.18). The operator writes and reads v1beta2 alone, so it needs no
conversion webhook and Kueue v0.15 or later.

Pure functions, like every builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.parts import DEFAULT_SCHEDULER, SCHEDULING, StatusPart
from t9k_operator.api.specs import MAX_PRIORITY
from t9k_operator.builders.common import OPERATOR, Job, child_metadata, job_labels
from t9k_operator.builders.scheduling import priority_class
from t9k_operator.integrations.kueue import topology
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.queued_pods import labelled

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
API_VERSION = f"{GROUP}/{VERSION}"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The standard label by which a job names its LocalQueue."""
WORKLOAD_PRIORITY_CLASS = ("kueue.x-k8s.io", "WorkloadPriorityClass")
POD_PRIORITY_CLASS = ("scheduling.k8s.io", "PriorityClass")
"""The (group, kind) a Workload's ``spec.priorityClassRef`` names: a
WorkloadPriorityClass, or a pod PriorityClass."""
POD_SET_FIELDS = ("nodeSelector", "tolerations", "affinity", "overhead", "runtimeClassName")
"""What of a pod's spec, beside its containers, decides where it may run and
what it costs: Kueue matches flavors and charges quota by these."""
CONTAINER_FIELDS = ("name", "image", "resources")


@dataclass(frozen=True)
class WorkloadPriority:
    """The priority class a Workload names: a WorkloadPriorityClass, or a
    PriorityClass when no WorkloadPriorityClass has that name (Kueue's own order)."""

    name: str
    value: int
    source: tuple[str, str] = WORKLOAD_PRIORITY_CLASS  # (group, kind)


@dataclass(frozen=True)
class PodSet:
    """One replica type of a job as Kueue counts it: how many pods of which shape."""

    name: str
    count: int
    pod: Obj  # a pod of the type, as built


def pod_set_name(replica_type: str) -> str:
    """A replica type as a pod set name (a DNS label: MSJob's ``Worker`` is ``worker``)."""
    return replica_type.lower()


def _container(container: Obj) -> Obj:
    return {k: container[k] for k in CONTAINER_FIELDS if k in container}


def pod_set(ps: PodSet) -> Obj:
    """A Workload pod set: the count, the parts of the pod that cost quota, and
    where its pods must be placed together (``topology.py``)."""
    spec = ps.pod["spec"]
    template: Obj = {"containers": [_container(c) for c in spec["containers"]]}
    if spec.get("initContainers"):
        template["initContainers"] = [_container(c) for c in spec["initContainers"]]
    template.update({k: spec[k] for k in POD_SET_FIELDS if spec.get(k)})
    out: Obj = {"name": ps.name, "count": ps.count, "template": {"spec": template}}
    placement = topology.request(ps.pod["metadata"].get("annotations") or {})
    if placement is not None:
        out["topologyRequest"] = placement
    return out


def workload(
    job: Job,
    name: str,
    queue: str,
    pod_sets: Sequence[PodSet],
    priority: WorkloadPriority | None = None,
) -> Obj:
    """The job's Workload ``name`` in LocalQueue ``queue``. Without a priority
    class its priority is 0, as Kueue's own job integrations write it (its
    visibility API reads every pending Workload's priority)."""
    spec: Obj = {
        "queueName": queue,
        "podSets": [pod_set(ps) for ps in pod_sets if ps.count],
        "priority": 0,
    }
    if priority is not None:
        group, kind = priority.source
        spec["priorityClassRef"] = {"group": group, "kind": kind, "name": priority.name}
        spec["priority"] = priority.value
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": child_metadata(job, name, job_labels(job.kind, job.name)),
        "spec": spec,
    }


GATE = "t9k.dev/kueue-admission"
"""The scheduling gate a queued pod that is no job's waits behind until Kueue
admits its Workload (``queued.py``)."""


def queue_pod(pod: Obj, queue: str) -> Obj:
    """``pod`` (no job's) labelled with its LocalQueue and held behind :data:`GATE`."""
    gates = pod["spec"].setdefault("schedulingGates", [])
    if {"name": GATE} not in gates:
        gates.append({"name": GATE})
    return labelled(pod, queue)


@dataclass(frozen=True)
class Placement:
    """Where Kueue's admission puts a pod set: the node labels and tolerations
    of the ResourceFlavors it was assigned."""

    node_labels: Mapping[str, str]
    tolerations: Sequence[Obj] = ()


def place(pod: Obj, placement: Placement) -> Obj:
    """``pod`` steered to its admitted flavors' nodes, as Kueue's job integrations
    do: their node labels join its node selector (the flavor's win), their
    tolerations join its tolerations."""
    spec = pod["spec"]
    if placement.node_labels:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **placement.node_labels}
    extra = [t for t in placement.tolerations if t not in (spec.get("tolerations") or [])]
    if extra:
        spec["tolerations"] = [*(spec.get("tolerations") or []), *extra]
    return pod


def assigned_flavors(workload: Obj) -> dict[str, set[str]]:
    """The flavors an admitted Workload was assigned, by pod set."""
    admission = (workload.get("status") or {}).get("admission") or {}
    return {
        str(a.get("name")): {str(f) for f in (a.get("flavors") or {}).values()}
        for a in admission.get("podSetAssignments") or []
    }


def counts(workload: Obj) -> dict[str, int]:
    """A Workload's pods by pod set: what it asked quota for."""
    return {ps["name"]: int(ps.get("count", 0)) for ps in workload["spec"].get("podSets") or []}


def workload_priority_classes() -> list[Obj]:
    """The WorkloadPriorityClasses behind the T9k priority levels (value n for
    ``t9k-priority-<n>``), installed with manifests/kueue."""
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": {
                "name": priority_class(level),
                "labels": {"app.kubernetes.io/part-of": OPERATOR},
            },
            "value": level,
            "description": (
                f"T9k job priority {level} (spec.scheduler.t9kScheduler.priority): Kueue "
                "admits the higher first, and may preempt lower ones if the ClusterQueue says so."
            ),
        }
        for level in range(MAX_PRIORITY + 1)
    ]


# -- its part of the job's status ------------------------------------------------------


class WorkloadStatus(T9kModel):
    """The job's Kueue Workload, as the operator last saw it."""

    name: str = Field(description="Name of the Workload (as the job's PodGroup's).")
    queue: str = Field(description="The LocalQueue the job waits in.")
    admitted: bool = Field(description="Whether Kueue has admitted the Workload.")
    cluster_queue: str | None = Field(
        default=None, description="The ClusterQueue that admitted it."
    )
    message: str | None = Field(
        default=None, description="Why Kueue does not admit it (Kueue's own words)."
    )


def _workload_lines(workload: Mapping[str, Any]) -> list[str]:
    admitted = "admitted" if workload.get("admitted") else "not admitted"
    text = f"Workload {workload.get('name', '')} in {workload.get('queue', '')}: {admitted}"
    if workload.get("clusterQueue"):
        text += f" by {workload['clusterQueue']}"
    if workload.get("message"):
        text += f": {workload['message']}"
    return [text]


WORKLOAD_PART = StatusPart(
    key="workload",
    model=WorkloadStatus,
    description=(
        "The job's Kueue Workload, when the operator runs with --kueue and the job "
        "names a queue: its LocalQueue, whether Kueue admitted it, and why not."
    ),
    section=SCHEDULING,
    lines=_workload_lines,
    absent=DEFAULT_SCHEDULER,
)
