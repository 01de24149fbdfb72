#!/usr/bin/env python3
"""Benchmark: the operator's reconciles while its own progress endpoint holds
10,000 reporting ranks, against the same run with no reports.

Each scenario runs on a fresh local control plane (``python3 -m hack.cluster up
--name t9k-beside``, or ``--cluster``; taken down after it), with this
tree's operator at its default flags and its progress endpoint at
``127.0.0.1`` (``--progress-url``; a certificate of the bench's own CA in
``--progress-cert-dir``), beside ``hack/bench_job_start.py``'s stand-in
kubelet (every pod marked Running at once):

1. ``--big`` jobs of ``--big-replicas`` replicas (10 x 125: 1,250 pods) are
   created and run;
2. ``reporting`` only: each of those pods gets a token from the API server
   (TokenRequest for the endpoint's audience, bound to the pod, as its
   projected volume would), and its 8 ranks report to the URL the operator
   put in the pod's environment (local rank 0 its progress, the others
   liveness), each on its own kept TLS connection at the pace the endpoint
   tells, connecting over ``--ramp`` seconds (``hack/bench_progress.py``'s
   reporters' process); ``quiet`` waits as long with no reports;
3. ``--settle`` seconds of steady state: the operator's CPU with nothing
   but the reports to do;
4. the job-start run: ``--start`` jobs (``JOBSxREPLICAS``, 200x4) created as
   ``hack/bench_job_start.py`` creates them, until each is Running.

Measured over the job-start run, from the difference of the operator's
/metrics before and after it: the job controller's reconcile time (p50 and
p99, interpolated within the histogram's buckets as Prometheus's
``histogram_quantile`` does) and its mean workqueue wait (the queue's
buckets are powers of ten, too coarse for a quantile), each new job's time from its
create to Running (the stand-in's watch), the operator's CPU (cores: its
process and its progress front's), and
the reports the endpoint took and refused (``t9k_progress_reports_total``).
The ratios are reporting / quiet; ``--repeat`` interleaves the scenarios
and the table gives every run and the ratios of the medians.

Run: ``.venv/bin/python -m hack.bench_progress_beside [--repeat 2]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hack import bench_job_start as starts
from hack import bench_progress as progress_bench
from hack.procstat import proc_cpu, proc_kib
from t9k_operator.kube import AlreadyExists, ClientOptions, KubeClient
from t9k_operator.reconcilers.pipeline.children import CREATE_PARALLEL
from t9k_operator.resources import NAMESPACES, PODS, SERVICEACCOUNTS
from t9k_operator.runtime import certs

ROOT = Path(__file__).resolve().parents[1]

AUDIENCE = "t9k-operator-progress"  # the operator's default --progress-audience
RANKS = 8  # processes a pod
SCENARIOS = ("quiet", "reporting")
RECONCILE = "controller_runtime_reconcile_time_seconds"
QUEUE_WAIT = "workqueue_queue_duration_seconds"
REPORTS = "t9k_progress_reports_total"


def log(msg: str) -> None:
    print(f"[beside] {msg}", file=sys.stderr, flush=True)


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return str(resp.read().decode())


def buckets(text: str, name: str) -> dict[float, float]:
    """The job controller's histogram ``name``: cumulative count by upper bound."""
    out: dict[float, float] = {}
    for labels, value in starts.samples(text, f"{name}_bucket"):
        if "pytorchtrainingjob" in (labels.get("controller", "") + labels.get("name", "")):
            le = float(labels["le"])
            out[le] = out.get(le, 0.0) + value
    return out


def quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float | None:
    """``histogram_quantile(q, after - before)``: linear within the bucket the
    q-th observation falls in (the last finite bound when it is past them)."""
    diff = sorted((le, after[le] - before.get(le, 0.0)) for le in after)
    total = diff[-1][1] if diff else 0.0
    if total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for le, count in diff:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = le, count
    return lower


def total(text: str, name: str) -> float:
    """The job controller's samples of ``name``, summed."""
    return sum(
        v
        for labels, v in starts.samples(text, name)
        if "pytorchtrainingjob" in (labels.get("controller", "") + labels.get("name", ""))
    )


def reports(text: str) -> dict[str, float]:
    """``t9k_progress_reports_total`` by result."""
    out: dict[str, float] = {}
    for labels, value in starts.samples(text, REPORTS):
        out[labels.get("result", "")] = out.get(labels.get("result", ""), 0.0) + value
    return out


