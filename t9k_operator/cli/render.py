"""The CLI's output: tables and the describe screen, from objects and ``now``.

Pure functions returning text, so the same objects always give the same
screen (tests/unit/cli/golden/). Colour is an argument: the CLI turns it on
only when stdout is a terminal and ``NO_COLOR`` is unset.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import yaml

from t9k_operator.api.parts import ListColumn
from t9k_operator.cli import dispatch
from t9k_operator.cli.describe_rows import (
    age,
    condition_rows,
    event_rows,
    replica_rows,
    restart_rows,
)
from t9k_operator.kinds.registry import of_object
from t9k_operator.registry import PARTS
from t9k_operator.registry import views as views_of_integrations
from t9k_operator.sdk import views

Obj = Mapping[str, Any]

_COLOURS = {
    "Succeeded": "32",
    "Running": "32",
    "True": "32",
    "Failed": "31",
    "Warning": "31",
    "Pending": "33",
    "Paused": "33",
    "Resuming": "33",
    "Unknown": "33",
}


def paint(text: str, colour: bool) -> str:
    code = _COLOURS.get(text)
    if not colour or not code or not text:
        return text
    return f"\x1b[{code}m{text}\x1b[0m"


def widths(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width: its widest cell, header included."""
    return [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    colour: bool = False,
    indent: str = "",
    *,
    widths: Sequence[int] | None = None,
    header: bool = True,
) -> str:
    """kubectl's plain table: upper-case headers, columns three spaces apart
    (at least ``widths``, e.g. the first table's when ``--watch`` adds rows);
    a phase-like cell is coloured after it is padded, so columns stay aligned."""
    cells = [[str(c) for c in row] for row in rows]
    sizes = [
        max(w, n)
        for w, n in zip(widths or [0] * len(headers), _widths(headers, cells), strict=True)
    ]
    lines = []
    for n, row in enumerate([list(headers), *cells] if header else cells):
        parts = []
        for i, cell in enumerate(row):
            pad = "" if i == len(row) - 1 else " " * (sizes[i] - len(cell))
            parts.append((paint(cell, colour) if n or not header else cell) + pad)
        lines.append((indent + "   ".join(parts)).rstrip())
    return "\n".join(lines) + "\n"


_widths = widths


def _nodes(nodes: Sequence[str], wide: bool) -> str:
    if not nodes:
        return "<none>"
    if wide or len(nodes) <= 2:
        return ",".join(nodes)
    return f"{','.join(nodes[:2])}+{len(nodes) - 2}"


JOB_HEADERS = (
    "NAME",
    "KIND",
    "PHASE",
    "REASON",
    "GPUS",
    "ALLOCATED",
    "DURATION",
)
"""``t9k list``'s columns of the job's own figures; the integrations' columns
follow (:func:`list_columns`), then NODES and QUEUE, and CLUSTER where
:func:`~t9k_operator.cli.dispatch.shows_cluster`."""


def list_columns() -> tuple[ListColumn, ...]:
    """The integrations' columns of ``t9k list``, in registry order."""
    return tuple(c for view in views_of_integrations() for c in view.columns)


def list_cells(job: Obj, pods: Sequence[Obj], now: datetime) -> list[str]:
    """A job's cells of the integrations' columns ("-" for an empty one)."""
    return [c.cell(job, pods, now) or "-" for c in list_columns()]


def job_row(
    s: views.JobSummary, all_namespaces: bool, wide: bool, cells: Sequence[str] = ()
) -> list[str]:
    """A job's row of ``t9k list``, with ``cells`` of the integrations' columns."""
    row = [
        s.name,
        s.kind,
        s.phase or "<unknown>",
        s.reason or "-",
        str(s.gpus_requested),
        str(s.gpus_allocated),
        s.duration or "-",
        *cells,
        _nodes(s.nodes, wide),
        s.queue or "",
    ]
    if wide:
        row.append(s.age)
    return ([s.namespace] if all_namespaces else []) + row


