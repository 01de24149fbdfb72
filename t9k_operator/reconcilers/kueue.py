"""The operator's Kueue setting, and reading a Workload back.

``--kueue`` makes Kueue the gate of every job that names a queue: the job
gets a Workload (:mod:`t9k_operator.builders.kueue`) and creates its pods
only once Kueue admits it. A job that names no queue runs at once, as Kueue
leaves such jobs alone by default (``manageJobsWithoutQueueName: false``).

Which queue: the label ``kueue.x-k8s.io/queue-name`` on the job, else its
``spec.scheduler.t9kScheduler.queue`` (MSJob: ``schedulingPolicy.queue``).
With a gang scheduler too, Kueue takes the queue (quota) and the gang
scheduler places the admitted job's pods all at once (Volcano's PodGroup
then goes to its default queue).

Eviction: Kueue marks an admitted Workload ``Evicted`` (preempted by a
higher priority, deactivated, ...) and waits for its owner to stop. The
operator deletes the job's pods; once none is left it takes the quota
reservation back (what Kueue's own job integrations do), and Kueue queues
the Workload again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t9k_operator.builders import kueue
from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.kube.discovery import not_served as api_not_served
from t9k_operator.reconcilers.kind import AdmissionState

WORKLOADS = Resource(kueue.GROUP, kueue.VERSION, "workloads", "Workload")
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


@dataclass(frozen=True)
class KueueConfig:
    enabled: bool = False


NO_KUEUE = KueueConfig()


def not_served(client: KubeClient, config: KueueConfig) -> str | None:
    """Why Kueue cannot be used (its Workload API is not served), or None."""
    if not config.enabled:
        return None
    missing = api_not_served(client, WORKLOADS)
    if missing is None:
        return None
    return (
        f"--kueue needs the Workload API {missing}, which this cluster does not serve: "
        "install Kueue (docs/scheduling.md) or run the operator without --kueue"
    )


def queue_of(job: Mapping[str, Any], asked: str | None) -> str | None:
    """The LocalQueue a stored job names: its queue-name label, else the queue
    its spec asks for (``asked``)."""
    labels = job["metadata"].get("labels") or {}
    return labels.get(kueue.QUEUE_LABEL) or asked


def _true(conditions: list[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    """The condition ``type_`` when it is True."""
    found = (c for c in conditions if c.get("type") == type_ and c.get("status") == "True")
    return next(found, None)


def admission_state(name: str, queue: str, workload: Mapping[str, Any] | None) -> AdmissionState:
    """A Workload (or its absence) as the engine reads it."""
    status = (workload or {}).get("status") or {}
    conditions = list(status.get("conditions") or [])
    evicted = _true(conditions, "Evicted")
    admitted = _true(conditions, "Admitted") is not None and evicted is None
    pending = next((c for c in conditions if c.get("type") == "QuotaReserved"), None)
    if evicted is not None:
        message = str(evicted.get("message") or "")
    elif pending is not None and pending.get("status") != "True":
        message = str(pending.get("message") or pending.get("reason") or "")
    else:
        message = ""
    return AdmissionState(
        workload=name,
        queue=queue,
        admitted=admitted,
        evicted=str(evicted.get("reason") or "Evicted") if evicted is not None else "",
        message=message,
        cluster_queue=str((status.get("admission") or {}).get("clusterQueue") or ""),
    )


def priority(client: KubeClient, name: str) -> kueue.WorkloadPriority:
    """The WorkloadPriorityClass ``name``, else the PriorityClass ``name`` (Kueue's
    order), with its value. NotFound when there is neither."""
    try:
        found = client.get(WORKLOAD_PRIORITY_CLASSES, name)
        return kueue.WorkloadPriority(name, int(found.get("value") or 0))
    except NotFound:
        found = client.get(POD_PRIORITY_CLASSES, name)
        return kueue.WorkloadPriority(name, int(found.get("value") or 0), kueue.POD_PRIORITY_SOURCE)


def holds_quota(workload: Mapping[str, Any]) -> bool:
    """Whether a Workload still holds a quota reservation."""
    status = workload.get("status") or {}
    return bool(status.get("admission")) or (
        _true(list(status.get("conditions") or []), "QuotaReserved") is not None
    )
