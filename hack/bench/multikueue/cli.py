"""The bench's command line: the trio started, one run, its report, and
every cluster down after (also when the run fails)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, fields
from pathlib import Path

import hack.bench.multikueue as package
from hack.cluster import KUEUE, state_dir

from ..common.figures import fmt
from ..common.log import log
from .figures import busy_rate, latencies, peak_rate, spread, stages, throughput
from .run import SAMPLE_S, Result, Run
from .trio import Trio, server_hosts

WINDOW_S = 30.0  # the span of the highest request rate reported


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m hack.bench.multikueue",
        description=(package.__doc__ or "").split("\n\n")[0],
    )
    p.add_argument("--jobs", type=int, default=1000, help="jobs created on the manager (1000)")
    p.add_argument(
        "--name", default="bmk", help="the manager cluster (bmk; its workers NAME-worker-1, -2)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for every job Running (default 300 + 1.5 s a job)",
    )
    p.add_argument(
        "--operator-flags",
        default="",
        help='flags added to the three operators\', e.g. "--kube-api-qps 5 --kube-api-burst 10"',
    )
    p.add_argument("--concurrency", type=int, default=8, help="creates in flight (8)")
    p.add_argument("--json", type=Path, help="write the run's figures there too")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.name.startswith("bmk"):
        _parser().error("--name must start with bmk (the bench's clusters)")
    logs = Path(tempfile.mkdtemp(prefix="t9k-multikueue-"))
    timeout = args.timeout if args.timeout is not None else 300 + 1.5 * args.jobs
    load = os.getloadavg()[0]
    log(f"logs in {logs}; cores {os.cpu_count()}, load average {load:.1f}")
    trio = Trio(args.name, logs)
    result: Result | None = None
    run: Run | None = None
    hosts: dict[str, str] = {}
    started = time.monotonic()
    try:
        trio.start(args.jobs)
        hosts = server_hosts(trio)
        trio.start_operators(*shlex.split(args.operator_flags))
        run = Run(trio, args.jobs, timeout, args.concurrency)
        run.watch()
        result = run.execute()
        result.kueue_config = trio.kueue_config()
        result.load = (load, os.getloadavg()[0])
    finally:
        if run is not None:
            run.stop()
        left = trio.stop()
        log(f"clusters down ({time.monotonic() - started:.0f} s in all)")
        if left:
            log(f"still in the state folder: {', '.join(left)}")
        names = [m.cluster.name for m in trio.members.values()]
        present = [n for n in names if state_dir(n).exists()]
        log(f"{state_dir(args.name).parent}: {present or 'none of ' + ', '.join(names)}")
    print(report(result, args, hosts, logs))
    if args.json:
        doc = {f.name: getattr(result, f.name) for f in fields(result)}
        doc["requests"] = {
            role: {" ".join(k): n for k, n in c.items()} for role, c in result.requests.items()
        }
        doc["throttled"] = {role: [asdict(t) for t in ts] for role, ts in result.throttled.items()}
        args.json.write_text(json.dumps(doc, indent=1, default=str))
    return 1 if result.note.startswith("timed out") else 0


def report(r: Result, args: argparse.Namespace, hosts: dict[str, str], logs: Path) -> str:
    """The run's figures, as Markdown."""
    created = r.times["created"]
    t0 = min(created.values())
    running, mirrored = r.times.get("running", {}), r.times.get("mirrored", {})
    rate = throughput(t0, running.values())
    last = max(running.values()) - t0 if running else None
    placed = ", ".join(f"{w} {n}" for w, n in sorted(r.placed.items()))
    flags = f", operators' flags `{args.operator_flags}`" if args.operator_flags else ""
    shown = ("externalFrameworks", "clientConnection")
    mk = {k: v for k, v in r.kueue_config.items() if k not in shown}
    flags += f"; the manager's Kueue: multiKueue {json.dumps(mk)}"
    flags += f", clientConnection {json.dumps(r.kueue_config.get('clientConnection'))}"
    out = [
        f"MultiKueue dispatch: {r.jobs} PyTorchTrainingJobs (1 replica, 100m CPU, "
        f"`spec.managedBy: kueue.x-k8s.io/multikueue`) created on `{args.name}`, "
        f"run on its two workers; Kueue {KUEUE.version}{flags}; {os.cpu_count()} cores, "
        f"load average {r.load[0]:.1f} at the start, {r.load[1]:.1f} at the end; logs in {logs}",
        "",
        f"- **throughput**: {fmt(rate, '.2f')} jobs/s, {len(running)} jobs from the first create "
        f"on the manager to the last Running on a worker in {fmt(last)} s (placed: {placed})",
        f"- **create -> Running on its worker** (the worker's job, its `status.phase`), "
        f"p50 / p95 / max: {spread(latencies(created, running).values())} s",
        f"- create -> Running on the manager (MultiKueue's copy of the worker's status), "
        f"p50 / p95 / max: {spread(latencies(created, mirrored).values())} s "
        f"({len(mirrored)} jobs)",
    ]
    if r.note:
        out.append(f"- note: {r.note}")
    out += ["", "| stage | reached | last (s) | step from the one before, p50 / p95 / max (s) |"]
    out.append("| --- | --- | --- | --- |")
    for s in stages(r.times):
        out.append(f"| {s.name}: {s.what} | {s.reached} | {fmt(s.last_s)} | {s.step} |")
    out += _operators(r) + _processes(r) + _requests(r) + _throttling(r, hosts)
    return "\n".join(out)


