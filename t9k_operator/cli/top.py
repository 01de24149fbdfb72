"""``t9k top``'s tables: the GPUs of each node and the jobs that hold them
(the console's GPUs page shows the same cells)."""

from __future__ import annotations

from collections.abc import Sequence

from t9k_operator.api.parts import Columns
from t9k_operator.cli.render import table
from t9k_operator.sdk import views

TOP_NODES_HEADERS = ("NODE", "GPUS", "ALLOCATED", "FREE", "JOBS")


def top_node_cells(u: views.NodeUsage) -> list[str]:
    """One node's row of ``t9k top nodes`` (and the console's GPUs page)."""
    free = str(u.allocatable - u.allocated)
    return [u.node, str(u.allocatable), str(u.allocated), free, ",".join(u.jobs) or "<none>"]


def top_nodes(usage: Sequence[views.NodeUsage]) -> str:
    return table(list(TOP_NODES_HEADERS), [top_node_cells(u) for u in usage])


def top_job_headers(all_namespaces: bool) -> list[str]:
    """``t9k top jobs``' columns before the integrations' and NODES."""
    return ["NAMESPACE"] * all_namespaces + ["NAME", "KIND", "PHASE", "GPUS", "ALLOCATED"]


def top_job_cells(r: views.JobSummary, all_namespaces: bool) -> list[str]:
    """A job's cells of ``t9k top jobs`` under :func:`top_job_headers`."""
    row = [r.namespace] * all_namespaces + [r.name, r.kind, r.phase]
    return [*row, str(r.gpus_requested), str(r.gpus_allocated)]


def top_jobs(
    rows: Sequence[views.JobSummary],
    all_namespaces: bool,
    columns: Sequence[Columns] = (),
) -> str:
    """The jobs holding GPUs or pods: GPUs requested, and allocated to bound
    pods; then the integrations' ``columns`` ("-" for a job without cells)."""
    if not rows:
        return ""
    body = []
    for r in rows:
        row = top_job_cells(r, all_namespaces)
        for c in columns:
            row += c.cells.get((r.namespace, r.kind, r.name), ("-",) * len(c.headers))
        body.append([*row, ",".join(r.nodes) or "<none>"])
    headers = top_job_headers(all_namespaces) + [h for c in columns for h in c.headers]
    return table([*headers, "NODES"], body)
