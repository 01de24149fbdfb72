"""The bench's tables of figures, one row a run (markdown, as
docs/benchmarks.md quotes them)."""

from __future__ import annotations

import os

from ..common.figures import fmt, ratio
from .run import Run


def table(runs: list[Run]) -> str:
    rows = [
        "| scenario | all pods exist (s) | all jobs Running (s) | operator GET/LIST, "
        "reconciles / informers | "
        "operator CPU (s) | CPU per job (ms) | RSS at ready / peak (MiB) | writes on the "
        "reconcile budget (per job) | Events | API writes by verb and resource |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        per_job = r.budget_writes / r.jobs if r.jobs else 0
        cpu_job = None if r.cpu_s is None else 1000 * r.cpu_s / r.jobs
        rss = "-" if r.rss_peak_mib is None else f"{fmt(r.rss_ready_mib)} / {fmt(r.rss_peak_mib)}"
        writes = ", ".join(f"{k} {v}" for k, v in r.writes.items())
        reads = "-" if r.operator_reads is None else f"{r.operator_reads} / {r.informer_reads}"
        rows.append(
            f"| {r.label}{' (' + r.note + ')' if r.note else ''} | {fmt(r.pods_s)} | "
            f"{fmt(r.running_s)} | {reads} | {fmt(r.cpu_s, '.2f')} | {fmt(cpu_job, '.1f')} | "
            f"{rss} | {r.budget_writes} ({per_job:.2f}) | {r.events} | {writes} |"
        )
    return "\n".join(rows)


def where(runs: list[Run]) -> str:
    rows = [
        "| size | scenario | server time per pod create (ms) | reconciles (per job) | "
        "reconcile time, worker-s | mean queue wait (ms) | client limiter wait, request-s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        o = r.operator
        per = o.get("reconciles", 0) / r.jobs if o else None
        wait = 1000 * o["queue_wait_s"] / o["queue_gets"] if o.get("queue_gets") else None
        rows.append(
            f"| {r.size} | {r.label} | {fmt(r.pod_create_ms)} | "
            f"{fmt(o.get('reconciles'), '.0f') if o else '-'} ({fmt(per, '.1f')}) | "
            f"{fmt(o.get('reconcile_s'), '.2f') if o else '-'} | {fmt(wait)} | "
            f"{fmt(o.get('limiter_wait_s'), '.2f')} |"
        )
    return "\n".join(rows)


def server(runs: list[Run]) -> str:
    """The API server's time on the writes of each run: what each kind of write
    cost it in all (request seconds, summed over requests in flight)."""
    rows = [
        "| size | scenario | server request-seconds on writes | the largest shares |",
        "| --- | --- | --- | --- |",
    ]
    for r in runs:
        total = sum(r.server_s.values())
        top = sorted(r.server_s.items(), key=lambda kv: -kv[1])[:6]
        shares = ", ".join(
            f"{k} {v:.1f} s ({1000 * v / max(1, r.writes.get(k, 1)):.0f} ms each)" for k, v in top
        )
        rows.append(f"| {r.size} | {r.label} | {total:.1f} | {shares} |")
    return "\n".join(rows)


CPU_COLUMNS = (
    "kube-apiserver",
    "etcd",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "operator",  # or, in the writes scenario, its stand-in controller
    "bench",
)


def cpu(runs: list[Run]) -> str:
    """Who spends the machine's cores: CPU seconds by process from the first
    submission until every pod exists, and until the end (every job Running,
    or every pod marked Running in the ceiling)."""
    cores = os.cpu_count() or 1
    # The add-ons' processes (gang schedulers, Kueue) when a run had them.
    addons = sorted(
        {k for r in runs for k in r.cpu_to_end} - {*CPU_COLUMNS, "machine", "machine_all", "wall"}
    )
    columns = (*CPU_COLUMNS, *addons)
    rows = [
        "| size | scenario | until | wall (s) | machine busy, core-s (share of "
        f"{cores} cores) | " + " | ".join(columns) + " | the rest |",
        "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in columns) + " | --- |",
    ]
    for r in runs:
        for until, spent in (("pods exist", r.cpu_to_pods), ("end", r.cpu_to_end)):
            if not spent:
                continue
            busy, wall = spent["machine"], spent["wall"]
            share = busy / (wall * cores) if wall > 0 else 0.0
            named = [spent.get(c) for c in columns]
            rest = busy - sum(v for v in named if v is not None)
            rows.append(
                f"| {r.size} | {r.label} | {until} | {wall:.1f} | {busy:.1f} ({share:.0%}) | "
                + " | ".join(fmt(v, ".2f") for v in named)
                + f" | {rest:.2f} |"
            )
    return "\n".join(rows)


def memory(runs: list[Run]) -> str:
    rows = [
        "| size | scenario | RSS at ready / peak / end (MiB) | peak growth (MiB) | "
        "informer stores at the end: traced / resident (MiB) | peak growth / stores "
        "(traced / resident) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        if r.rss_peak_mib is None or r.rss_ready_mib is None:
            continue
        growth = r.rss_peak_mib - r.rss_ready_mib
        rows.append(
            f"| {r.size} | {r.label} | {fmt(r.rss_ready_mib)} / {fmt(r.rss_peak_mib)} / "
            f"{fmt(r.rss_end_mib)} | {fmt(growth)} | {fmt(r.cache_mib)} / "
            f"{fmt(r.cache_rss_mib)} | {ratio(growth, r.cache_mib)} / "
            f"{ratio(growth, r.cache_rss_mib)} |"
        )
    return "\n".join(rows)


def profiles(runs: list[Run]) -> str:
    """``--py-spy``: each operator run's functions with the largest shares of
    its samples, by self and by cumulative share."""
    out = []
    for r in runs:
        if not r.profile:
            continue
        out.append(f"\n#### {r.size} {r.label}: {r.profile_samples} samples\n")
        for order in ("self", "cumulative"):
            out.append(f"| by {order} | self | cumulative |")
            out.append("| --- | ---: | ---: |")
            out.extend(f"| `{f}` | {a:.1%} | {c:.1%} |" for f, a, c in r.profile[order])
            out.append("")
    return "\n".join(out)
