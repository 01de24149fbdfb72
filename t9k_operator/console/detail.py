"""A job's page: what ``t9k describe`` shows of it, as JSON data for the Job page.

Pure, from the job and its pods (the informers' copies), its Events and now:
the same readers ``t9k describe`` uses (:mod:`t9k_operator.sdk.views`, the
rows of :mod:`t9k_operator.cli.describe_rows`, the CLI's ``t9k list`` cells
of the integrations, their describe lines and the status parts), laid out as
fields, lists and tables rather than text. Every value is a string or a
number: the page writes each with ``textContent``.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from t9k_operator.builders.common import REPLICA_INDEX, REPLICA_TYPE
from t9k_operator.cli import render
from t9k_operator.cli.describe_rows import age, restart_rows
from t9k_operator.objects import parse_time
from t9k_operator.registry import PARTS
from t9k_operator.registry import views as views_of_integrations
from t9k_operator.sdk import views
from t9k_operator.sdk.logs import training_container

Obj = Mapping[str, Any]

LEFT_OUT = frozenset({"GPU usage"})
"""Head lines of ``t9k describe`` the page leaves out: the GPU usage asks a
Prometheus on each call, which the console does not."""


@functools.cache
def _describe_args() -> argparse.Namespace:
    """``t9k describe``'s flags of the integrations, at their defaults, with no
    Prometheus (the console asks none)."""
    parser = argparse.ArgumentParser(add_help=False)
    for view in views_of_integrations():
        view.add_arguments("describe", parser)
    args = parser.parse_args([])
    args.prometheus_url = None
    return args


def head(job: Obj, pods: Sequence[Obj], now: datetime) -> list[list[str]]:
    """The head of ``t9k describe`` as (label, value) pairs: phase and reason,
    times, GPUs, nodes, queue, restarts; the integrations' columns of ``t9k
    list`` (PROGRESS, ETA, START) and their lines of the describe head."""
    s = views.summarize(job, pods, now)
    status = job.get("status") or {}
    created = (job.get("metadata") or {}).get("creationTimestamp")
    out: list[list[str]] = [["Phase", s.phase or "<unknown>"], ["Reason", s.reason or "-"]]
    if views.message(job):
        out.append(["Message", views.message(job)])
    out.append(["Created", f"{created or ''} ({age(created, now)} ago)"])
    for label, key in (("Started", "startTime"), ("Completed", "completionTime")):
        if status.get(key):
            out.append([label, str(status[key])])
    out.append(["Duration", s.duration or "-"])
    out.append(["GPUs", f"{s.gpus_requested} requested, {s.gpus_allocated} allocated"])
    out.append(["Nodes", ", ".join(s.nodes) or "<none>"])
    out.append(["Queue", s.queue or "-"])
    restarts = status.get("restartCount", 0)
    out.append(["Restarts", f"{restarts} (disruptions: {status.get('disruptionCount', 0)})"])
    fields: list[list[str]] = []
    label = ""
    for view in views_of_integrations():
        for added, text in view.fields(_describe_args(), job, pods):
            label = added or label
            if label not in LEFT_OUT:
                fields.append([added, text])
    described = {label for label, _ in fields}
    for column, cell in zip(render.list_columns(), render.list_cells(job, pods, now), strict=True):
        name = column.header if len(column.header) <= 3 else column.header.capitalize()
        if name not in described:
            out.append([name, cell])
    return out + fields


def conditions(job: Obj, now: datetime) -> list[dict[str, str]]:
    """The job's conditions, oldest transition first (a timeline)."""
    rows = [
        {
            "type": str(c.get("type", "")),
            "status": str(c.get("status", "")),
            "reason": str(c.get("reason", "")),
            "message": str(c.get("message", "")),
            "lastTransitionTime": str(c.get("lastTransitionTime", "")),
            "age": age(c.get("lastTransitionTime"), now),
        }
        for c in views.conditions(job)
    ]
    untimed = [c for c in rows if parse_time(c["lastTransitionTime"]) is None]
    timed = [c for c in rows if c not in untimed]
    return sorted(timed, key=lambda c: c["lastTransitionTime"]) + untimed