def _operators(r: Result) -> list[str]:
    out = [
        "",
        "| operator | CPU (s) | peak RSS (MiB) | its limiter's wait (s) | 429s sent again |",
        "| --- | --- | --- | --- | --- |",
    ]
    for role, cpu in r.cpu_s.items():
        sums = r.limiter.get(role, {})
        out.append(
            f"| {role} | {cpu:.1f} | {r.rss_peak_mib[role]:.0f} | "
            f"{fmt(sums.get('limiter_wait_s'), '.1f')} | {sums.get('retries_429', 0):.0f} |"
        )
    return out


def _processes(r: Result) -> list[str]:
    spent = dict(r.spent)
    wall, busy = spent.pop("wall", 0.0), spent.pop("machine", 0.0)
    all_ = spent.pop("machine_all", 0.0)
    top = sorted(spent.items(), key=lambda kv: -kv[1])[:10]
    share = busy / all_ if all_ else 0.0
    return [
        "",
        f"CPU seconds from the first create to the last Running ({wall:.0f} s; the machine "
        f"{share:.0%} busy): " + ", ".join(f"{k} {v:.0f}" for k, v in top),
    ]


def _requests(r: Result) -> list[str]:
    out = [
        "",
        "MultiKueue's requests to each worker (GET, POST, PATCH, DELETE without a subresource, "
        f"the worker API server's count, every {SAMPLE_S:.0f} s): by resource, the mean and "
        f"the highest rate over {WINDOW_S:.0f} s, per second",
    ]
    for role, counts in r.requests.items():
        total = sum(counts.values())
        detail = ", ".join(f"{v} {res} {n}" for (v, res), n in sorted(counts.items()))
        rates = []
        for resource, series in r.series.get(role, {}).items():
            mean = busy_rate(series)
            peak = peak_rate(series, WINDOW_S)
            rates.append(f"{resource} {fmt(mean)} / {fmt(peak)}")
        out.append(f"- {role}: {total}, {total / r.jobs:.1f} a job ({detail}); " + "; ".join(rates))
    return out


def _throttling(r: Result, hosts: dict[str, str]) -> list[str]:
    out = ["", "Client-side throttling in Kueue's logs (requests that waited over 1 s):"]
    for role, lines in r.throttled.items():
        if not lines:
            out.append(f"- {role}'s Kueue: none")
            continue
        by = Counter(f"{t.verb} {t.resource} on {hosts.get(t.host, t.host)}" for t in lines)
        longest = max(t.waited_s for t in lines)
        where = ", ".join(f"{k} {n}" for k, n in by.most_common(6))
        out.append(f"- {role}'s Kueue: {len(lines)} lines, longest wait {longest:.1f} s ({where})")
    return out


if __name__ == "__main__":
    sys.exit(main())