def list_row(
    job: Obj,
    pods: Sequence[Obj],
    now: datetime,
    *,
    all_namespaces: bool,
    wide: bool,
    cluster: bool = False,
    workloads: dispatch.Workloads = (),
) -> list[str]:
    """A job's row of ``t9k list`` (and of the console's Jobs page), under
    :func:`job_headers`: its summary's cells, then the integrations'; with
    ``cluster``, its CLUSTER from ``workloads`` (the Kueue Workloads listed)."""
    cells = list_cells(job, pods, now)
    row = job_row(views.summarize(job, pods, now), all_namespaces, wide, cells)
    if cluster:  # after QUEUE, before AGE
        row.insert(len(row) - wide, dispatch.cluster_cell(job, workloads))
    return row


def job_headers(all_namespaces: bool, wide: bool, cluster: bool = False) -> list[str]:
    head = ["NAMESPACE"] * all_namespaces + list(JOB_HEADERS)
    tail = ["NODES", "QUEUE"] + ["CLUSTER"] * cluster + ["AGE"] * wide
    return head + [c.header for c in list_columns()] + tail


def jobs_table(
    jobs: Sequence[Obj],
    pods: Sequence[Obj],
    now: datetime,
    *,
    all_namespaces: bool = False,
    wide: bool = False,
    colour: bool = False,
    workloads: dispatch.Workloads = (),
) -> str:
    if not jobs:
        return ""
    cluster = dispatch.shows_cluster(jobs, wide)
    rows = [
        list_row(j, pods, now, all_namespaces=all_namespaces, wide=wide, cluster=cluster,
                 workloads=workloads)
        for j in jobs
    ]  # fmt: skip
    return table(job_headers(all_namespaces, wide, cluster), rows, colour)


def names(objs: Sequence[Obj]) -> str:
    """``-o name``: kind.group/name, as kubectl prints it."""
    out = []
    for o in objs:
        kind = of_object(o)
        out.append(f"{kind.crd.singular}.{kind.crd.group}/{o['metadata']['name']}\n")
    return "".join(out)


def dump(objs: Sequence[Obj], fmt: str) -> str:
    """``-o json`` / ``-o yaml``: one object as itself, several as a List."""
    clean = [_without_managed_fields(o) for o in objs]
    doc: Any = clean[0] if len(clean) == 1 else {"apiVersion": "v1", "kind": "List", "items": clean}
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    return str(yaml.dump(doc, Dumper=_NoAliases, sort_keys=False))


class _NoAliases(yaml.SafeDumper):
    """``yaml.safe_dump`` that writes a part held twice (the console's cached
    objects share equal parts: console/sharing.py) in full each time, never as
    an ``&id001`` anchor and its alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _without_managed_fields(obj: Obj) -> dict[str, Any]:
    out = dict(obj)
    if "metadata" in out:
        out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "managedFields"}
    return out


def part_sections(status: Obj) -> list[str]:
    """The integrations' parts of the status (:data:`t9k_operator.registry.PARTS`),
    each section with its parts' lines, or what it says without any."""
    out: list[str] = []
    sections = dict.fromkeys(part.section for part in PARTS)
    for section in sections:
        parts = [p for p in PARTS if p.section == section]
        lines = [line for p in parts if status.get(p.key) for line in p.lines(status[p.key])]
        absent = next((p.absent for p in parts if p.absent), "")
        if lines or absent:
            out += ["", f"{section}:", *(f"  {line}" for line in lines or [absent])]
    return out