def _containers(pod: Obj) -> list[dict[str, Any]]:
    """The pod's containers, init containers first, each with its restarts and
    whether it has a log of a run before its last restart."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    seen = {
        str(c.get("name")): c
        for key in ("initContainerStatuses", "containerStatuses")
        for c in status.get(key) or []
    }
    out = []
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            name = str(c.get("name", ""))
            restarts = int((seen.get(name) or {}).get("restartCount") or 0)
            out.append({"name": name, "init": key == "initContainers", "restarts": restarts})
    return out


def replicas(job: Obj, pods: Sequence[Obj]) -> list[dict[str, Any]]:
    """``t9k describe``'s replicas (replica, phase, exit code, restarts, node),
    each with its pod's replica type and index and its containers (the
    training container first), for the log's choice."""
    by_name = {str((p.get("metadata") or {}).get("name")): p for p in views.job_pods(job, pods)}
    out = []
    for r in views.replica_rows(job, pods):
        pod = by_name.get(r.pod)
        labels = ((pod or {}).get("metadata") or {}).get("labels") or {}
        containers = _containers(pod) if pod else []
        first = training_container(pod) if pod else None
        containers.sort(key=lambda c: c["name"] != first)
        out.append(
            {
                "replica": r.replica,
                "pod": r.pod,
                "type": str(labels.get(REPLICA_TYPE, "")),
                "index": str(labels.get(REPLICA_INDEX, "")),
                "phase": r.phase or "-",
                "exitCode": r.exit_code or "-",
                "restarts": r.restarts,
                "node": r.node or "<none>",
                "uid": str(((pod or {}).get("metadata") or {}).get("uid") or ""),
                "exists": pod is not None,
                "containers": containers,
            }
        )
    return out


def restarts(job: Obj, now: datetime) -> list[list[str]]:
    """The restart record of the status (when, replica, exit code, reason, node,
    counted), as ``t9k describe``'s table has it; empty for a kind without one."""
    name = str((job.get("metadata") or {}).get("name") or "")
    return restart_rows(job.get("status") or {}, name, now)


def scheduling(job: Obj) -> list[dict[str, Any]]:
    """The integrations' parts of the status by section (the PodGroup's and the
    Kueue Workload's under Scheduling, the start estimate and its reason under
    Start), each with its parts' lines or what the section says without any."""
    status = job.get("status") or {}
    out = []
    for section in dict.fromkeys(p.section for p in PARTS if p.section):
        parts = [p for p in PARTS if p.section == section]
        lines = [line for p in parts if status.get(p.key) for line in p.lines(status[p.key])]
        absent = next((p.absent for p in parts if p.absent), "")
        if lines or absent:
            out.append({"section": section, "lines": lines or [absent]})
    return out


def _event_time(event: Obj) -> str:
    meta = event.get("metadata") or {}
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or meta.get("creationTimestamp")
        or ""
    )


def events(found: Sequence[Obj], now: datetime) -> list[dict[str, str]]:
    """The job's and its pods' Events, newest first."""
    rows = []
    for e in found:
        involved = e.get("involvedObject") or {}
        at = _event_time(e)
        rows.append(
            {
                "time": at,
                "age": age(at, now),
                "type": str(e.get("type", "")),
                "reason": str(e.get("reason", "")),
                "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
                "message": str(e.get("message", "")),
                "count": str(e.get("count") or 1),
            }
        )
    stamped = [(parse_time(r["time"]), n, r) for n, r in enumerate(rows)]
    stamped.sort(key=lambda t: (t[0] is not None, t[0] or now, t[1]), reverse=True)
    return [r for _, _, r in stamped]


def job_detail(
    job: Obj,
    pods: Sequence[Obj],
    found_events: Sequence[Obj] | None,
    now: datetime,
    *,
    events_error: str = "",
) -> dict[str, Any]:
    """Everything the Job page shows of a job (``found_events`` None: not read,
    ``events_error`` says why)."""
    meta = job.get("metadata") or {}
    return {
        "namespace": str(meta.get("namespace") or ""),
        "kind": str(job.get("kind") or ""),
        "name": str(meta.get("name") or ""),
        "phase": views.phase(job),
        "head": head(job, pods, now),
        "conditions": conditions(job, now),
        "replicas": replicas(job, pods),
        "restarts": restarts(job, now),
        "scheduling": scheduling(job),
        "events": events(found_events or [], now),
        "eventsError": events_error,
        "yaml": render.dump([job], "yaml"),
    }
