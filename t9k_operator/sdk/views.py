"""What the CLI shows of a job, read from raw objects: pure functions, no I/O.

A :class:`JobSummary` is one row of ``t9k list``; :func:`replica_rows` the
per-replica table of ``t9k describe``; :func:`node_usage` and :func:`job_usage`
what ``t9k top`` shows; :func:`worker_cluster` where MultiKueue runs a job
handed over to it. Each takes the objects as the API server returns them
and the time ``now``, so the tables are the same for the same objects
(tests/unit/cli's golden files).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from t9k_operator.api.managed_by import MULTIKUEUE
from t9k_operator.builders.common import JOB_KIND, JOB_NAME
from t9k_operator.builders.scheduling import group_name
from t9k_operator.kinds.gpus import GPU, pod_gpus
from t9k_operator.kinds.registry import KINDS, job_kind_of
from t9k_operator.objects import parse_time

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
FINISHED = ("Succeeded", "Failed")

Obj = Mapping[str, Any]


def human_duration(seconds: float) -> str:
    """kubectl's short form: 42s, 3m5s, 2h7m, 4d3h."""
    s = max(int(seconds), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60}m" if (s % 3600) // 60 else f"{s // 3600}h"
    return f"{s // 86400}d{(s % 86400) // 3600}h" if (s % 86400) // 3600 else f"{s // 86400}d"


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def conditions(job: Obj) -> list[Obj]:
    """The operator's conditions (an MSJob keeps them in ``t9kConditions``)."""
    status = _status(job)
    if "t9kConditions" in status:
        return list(status.get("t9kConditions") or [])
    return list(status.get("conditions") or [])


def _condition(job: Obj, type_: str) -> Obj:
    for c in conditions(job):
        if c.get("type") == type_:
            return c
    return {}


def reason(job: Obj) -> str:
    """Why the job runs or not: its true Failed condition's reason, else its
    Running condition's (kubectl's REASON column)."""
    failed = _condition(job, "Failed")
    if failed.get("status") == "True" and failed.get("reason"):
        return str(failed["reason"])
    running = str(_condition(job, "Running").get("reason") or "")
    return "" if running == "-" else running  # the operator's "nothing to say"


def message(job: Obj) -> str:
    """The message that goes with :func:`reason`."""
    failed = _condition(job, "Failed")
    if failed.get("status") == "True" and failed.get("message"):
        return str(failed["message"])
    return str(_condition(job, "Running").get("message") or "")


def reason_of_tensorboard(tb: Obj) -> str:
    """A TensorBoard's Ready condition: ``Ready``, else why not."""
    for c in _status(tb).get("conditions") or []:
        if c.get("type") == "Ready":
            return "Ready" if c.get("status") == "True" else str(c.get("reason") or "not ready")
    return "not reconciled yet"


def phase(job: Obj) -> str:
    return str(_status(job).get("phase") or "")


def queue(job: Obj) -> str:
    labels = _meta(job).get("labels") or {}
    if labels.get(QUEUE_LABEL):
        return str(labels[QUEUE_LABEL])
    spec = job.get("spec") or {}
    t9k = (spec.get("scheduler") or {}).get("t9kScheduler") or {}
    if t9k.get("queue"):
        return str(t9k["queue"])
    policy = (spec.get("runPolicy") or {}).get("schedulingPolicy") or {}
    return str(policy.get("queue") or "")


def live(pod: Obj) -> bool:
    """A pod that holds its node's resources: bound, not ended."""
    return bool((pod.get("spec") or {}).get("nodeName")) and _status(pod).get("phase") not in (
        "Succeeded",
        "Failed",
    )


def job_pods(job: Obj, pods: Iterable[Obj]) -> list[Obj]:
    meta = _meta(job)
    return [
        p
        for p in pods
        if _meta(p).get("namespace") == meta.get("namespace")
        and (_meta(p).get("labels") or {}).get(JOB_NAME) == meta.get("name")
        and (_meta(p).get("labels") or {}).get(JOB_KIND) == job.get("kind")
    ]


@dataclass(frozen=True)
class JobSummary:
    namespace: str
    name: str
    kind: str
    phase: str
    reason: str
    gpus_requested: int
    gpus_allocated: int
    duration: str
    nodes: tuple[str, ...]
    queue: str
    age: str = ""


SPEC_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError)
"""What reading a stored job raises when its spec does not fit its kind's model
(a pydantic ValidationError is a ValueError) or has a shape no pod is built from."""


