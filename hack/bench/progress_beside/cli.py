"""The command line of the bench: its runs, interleaved, and their table."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import hack.bench.progress_beside as package
from t9k_operator.reconcilers.pipeline.children import CREATE_PARALLEL

from ..common.figures import fmt
from .ranks import RANKS
from .run import Run, log, run_one

SCENARIOS = ("quiet", "reporting")


COLUMNS = (
    ("reconcile p50 / p99 (s)", "reconcile_p50", "reconcile_p99"),
    ("create to Running p50 / p99 (s)", "start_p50", "start_p99"),
)


def table(runs: list[Run]) -> str:
    head = [
        "scenario",
        *(c[0] for c in COLUMNS),
        "queue wait, mean (s)",
        "all Running (s)",
        "reconciles",
        "operator CPU, settled / starting (cores)",
        "reporters' CPU, settled (cores)",
        "operator RSS, settled: process + front (MiB)",
        "reports taken a second (settled)",
        "refused",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in runs:
        cells = [f"{r.scenario}" + (f" #{r.rep}" if r.rep else "")]
        cells += [
            f"{fmt(getattr(r, a), '.3f')} / {fmt(getattr(r, b), '.3f')}" for _, a, b in COLUMNS
        ]
        cells += [
            fmt(r.queue_mean, ".3f"),
            fmt(r.running_s, ".1f"),
            f"{r.reconciles:.0f}",
            f"{fmt(r.cores_settled, '.2f')} / {fmt(r.cores_start, '.2f')}",
            fmt(r.reporters_cores, ".2f"),
            f"{r.rss_mib[0]:.0f} + {r.rss_mib[1]:.0f}" if r.rss_mib else "-",
            f"{r.reports_s:.0f}",
            ", ".join(f"{k} {v:.0f}" for k, v in r.refused.items()) or "0",
        ]
        lines.append("| " + " | ".join(cells) + " |" + (f" {r.note}" if r.note else ""))
    return "\n".join(lines)


def ratios(runs: list[Run]) -> list[str]:
    def median(scenario: str, attr: str) -> float | None:
        xs = [getattr(r, attr) for r in runs if r.scenario == scenario]
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    out = []
    for attr in ("reconcile_p99", "queue_mean", "start_p99", "running_s", "cores_start"):
        q, rep = median("quiet", attr), median("reporting", attr)
        if q and rep is not None:
            out.append(f"{attr}: reporting {rep:.3f} / quiet {q:.3f} = {rep / q:.2f}x")
    return out


def main() -> int:
    p = argparse.ArgumentParser(
        prog="python -m hack.bench.progress_beside",
        description=(package.__doc__ or "").split("\n\n")[0],
    )
    p.add_argument("--cluster", default="t9k-beside")
    p.add_argument("--big", type=int, default=10, help="jobs whose ranks report")
    p.add_argument("--big-replicas", type=int, default=125, help="replicas of each (8 ranks a pod)")
    p.add_argument("--start", default="200x4", help="the job-start run, JOBSxREPLICAS")
    p.add_argument("--ramp", type=float, default=120.0, help="seconds the ranks connect over")
    p.add_argument("--settle", type=float, default=60.0, help="seconds of steady state measured")
    p.add_argument("--repeat", type=int, default=1, help="runs of each scenario, interleaved")
    p.add_argument("--scenarios", default=",".join(SCENARIOS))
    p.add_argument("--concurrency", type=int, default=CREATE_PARALLEL)
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="t9k-beside-"))
    log(f"logs in {logs}; cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    runs = []
    for rep in range(1, args.repeat + 1):
        for scenario in args.scenarios.split(","):
            started, label = time.monotonic(), rep if args.repeat > 1 else 0
            runs.append(run_one(args, scenario, label, logs))
            log(f"{scenario} #{label}: done in {time.monotonic() - started:.0f} s")
    print(
        f"{args.big} jobs x {args.big_replicas} pods x {RANKS} ranks = "
        f"{args.big * args.big_replicas * RANKS:,} ranks reporting (in 'reporting'); "
        f"job-start run {args.start}; load average at the end {os.getloadavg()[0]:.1f}\n"
    )
    print(table(runs))
    print("\nCores spent over the job-start run, by process (the machine: busy of all):\n")
    for r in runs:
        by = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r.start_cores.items()))
        print(f"- {r.scenario}" + (f" #{r.rep}" if r.rep else "") + f": {by}")
    print()
    for line in ratios(runs):
        print(f"- {line}")
    return 0
