"""What a start estimate reads from Kubernetes objects, as the arithmetic's
inputs (:mod:`.start_math`): a pod's requests, a job's end from its progress,
a Workload's quota, a ClusterQueue's free quota, the nodes' free room and the
holders of what a job needs.

Pure: objects in, numbers out; times are given, never read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from t9k_operator.builders.common import JOB_KIND, JOB_NAME
from t9k_operator.integrations.start_estimate.arithmetic import (
    Amounts,
    Holder,
    add,
    amounts,
    minus,
)
from t9k_operator.objects import Obj, controller_ref
from t9k_operator.reconcilers.engine import parse_time

FOREIGN_QUOTA = "workloads this operator does not run"
"""How an estimate names the quota held by others (their ends are unknown)."""


def container_requests(container: Mapping[str, Any]) -> dict[str, float]:
    """A container's requests; where it states only a limit, the limit (the API
    server defaults the request to it)."""
    resources = container.get("resources") or {}
    return amounts({**(resources.get("limits") or {}), **(resources.get("requests") or {})})


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """What a pod (or pod template) asks for, as the scheduler counts it: its
    containers' sum, or its largest init container's where that is more."""
    spec = pod.get("spec") or {}
    total = add(*(container_requests(c) for c in spec.get("containers") or []))
    for init in spec.get("initContainers") or []:
        for r, v in container_requests(init).items():
            total[r] = max(total.get(r, 0.0), v)
    return total


def job_end(job: Mapping[str, Any]) -> datetime | None:
    """When a running job ends, from its ``status.progress``: its last report's
    time plus the steps left at its throughput; None without them."""
    progress = (job.get("status") or {}).get("progress") or {}
    step, total = progress.get("step"), progress.get("totalSteps")
    rate = progress.get("stepsPerSecond")
    at = parse_time(progress.get("lastReportTime"))
    if at is None or step is None or not total or not rate or rate <= 0:
        return None
    return at + timedelta(seconds=max(0, int(total) - int(step)) / float(rate))


def job_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name) of a job."""
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind") or ""), str(meta.get("namespace") or ""), str(meta.get("name")))


def workload_needs(workload: Mapping[str, Any]) -> dict[str, float]:
    """What a Workload asks of its ClusterQueue's quota: each pod set's count
    times its pod's requests."""
    out: dict[str, float] = {}
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        count = int(pod_set.get("count") or 0)
        per_pod = pod_requests(pod_set.get("template") or {})
        out = add(out, {r: v * count for r, v in per_pod.items()})
    return out


def kueue_says(workload: Mapping[str, Any]) -> str | None:
    """Kueue's own words on why it has not admitted a Workload (the message of
    its ``QuotaReserved`` condition while False); None when it has said none."""
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c.get("type") == "QuotaReserved" and c.get("status") == "False":
            return str(c.get("message") or "") or None
    return None


def workload_usage(workload: Mapping[str, Any]) -> dict[str, float]:
    """The quota an admitted Workload holds (its admission's resource usage)."""
    admission = (workload.get("status") or {}).get("admission") or {}
    return add(
        *(amounts(a.get("resourceUsage") or {}) for a in admission.get("podSetAssignments") or [])
    )


def cluster_queue_quota(cq: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """A ClusterQueue's nominal quota and what is reserved of it, by resource
    (its flavors summed: a job that fits in none of them alone is not told apart)."""
    quota: dict[str, float] = {}
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                quota = add(quota, amounts({r["name"]: r.get("nominalQuota", 0)}))
    used: dict[str, float] = {}
    for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
        for r in flavor.get("resources") or []:
            used = add(used, amounts({r["name"]: r.get("total", 0)}))
    return quota, used


def in_cohort(cq: Mapping[str, Any]) -> bool:
    """Whether a ClusterQueue may borrow quota beyond its own: it is in a cohort
    (``spec.cohortName``, v1beta2's name for v1beta1's ``spec.cohort``)."""
    spec = cq.get("spec") or {}
    return bool(spec.get("cohortName"))


def quota_holders(
    cluster_queue: str,
    used: Amounts,
    workloads: Iterable[Obj],
    jobs: Mapping[tuple[str, str, str], Obj],
) -> list[Holder]:
    """Who holds the ClusterQueue's reserved quota ``used``: the admitted
    Workloads of this operator's jobs (ending with their jobs' ETAs), and the
    rest (others' workloads, whose ends are unknown)."""
    holders: list[Holder] = []
    ours: dict[str, float] = {}
    for w in workloads:
        admission = (w.get("status") or {}).get("admission") or {}
        if admission.get("clusterQueue") != cluster_queue:
            continue
        usage = workload_usage(w)
        ours = add(ours, usage)
        ref = controller_ref(w) or {}
        namespace = str(w["metadata"].get("namespace") or "")
        job = jobs.get((str(ref.get("kind") or ""), namespace, str(ref.get("name") or "")))
        name = f"{namespace}/{ref.get('name') or w['metadata']['name']}"
        holders.append(Holder(name, usage, job_end(job) if job is not None else None))
    rest = {r: v for r, v in minus(used, ours).items() if v > 1e-9}
    if rest:
        holders.append(Holder(FOREIGN_QUOTA, rest, None))
    return holders


def _ready(node: Mapping[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def bound(pod: Mapping[str, Any]) -> bool:
    """A pod placed on a node that still holds its resources there."""
    phase = (pod.get("status") or {}).get("phase")
    return bool((pod.get("spec") or {}).get("nodeName")) and phase not in ("Succeeded", "Failed")


def node_room(nodes: Sequence[Obj], pods: Iterable[Obj]) -> dict[str, dict[str, float]]:
    """Each schedulable, Ready node's allocatable less the requests of the pods
    bound to it."""
    room = {
        str(n["metadata"]["name"]): amounts((n.get("status") or {}).get("allocatable") or {})
        for n in nodes
        if _ready(n)
    }
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node in room and bound(pod):
            room[node] = minus(room[node], pod_requests(pod))
    return room


def pod_holders(pods: Iterable[Obj], jobs: Mapping[tuple[str, str, str], Obj]) -> list[Holder]:
    """The bound pods as holders of their nodes' resources: a job's pod ends with
    its job's ETA; a pod this operator does not run, at an unknown time."""
    out = []
    for pod in pods:
        if not bound(pod):
            continue
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        namespace = str(meta.get("namespace") or "")
        node = str(pod["spec"]["nodeName"])
        kind, name = labels.get(JOB_KIND), labels.get(JOB_NAME)
        job = jobs.get((str(kind), namespace, str(name))) if kind and name else None
        if job is not None:
            out.append(Holder(f"{namespace}/{name}", pod_requests(pod), job_end(job), node))
        else:
            out.append(Holder(f"pod {namespace}/{meta.get('name')}", pod_requests(pod), None, node))
    return out