def describe(
    job: Obj,
    pods: Sequence[Obj],
    events: Sequence[Obj],
    now: datetime,
    *,
    tensorboard: Obj | None = None,
    colour: bool = False,
    fields: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    workloads: dispatch.Workloads = (),
) -> str:
    """``t9k describe``: the job, its replicas, restarts, scheduling, TensorBoard
    and Events (``fields``: the integrations' lines of its head, as (label,
    value), under the label of the line they follow; ``workloads``: its Kueue
    Workloads, which name the worker cluster of a job handed over to MultiKueue)."""
    s = views.summarize(job, pods, now)
    status = job.get("status") or {}
    head = dispatch.with_cluster_field(
        fields or {}, job, workloads, "Queue" if s.queue else "Nodes"
    )
    out = _fields(job, s, now, colour, head)
    out += _section(
        "Conditions",
        ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
        condition_rows(job, now),
        colour,
    )
    out += _section(
        "Replicas",
        ["REPLICA", "PHASE", "EXIT CODE", "RESTARTS", "NODE"],
        replica_rows(job, pods),
        colour,
    )
    out += _section(
        "Restart record",
        ["WHEN", "REPLICA", "EXIT CODE", "REASON", "NODE", "COUNTED"],
        restart_rows(status, s.name, now),
        colour,
    )
    out += part_sections(status)
    out += _tensorboard_section(status, tensorboard, s)
    out += _section(
        "Events", ["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"], event_rows(events, now), colour
    )
    return "\n".join(out) + "\n"


def _fields(
    job: Obj,
    s: views.JobSummary,
    now: datetime,
    colour: bool,
    fields: Mapping[str, Sequence[tuple[str, str]]],
) -> list[str]:
    """The describe screen's head: one ``Label:`` line a field, each followed by
    the integrations' lines ``fields`` has under its label."""
    status = job.get("status") or {}
    meta = job["metadata"]
    out: list[str] = []

    def field(label: str, value: Any) -> None:
        out.append(f"{label + ':' if label else '':<13}{value}")
        for added, text in fields.get(label, ()):
            out.append(f"{added + ':' if added else '':<13}{text}")

    field("Name", s.name)
    field("Namespace", s.namespace)
    field("Kind", s.kind)
    field("Phase", paint(s.phase or "<unknown>", colour))
    if s.reason:
        field("Reason", s.reason)
    if views.message(job):
        field("Message", views.message(job))
    field(
        "Created",
        f"{meta.get('creationTimestamp', '')} ({age(meta.get('creationTimestamp'), now)} ago)",
    )
    if status.get("startTime"):
        field("Started", status["startTime"])
    if status.get("completionTime"):
        field("Completed", status["completionTime"])
    if s.duration:
        field("Duration", s.duration)
    field("GPUs", f"{s.gpus_requested} requested, {s.gpus_allocated} allocated")
    field("Nodes", ", ".join(s.nodes) or "<none>")
    if s.queue:
        field("Queue", s.queue)
    field(
        "Restarts",
        f"{status.get('restartCount', 0)} (disruptions: {status.get('disruptionCount', 0)})",
    )
    return out


def _section(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], colour: bool
) -> list[str]:
    """A describe section after a blank line: its title, then its table
    indented, or ``<none>`` without rows."""
    if not rows:
        return ["", f"{title}:", "  <none>"]
    return ["", f"{title}:", table(headers, rows, colour, "  ").rstrip("\n")]


def _tensorboard_section(status: Obj, tensorboard: Obj | None, s: views.JobSummary) -> list[str]:
    """The job's TensorBoard, if it has one: its name and state, its URL in the
    cluster, and the command that opens it from this machine."""
    dependent = status.get("tensorboard")
    if not (dependent or tensorboard):
        return []
    out = ["", "TensorBoard:"]
    tb_status = (tensorboard or {}).get("status") or {}
    ready: Obj = next(
        (c for c in tb_status.get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    name = (tensorboard or {}).get("metadata", {}).get("name") or (
        (dependent or {}).get("dependent") or {}
    ).get("name", "")
    state = (
        "ready"
        if ready.get("status") == "True"
        else (ready.get("reason") or (dependent or {}).get("reason") or "not ready")
    )
    out.append(f"  {name}: {state}")
    if tb_status.get("url"):
        out.append(f"  URL (in the cluster): {tb_status['url']}")
    out.append(f"  From your machine: t9k tensorboard {s.name} -n {s.namespace}")
    return out