_GPUS_REQUESTED: dict[bytes, int] = {}
GPUS_REQUESTED_CACHE = 50_000
"""Jobs whose GPUs :func:`gpus_requested` remembers (a console's board asks
again at each change of each job, with the same spec)."""


def gpus_requested(job: Obj) -> int:
    """GPUs the job's pods ask for, as the operator creates them (its kind's
    ``gpus``: elastic clamping included); 0 for a job no pod can be built from.
    Remembered by a digest of what they are computed from (kind, spec, labels
    and annotations): building a job's pods to count them is what costs."""
    meta = _meta(job)
    text = json.dumps(
        [job.get("kind"), job.get("spec"), meta.get("labels"), meta.get("annotations")],
        sort_keys=True,
        default=str,
    )
    key = hashlib.blake2b(text.encode(), digest_size=16).digest()
    if (known := _GPUS_REQUESTED.get(key)) is not None:
        return known
    kind = job_kind_of(job)
    try:
        gpus = kind.gpus(kind.model.from_dict(job))
    except SPEC_ERRORS:
        gpus = 0
    if len(_GPUS_REQUESTED) >= GPUS_REQUESTED_CACHE:
        _GPUS_REQUESTED.clear()
    _GPUS_REQUESTED[key] = gpus
    return gpus


def summarize(job: Obj, pods: Iterable[Obj], now: datetime) -> JobSummary:
    kind = job_kind_of(job)
    mine = job_pods(job, pods)
    status = _status(job)
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime")) or now
    created = parse_time(_meta(job).get("creationTimestamp"))
    nodes = {str(p["spec"]["nodeName"]) for p in mine if live(p)}
    if not nodes and phase(job) in FINISHED:
        # None of its pods runs any more: the nodes its replicas ran on, as
        # the operator recorded them.
        nodes = {str(n["node"]) for n in status.get("nodes") or [] if n.get("node")}
    return JobSummary(
        namespace=str(_meta(job).get("namespace") or ""),
        name=str(_meta(job).get("name") or ""),
        kind=kind.crd.kind,
        phase=phase(job),
        reason=reason(job),
        gpus_requested=gpus_requested(job),
        gpus_allocated=sum(pod_gpus(p) for p in mine if live(p)),
        duration=human_duration((end - start).total_seconds()) if start else "",
        nodes=tuple(sorted(nodes)),
        queue=queue(job),
        age=human_duration((now - created).total_seconds()) if created else "",
    )


@dataclass(frozen=True)
class ReplicaRow:
    replica: str
    pod: str
    phase: str
    exit_code: str
    restarts: int
    node: str


def replica_of(job_name: str, pod_name: str) -> str:
    """A replica's name: its pod's name without the job's (``worker-1``, ``launcher``)."""
    prefix = job_name + "-"
    return pod_name[len(prefix) :] if pod_name.startswith(prefix) else pod_name


