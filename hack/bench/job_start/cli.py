"""The bench's command line: the options, the runs, and the figures printed."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import hack.bench.job_start as package
from hack.cluster.handle import ROOT
from t9k_operator.integrations.gang.build import BACKENDS
from t9k_operator.reconcilers.pipeline.children import CREATE_PARALLEL

from ..common.cluster import bench_cluster
from ..common.figures import fmt
from ..common.log import log
from .compare import comparisons, medians, targets
from .integrations import LOCAL_QUEUE, PRIORITY, Integrations
from .plan import DEFAULT_PLAN, DEFAULT_TIMEOUT, SCENARIOS, WAIT_PER_POD, scenario_plan
from .run import Options, Run
from .runner import run_one
from .tables import cpu, memory, profiles, server, table, where


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hack.bench.job_start",
        description=(package.__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument(
        "--sizes", default=",".join(DEFAULT_PLAN), help="JOBSxREPLICAS, comma-separated"
    )
    parser.add_argument(
        "--scenarios",
        default=None,
        help=f"of {', '.join(SCENARIOS)}, for every size (default: all for 200x4 and "
        "1x512, all but the baseline for 1000x4, defaults for 10000x4)",
    )
    parser.add_argument("--baseline", default="a08a3ab", help="the commit of the baseline")
    parser.add_argument("--cluster", default="t9k-bench")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=CREATE_PARALLEL,
        help=f"the bench's threads for its creates (default {CREATE_PARALLEL}: the "
        "operator's limit on pod creates in flight)",
    )
    parser.add_argument(
        "--operator-flags",
        default="",
        help="more flags for this tree's operator (defaults and tuned), for experiments",
    )
    parser.add_argument(
        "--pprof",
        type=int,
        default=0,
        metavar="SECONDS",
        help="also take the API server's CPU profile over the first SECONDS of each run "
        "(written beside the logs; read it with `go tool pprof -top`)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each size's scenarios this many times, interleaved, so the machine's "
        "drift meets every scenario alike; the targets take each scenario's median run",
    )
    _more_options(parser)
    return parser


def _more_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kueue",
        action="store_true",
        help="start Kueue in the cluster and run the operator with --kueue: every job names "
        f"the LocalQueue {LOCAL_QUEUE!r} and the priority {PRIORITY} (defaults and tuned only)",
    )
    parser.add_argument(
        "--gang",
        choices=BACKENDS,
        default=None,
        help="start this gang scheduler in the cluster and run the operator with "
        "--gang-scheduler=GANG: the gang scheduler places the pods (defaults and tuned only)",
    )
    parser.add_argument(
        "--py-spy",
        default=None,
        metavar="PROGRAM",
        help="sample the operator with this py-spy from the first submission to the end "
        "of each run (stacks written beside the logs) and print its top functions",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds per wait (default {DEFAULT_TIMEOUT:.0f}, or {WAIT_PER_POD} s per pod of "
        "the run if longer)",
    )
    parser.add_argument(
        "--apiserver-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="a kube-apiserver flag for every run's cluster (repeatable), e.g. "
        "--apiserver-flag=--max-requests-inflight=5: each run then says how many of the "
        "operator's requests were refused with 429 and sent again",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the runs here")


def main() -> int:
    p = parser()
    args = p.parse_args()
    if args.pprof:
        os.environ["T9K_APISERVER_PROFILING"] = "1"  # hack.cluster up serves /debug/pprof

    # SIGTERM unwinds like Ctrl-C: the operator, the cluster and the worktree go.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    chosen = None if args.scenarios is None else [s.strip() for s in args.scenarios.split(",")]
    using = Integrations(kueue=args.kueue, gang=args.gang)
    try:
        plan = scenario_plan(sizes, chosen, using)
    except ValueError as exc:
        p.error(str(exc))
    logs = Path(tempfile.mkdtemp(prefix="t9k-bench-"))
    needs_baseline = any("baseline" in plan[size] for size in sizes)
    with sources(logs, args.baseline if needs_baseline else None) as trees:
        opts = Options(
            sources=trees,
            concurrency=args.concurrency,
            timeout=args.timeout,
            logs=logs,
            operator_flags=tuple(args.operator_flags.split()),
            pprof=args.pprof,
            using=using,
            py_spy=args.py_spy,
            server_flags=tuple(args.apiserver_flag),
        )
        log(f"logs in {logs}")
        runs = run_all(args.cluster, sizes, plan, args.repeat, opts)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=2) + "\n")
    report(runs, sizes, args)
    return 0


@contextmanager
def sources(logs: Path, baseline: str | None) -> Iterator[dict[str, Path]]:
    """The source trees the operator runs from: this one, and with a
    ``baseline`` commit that commit checked out in a temporary worktree."""
    trees = {"tree": ROOT}
    worktree = logs / "baseline"
    if baseline is not None:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), baseline],
            check=True,
            capture_output=True,
        )
        trees["baseline"] = worktree
    try:
        yield trees
    finally:
        if baseline is not None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                check=False,
                capture_output=True,
            )


def run_all(
    name: str, sizes: list[str], plan: dict[str, tuple[str, ...]], repeat: int, opts: Options
) -> list[Run]:
    """Every size's scenarios, ``repeat`` times, interleaved, on the cluster ``name``."""
    cluster = bench_cluster(name)
    runs: list[Run] = []
    for size, rep in ((z, r) for z in sizes for r in range(repeat)):
        for scenario in plan[size]:
            log(f"{size} {scenario}" + (f" #{rep + 1}" if repeat > 1 else ""))
            started = time.monotonic()
            run = run_one(cluster, size, scenario, rep + 1 if repeat > 1 else 0, opts)
            runs.append(run)
            log(
                f"{size} {scenario}: pods {fmt(run.pods_s)} s, Running "
                f"{fmt(run.running_s)} s, operator GET/LIST {run.operator_reads} "
                f"(informers {run.informer_reads}), "
                f"CPU {fmt(run.cpu_s, '.2f')} s "
                f"(run {time.monotonic() - started:.0f} s) {run.note}"
            )
    return runs


def report(runs: list[Run], sizes: list[str], args: argparse.Namespace) -> None:
    """Every table and the targets, on stdout."""
    using = Integrations(kueue=args.kueue, gang=args.gang)
    print(
        f"ceiling concurrency: {args.concurrency} threads; baseline: {args.baseline}; "
        f"integrations: {using}"
    )
    for size in sizes:
        print(f"\n### {size}\n")
        print(table([r for r in runs if r.size == size]))
    print("\n### Where the time goes\n")
    print(where(runs))
    print("\n### The API server's time on writes\n")
    print(server(runs))
    print("\n### CPU by process\n")
    print(cpu(runs))
    print("\n### Memory\n")
    print(memory(runs))
    compared = comparisons(medians(runs))
    if compared.count("\n") > 1:  # a row beside the header's two lines
        print("\n### Comparisons (first / second, within this run)\n")
        print(compared)
    if any(r.profile for r in runs):
        print("\n### The operator's profile (py-spy)")
        print(profiles(runs))
    print("\n### Targets\n")
    if args.repeat > 1:
        print(f"(each target below takes the median of the {args.repeat} runs by pods time)")
    for line in targets(medians(runs)):
        print(f"- {line}")