@dataclass
class Run:
    scenario: str
    rep: int
    reconcile_p50: float | None = None
    reconcile_p99: float | None = None
    queue_mean: float | None = None
    start_p50: float | None = None
    start_p99: float | None = None
    running_s: float | None = None
    cores_start: float | None = None
    cores_settled: float | None = None
    reporters_cores: float | None = None  # the reporters' process, settled
    rss_mib: tuple[float, float] | None = None  # the operator's process and its front, settled
    # Cores spent over the job-start run: the machine's, and by process.
    start_cores: dict[str, float] = field(default_factory=dict)
    reports_s: float = 0.0  # taken a second over the settled period
    refused: dict[str, float] = field(default_factory=dict)  # over the whole run, by result
    reconciles: float = 0.0
    note: str = ""


def tokens(client: KubeClient, pods: list[dict[str, Any]]) -> dict[str, str]:
    """Each pod's token for the endpoint's audience, bound to it (TokenRequest
    of its ServiceAccount, as kubelet asks for a projected token)."""

    def one(pod: dict[str, Any]) -> tuple[str, str]:
        meta = pod["metadata"]
        sa = pod["spec"].get("serviceAccountName") or "default"
        spec = {
            "audiences": [AUDIENCE],
            "expirationSeconds": 3600,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        }
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        answer = client.request(
            "POST", SERVICEACCOUNTS.path(starts.NAMESPACE, sa, "token"), body=body
        )
        return meta["name"], str(answer["status"]["token"])

    with ThreadPoolExecutor(16) as pool:
        return dict(pool.map(one, pods))


def rank_specs(pods: list[dict[str, Any]], given: dict[str, str], ramp: float) -> list[Any]:
    """The reporters' ranks: each pod's 8, to the URL in its environment."""
    out = []
    for i, pod in enumerate(pods):
        env = {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}
        path = urlsplit(env["T9K_PROGRESS_URL"]).path
        for r in range(RANKS):
            out.append(
                {
                    "path": path,
                    "token": given[pod["metadata"]["name"]],
                    "rank": r,
                    "paced": True,
                    "group": "all",
                    "delay": ramp * ((i * RANKS + r) % 997) / 997,
                }
            )
    return out