def _exit_code(pod: Obj) -> str:
    for cs in _status(pod).get("containerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated:
            return str(terminated.get("exitCode", ""))
    return ""


def replica_rows(job: Obj, pods: Iterable[Obj]) -> list[ReplicaRow]:
    """One row per replica: the operator's status.tasks, with each pod's node
    (the node the status recorded, for a pod that is gone); replicas the status
    does not list yet come from their pods."""
    name = str(_meta(job).get("name") or "")
    by_pod = {str(_meta(p).get("name")): p for p in job_pods(job, pods)}
    records = _status(job).get("restarts") or []
    ran_on = {str(n.get("replica")): str(n.get("node")) for n in _status(job).get("nodes") or []}
    rows: dict[str, ReplicaRow] = {}
    for task in _status(job).get("tasks") or []:
        for r in task.get("replicas") or []:
            pod_name = str(r.get("name") or "")
            pod = by_pod.get(pod_name, {})
            code = ""
            for c in r.get("containers") or []:
                if c.get("exitCode") is not None:
                    code = str(c["exitCode"])
            rows[pod_name] = ReplicaRow(
                replica=replica_of(name, pod_name),
                pod=pod_name,
                phase=str(r.get("phase") or _status(pod).get("phase") or ""),
                exit_code=code or _exit_code(pod),
                restarts=sum(1 for rec in records if rec.get("replica") == pod_name),
                node=str((pod.get("spec") or {}).get("nodeName") or "")
                if pod
                else ran_on.get(pod_name, ""),
            )
    for pod_name, pod in by_pod.items():
        if pod_name not in rows:
            rows[pod_name] = ReplicaRow(
                replica=replica_of(name, pod_name),
                pod=pod_name,
                phase=str(_status(pod).get("phase") or ""),
                exit_code=_exit_code(pod),
                restarts=sum(1 for rec in records if rec.get("replica") == pod_name),
                node=str((pod.get("spec") or {}).get("nodeName") or ""),
            )
    return sorted(rows.values(), key=lambda r: _sort_key(r.replica))


def _sort_key(replica: str) -> tuple[str, int]:
    head, _, index = replica.rpartition("-")
    return (head, int(index)) if index.isdigit() else (replica, -1)


@dataclass(frozen=True)
class NodeUsage:
    node: str
    allocatable: int
    allocated: int
    jobs: tuple[str, ...]


def node_usage(nodes: Iterable[Obj], pods: Iterable[Obj]) -> list[NodeUsage]:
    """GPUs allocatable and allocated per node, and the jobs (namespace/name) holding them."""
    held: dict[str, int] = {}
    jobs: dict[str, set[str]] = {}
    for pod in pods:
        if not live(pod):
            continue
        node = str(pod["spec"]["nodeName"])
        gpus = pod_gpus(pod)
        held[node] = held.get(node, 0) + gpus
        job = (_meta(pod).get("labels") or {}).get(JOB_NAME)
        if job and gpus:
            jobs.setdefault(node, set()).add(f"{_meta(pod).get('namespace')}/{job}")
    rows = []
    for n in nodes:
        name = str(_meta(n).get("name") or "")
        allocatable = (_status(n).get("allocatable") or {}).get(GPU, 0)
        rows.append(
            NodeUsage(
                node=name,
                allocatable=int(str(allocatable)),
                allocated=held.get(name, 0),
                jobs=tuple(sorted(jobs.get(name, ()))),
            )
        )
    return sorted(rows, key=lambda r: r.node)


def job_usage(jobs: Sequence[Obj], pods: Sequence[Obj], now: datetime) -> list[JobSummary]:
    """The jobs that hold GPUs or pods, most GPUs first."""
    rows = [summarize(j, pods, now) for j in jobs if any(live(p) for p in job_pods(j, pods))]
    return sorted(rows, key=lambda r: (-r.gpus_allocated, r.namespace, r.name))


def sort_jobs(jobs: Iterable[Obj]) -> list[Obj]:
    order = {k.crd.kind: i for i, k in enumerate(KINDS)}
    return sorted(
        jobs,
        key=lambda j: (
            str(_meta(j).get("namespace") or ""),
            str(_meta(j).get("name") or ""),
            order.get(str(j.get("kind")), 99),
        ),
    )


def handed_over(job: Obj) -> bool:
    """Whether the job is handed over to Kueue's MultiKueue (``spec.managedBy``):
    on MultiKueue's manager cluster, a worker cluster runs it."""
    return (job.get("spec") or {}).get("managedBy") == MULTIKUEUE


def job_workload(job: Obj, workloads: Iterable[Obj]) -> Obj | None:
    """The job's own Kueue Workload among ``workloads``: in its namespace, of
    the name the operator gives it (its name and the start of its uid)."""
    meta = _meta(job)
    if not meta.get("uid") or not meta.get("name"):
        return None
    name = group_name(str(meta["name"]), str(meta["uid"]))
    for w in workloads:
        if _meta(w).get("name") == name and _meta(w).get("namespace") == meta.get("namespace"):
            return w
    return None


def worker_cluster(job: Obj, workloads: Iterable[Obj]) -> str | None:
    """The worker cluster that holds a job handed over to MultiKueue, as its
    Workload on the manager says (``status.clusterName``); None for a job not
    handed over, or not dispatched yet (or whose Workload is gone)."""
    if not handed_over(job):
        return None
    return str(_status(job_workload(job, workloads) or {}).get("clusterName") or "") or None


def nominated_clusters(job: Obj, workloads: Iterable[Obj]) -> tuple[str, ...]:
    """The worker clusters MultiKueue still chooses among for a handed-over job
    (its Workload's ``status.nominatedClusterNames``); none once one holds it."""
    if not handed_over(job):
        return ()
    status = _status(job_workload(job, workloads) or {})
    if status.get("clusterName"):
        return ()
    return tuple(str(n) for n in status.get("nominatedClusterNames") or [])


def now_utc() -> datetime:
    return datetime.now(UTC)
