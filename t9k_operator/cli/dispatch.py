"""Where MultiKueue runs a job handed over to it, as ``t9k`` says it on the
manager cluster: ``t9k list``'s CLUSTER, ``t9k describe``'s ``Cluster:`` line
and why ``t9k logs`` reads nothing there.

A job with ``spec.managedBy: kueue.x-k8s.io/multikueue`` has no pod on the
manager: its Workload there names the worker cluster that runs it
(:func:`~t9k_operator.sdk.views.worker_cluster`). Pure: the job and the
Workloads listed with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from t9k_operator.sdk import views
from t9k_operator.sdk.errors import Forbidden

Obj = Mapping[str, Any]

DISPATCHING = "dispatching"
"""CLUSTER of a handed-over job no worker cluster holds yet."""
UNKNOWN = "unknown"
"""CLUSTER of a handed-over job whose Workload the person may not read."""
NOT_READABLE = "your rights here do not let you read its Kueue Workload, which names it"

Workloads = Sequence[Obj] | None
"""The Workloads listed; None when the API server refused the person the list."""


def readable(read: Callable[[], Sequence[Obj]]) -> Workloads:
    """``read()``'s Workloads, or None when the API server refuses them (403):
    a person may read their jobs on MultiKueue's manager without the right to
    read Kueue's Workloads, and is then told the worker is unknown."""
    try:
        return read()
    except Forbidden:
        return None


def shows_cluster(jobs: Sequence[Obj], wide: bool) -> bool:
    """Whether ``t9k list`` has a CLUSTER column: with ``-o wide``, or when a
    listed job is handed over to MultiKueue."""
    return wide or any(views.handed_over(j) for j in jobs)


def _paused(job: Obj) -> bool:
    run_mode = (job.get("spec") or {}).get("runMode") or {}
    return bool((run_mode.get("pause") or {}).get("enabled"))


def _gone(job: Obj) -> bool:
    """A handed-over job no worker runs any more, nor will until resumed: its
    Workload is deleted once it has ended or is paused."""
    return _paused(job) or views.phase(job) in views.FINISHED


def cluster_cell(job: Obj, workloads: Workloads) -> str:
    """CLUSTER: the worker cluster that holds the job; ``dispatching`` while
    MultiKueue has not placed it; ``-`` for a job not handed over, or one that
    ended or is paused with no worker named; ``unknown`` when the Workloads
    could not be read."""
    if not views.handed_over(job):
        return "-"
    if workloads is None:
        return UNKNOWN
    cluster = views.worker_cluster(job, workloads)
    if cluster:
        return cluster
    return "-" if _gone(job) else DISPATCHING


def cluster_field(job: Obj, workloads: Workloads) -> str | None:
    """``t9k describe``'s ``Cluster:`` line; None for a job not handed over."""
    if not views.handed_over(job):
        return None
    if workloads is None:
        return f"{UNKNOWN} (handed over to MultiKueue; {NOT_READABLE})"
    cluster = views.worker_cluster(job, workloads)
    if cluster:
        return f"{cluster} (MultiKueue worker)"
    if _gone(job):
        return "- (handed over to MultiKueue; no worker cluster holds it now)"
    nominated = views.nominated_clusters(job, workloads)
    if nominated:
        return f"{DISPATCHING} (MultiKueue; nominated: {', '.join(nominated)})"
    return f"{DISPATCHING} (MultiKueue has not placed it on a worker cluster yet)"


def with_cluster_field(
    fields: Mapping[str, Sequence[tuple[str, str]]],
    job: Obj,
    workloads: Workloads,
    after: str,
) -> dict[str, list[tuple[str, str]]]:
    """The describe head's added lines (label to lines, as ``t9k describe``
    gathers them), with the ``Cluster:`` line of a handed-over job first after
    the line ``after`` (Queue)."""
    out = {label: list(lines) for label, lines in fields.items()}
    where = cluster_field(job, workloads)
    if where is not None:
        out[after] = [("Cluster", where), *out.get(after, ())]
    return out


def logs_elsewhere(job: Obj, workloads: Workloads, again: str) -> str:
    """Why ``t9k logs`` reads nothing of a handed-over job on the manager, and
    where to read them: ``again`` is the same command, to run against the
    worker cluster."""
    name = str(job["metadata"]["name"])
    if workloads is None:
        return (
            f"job {name} is handed over to MultiKueue and runs in a worker cluster; this "
            f"cluster has none of its pods, and {NOT_READABLE}: ask who runs the cluster "
            f"which worker runs it, then run {again} against that cluster"
        )
    cluster = views.worker_cluster(job, workloads)
    if cluster:
        return (
            f"job {name} runs in worker cluster {cluster} (handed over to MultiKueue); "
            f"this cluster has none of its pods: read its logs there, with "
            f"{again} --kubeconfig <{cluster}'s kubeconfig> (or --context <{cluster}'s context>)"
        )
    if _gone(job):
        return (
            f"job {name} is handed over to MultiKueue and no worker cluster holds it now "
            f"(it has ended or is paused); this cluster has none of its pods"
        )
    nominated = views.nominated_clusters(job, workloads)
    among = f" (nominated: {', '.join(nominated)})" if nominated else ""
    return (
        f"job {name} is handed over to MultiKueue and not dispatched to a worker cluster "
        f"yet{among}; this cluster has none of its pods: t9k describe {name} names the "
        "worker once one holds it"
    )