def run_one(args: argparse.Namespace, scenario: str, rep: int, logs: Path) -> Run:
    run = Run(scenario, rep)
    big_pods = args.big * args.big_replicas
    jobs, replicas = (int(x) for x in args.start.split("x"))
    cluster = starts.Cluster(args.cluster)
    cluster.up()
    client = KubeClient.from_config(
        str(cluster.kubeconfig),
        options=ClientOptions(qps=1e6, burst=1_000_000, pool_size=64, user_agent="t9k-bench"),
    )
    standin = starts.StandIn(client, big_pods + jobs * replicas, args.big + jobs)
    operator: starts.Operator | None = None
    reporters: subprocess.Popen[bytes] | None = None
    work = Path(tempfile.mkdtemp(prefix=f"{scenario}-{rep}-", dir=logs))
    try:
        cluster.kubectl(
            "apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "manifests" / "crds")
        )
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        with contextlib.suppress(AlreadyExists):
            client.create(NAMESPACES, {"metadata": {"name": starts.NAMESPACE}})
        port = starts.free_port()
        ca, ca_key = certs.new_ca("bench CA")
        cert, key = certs.new_serving(ca, ca_key, ["127.0.0.1"])
        for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
            (work / name).write_bytes(data)
        flags = (
            *("--progress-bind-address", f"127.0.0.1:{port}"),
            *("--progress-url", f"https://127.0.0.1:{port}"),
            *("--progress-cert-dir", str(work)),
        )
        operator = starts.Operator(ROOT, cluster.kubeconfig, logs / f"{scenario}-{rep}.log", *flags)
        operator.wait_ready()
        standin.start()
        time.sleep(1.0)
        big = [starts.job_body(f"big-{j}", args.big_replicas) for j in range(args.big)]
        for body in big:
            client.create(starts.JOBS, body, starts.NAMESPACE)
        starts.wait_until(
            f"{args.big} jobs Running",
            lambda: sum(n.startswith("big-") for n in standin.job_running) >= args.big,
            args.timeout,
        )
        pods = [
            p
            for p in client.list(PODS, starts.NAMESPACE)["items"]
            if p["metadata"]["name"].startswith("big-")
        ]
        log(f"{scenario} #{rep}: {len(pods)} pods of {args.big} jobs Running")
        began = time.time()
        if scenario == "reporting":
            starts.wait_until(
                "the namespace's ServiceAccount",
                lambda: any(
                    s["metadata"]["name"] == "default"
                    for s in client.list(SERVICEACCOUNTS, starts.NAMESPACE)["items"]
                ),
                60,
            )
            given = tokens(client, pods)
            ranks = rank_specs(pods, given, args.ramp)
            spec = {
                "port": port,
                "ca": str(work / "ca.crt"),
                "stop": began + 3600,
                "done": str(work / "done"),
                "ranks": ranks,
            }
            (work / "spec.json").write_text(json.dumps(spec))
            log(f"{scenario} #{rep}: {len(ranks)} ranks connecting over {args.ramp:g} s")
            reporters = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "hack.bench_progress",
                    "_reporters",
                    str(work / "spec.json"),
                ],
                cwd=ROOT,
            )
        time.sleep(args.ramp)
        text0 = scrape(operator.metrics)
        front = front_pid(operator.proc.pid)
        cpu0, wall0 = operator_cpu(operator.proc.pid, front), time.monotonic()
        theirs0 = proc_cpu(reporters.pid) if reporters else 0.0
        time.sleep(args.settle)
        text1 = scrape(operator.metrics)
        wall = time.monotonic() - wall0
        run.cores_settled = (operator_cpu(operator.proc.pid, front) - cpu0) / wall
        run.rss_mib = (
            proc_kib(operator.proc.pid, "VmRSS") / 1024,
            proc_kib(front, "VmRSS") / 1024,
        )
        if reporters is not None:
            run.reporters_cores = (proc_cpu(reporters.pid) - theirs0) / wall
        taken = reports(text1).get("accepted", 0.0) - reports(text0).get("accepted", 0.0)
        run.reports_s = taken / args.settle

        # The job-start run.
        bodies = [starts.job_body(f"job-{j}", replicas) for j in range(jobs)]
        created: dict[str, float] = {}

        def create(body: dict[str, Any]) -> None:
            client.create(starts.JOBS, body, starts.NAMESPACE)
            created[body["metadata"]["name"]] = time.monotonic()

        pids = {**cluster.pids, "operator": operator.proc.pid, "bench": os.getpid()}
        pids["operator's progress front"] = front
        meter = starts.CpuMeter(pids | ({"reporters": reporters.pid} if reporters else {}))
        meter.mark("start")
        cpu1, t0 = operator_cpu(operator.proc.pid, front), time.monotonic()
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(create, bodies))
        if not standin.jobs_done.wait(args.timeout):
            run.note = f"timed out: {len(standin.job_running)} jobs Running"
        run.running_s = time.monotonic() - t0
        meter.mark("end")
        spent = meter.spent("start", "end")
        wall = spent.pop("wall")
        spent.pop("machine_all")
        run.start_cores = {k: v / wall for k, v in spent.items()}
        run.cores_start = (operator_cpu(operator.proc.pid, front) - cpu1) / run.running_s
        text2 = scrape(operator.metrics)
        b1, b2 = buckets(text1, RECONCILE), buckets(text2, RECONCILE)
        run.reconcile_p50, run.reconcile_p99 = quantile(0.5, b1, b2), quantile(0.99, b1, b2)
        # The queue's buckets are powers of ten (controller-runtime's): its mean, exactly.
        waited = total(text2, f"{QUEUE_WAIT}_sum") - total(text1, f"{QUEUE_WAIT}_sum")
        gets = total(text2, f"{QUEUE_WAIT}_count") - total(text1, f"{QUEUE_WAIT}_count")
        run.queue_mean = waited / gets if gets else None
        count = f"{RECONCILE}_count"
        run.reconciles = total(text2, count) - total(text1, count)
        latencies = [
            standin.job_running[n] - created[n] for n in created if n in standin.job_running
        ]
        if latencies:
            run.start_p50 = progress_bench.quantile(latencies, 0.5)
            run.start_p99 = progress_bench.quantile(latencies, 0.99)
        run.refused = {k: v for k, v in reports(text2).items() if k != "accepted" and v}
    finally:
        if reporters is not None:
            (work / "done").touch()
            try:
                reporters.wait(120)
            except subprocess.TimeoutExpired:
                reporters.kill()
        standin.stop()
        if operator is not None:
            operator.stop()
        client.close()
        cluster.down()
    return run


def fmt(v: float | None, spec: str = ".3f") -> str:
    return "-" if v is None else format(v, spec)


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
        cells += [f"{fmt(getattr(r, a))} / {fmt(getattr(r, b))}" for _, a, b in COLUMNS]
        cells += [
            fmt(r.queue_mean),
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


def front_pid(operator: int) -> int:
    """The operator's progress front: its child process running front.py."""
    for task in Path(f"/proc/{operator}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                if b"front.py" in Path(f"/proc/{child}/cmdline").read_bytes():
                    return int(child)
    raise RuntimeError(f"the operator (pid {operator}) runs no progress front")


def operator_cpu(operator: int, front: int) -> float:
    """The operator's CPU seconds: its own process's and its front's."""
    return proc_cpu(operator) + proc_cpu(front)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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


if __name__ == "__main__":
    sys.exit(main())
