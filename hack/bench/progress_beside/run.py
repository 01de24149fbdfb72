"""One scenario's run, ``quiet`` or ``reporting``, on a fresh cluster (the
package's docstring says its steps), and its figures."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack.cluster import free_port
from hack.cluster.handle import ROOT
from hack.procstat import proc_cpu, proc_kib
from t9k_operator.resources import PODS, SERVICEACCOUNTS
from t9k_operator.runtime import certs

from ..common.cluster import bench_client, bench_cluster, install_crds, start_fresh, wait_until
from ..common.cpu import CpuMeter
from ..common.figures import quantile as sample_quantile
from ..common.jobs import JOBS, NAMESPACE, job_body
from ..common.kubelet import StandIn
from ..common.log import log as bench_log
from ..common.metrics import scrape
from ..common.operator import Operator
from .histograms import QUEUE_WAIT, RECONCILE, buckets, quantile, reports, total
from .processes import front_pid, operator_cpu
from .ranks import rank_specs, tokens


def log(msg: str) -> None:
    bench_log(msg, "beside")


@dataclass
class Run:
    """A scenario's figures (the cli's table has a column for each)."""

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


def run_one(args: argparse.Namespace, scenario: str, rep: int, logs: Path) -> Run:
    return Trial(args, scenario, rep, logs).execute()


class Trial:
    """A scenario's run from the cluster's start to its figures."""

    def __init__(self, args: argparse.Namespace, scenario: str, rep: int, logs: Path) -> None:
        self.args, self.scenario, self.rep, self.logs = args, scenario, rep, logs
        self.run = Run(scenario, rep)
        self.jobs, self.replicas = (int(x) for x in args.start.split("x"))
        self.cluster = bench_cluster(args.cluster)
        self.operator: Operator | None = None
        self.reporters: subprocess.Popen[bytes] | None = None
        self.work = Path(tempfile.mkdtemp(prefix=f"{scenario}-{rep}-", dir=logs))

    def execute(self) -> Run:
        args = self.args
        start_fresh(self.cluster)
        self.client = bench_client(self.cluster)
        pods = args.big * args.big_replicas + self.jobs * self.replicas
        self.standin = StandIn(self.client, pods, args.big + self.jobs)
        try:
            port = self._start_operator()
            pods = self._run_big()
            began = time.time()
            if self.scenario == "reporting":
                self._start_reporters(pods, port, began)
            time.sleep(args.ramp)
            text1 = self._settle()
            self._job_start(text1)
        finally:
            if self.reporters is not None:
                (self.work / "done").touch()
                try:
                    self.reporters.wait(120)
                except subprocess.TimeoutExpired:
                    self.reporters.kill()
            self.standin.stop()
            if self.operator is not None:
                self.operator.stop()
            self.client.close()
            self.cluster.down()
        return self.run

    def _start_operator(self) -> int:
        """The CRDs, and the operator with its progress endpoint on a port of
        its own, serving a certificate of the bench's CA; that port."""
        install_crds(self.cluster, self.client, ROOT)
        port = free_port()
        ca, ca_key = certs.new_ca("bench CA")
        cert, key = certs.new_serving(ca, ca_key, ["127.0.0.1"])
        for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
            (self.work / name).write_bytes(data)
        flags = (
            *("--progress-bind-address", f"127.0.0.1:{port}"),
            *("--progress-url", f"https://127.0.0.1:{port}"),
            *("--progress-cert-dir", str(self.work)),
        )
        log_path = self.logs / f"{self.scenario}-{self.rep}.log"
        self.operator = Operator(ROOT, self.cluster.kubeconfig, log_path, *flags)
        self.operator.wait_ready()
        self.standin.start()
        time.sleep(1.0)
        return port

    def _run_big(self) -> list[dict[str, Any]]:
        """The big jobs created and Running; their pods."""
        args, client, standin = self.args, self.client, self.standin
        for body in [job_body(f"big-{j}", args.big_replicas) for j in range(args.big)]:
            client.create(JOBS, body, NAMESPACE)
        wait_until(
            f"{args.big} jobs Running",
            lambda: sum(n.startswith("big-") for n in standin.job_running) >= args.big,
            args.timeout,
        )
        pods = [
            p
            for p in client.list(PODS, NAMESPACE)["items"]
            if p["metadata"]["name"].startswith("big-")
        ]
        log(f"{self.scenario} #{self.rep}: {len(pods)} pods of {args.big} jobs Running")
        return pods

    def _start_reporters(self, pods: list[dict[str, Any]], port: int, began: float) -> None:
        """Each big pod's ranks reporting, in the reporters' process."""
        client, work = self.client, self.work
        wait_until(
            "the namespace's ServiceAccount",
            lambda: any(
                s["metadata"]["name"] == "default"
                for s in client.list(SERVICEACCOUNTS, NAMESPACE)["items"]
            ),
            60,
        )
        ranks = rank_specs(pods, tokens(client, pods), self.args.ramp)
        spec = {
            "port": port,
            "ca": str(work / "ca.crt"),
            "stop": began + 3600,
            "done": str(work / "done"),
            "ranks": ranks,
        }
        (work / "spec.json").write_text(json.dumps(spec))
        log(f"{self.scenario} #{self.rep}: {len(ranks)} ranks connecting over {self.args.ramp:g} s")
        self.reporters = subprocess.Popen(
            [sys.executable, "-m", "hack.bench.common.reporters", str(work / "spec.json")],
            cwd=ROOT,
        )

    def _settle(self) -> str:
        """The steady state's figures; the operator's /metrics at its end."""
        assert self.operator is not None
        operator, reporters, run = self.operator, self.reporters, self.run
        text0 = scrape(operator.metrics)
        self.front = front = front_pid(operator.proc.pid)
        cpu0, wall0 = operator_cpu(operator.proc.pid, front), time.monotonic()
        theirs0 = proc_cpu(reporters.pid) if reporters else 0.0
        time.sleep(self.args.settle)
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
        run.reports_s = taken / self.args.settle
        return text1

    def _job_start(self, text1: str) -> None:
        """The job-start run, and its figures against ``text1``."""
        assert self.operator is not None
        operator, front, run, client = self.operator, self.front, self.run, self.client
        bodies = [job_body(f"job-{j}", self.replicas) for j in range(self.jobs)]
        created: dict[str, float] = {}

        def create(body: dict[str, Any]) -> None:
            client.create(JOBS, body, NAMESPACE)
            created[body["metadata"]["name"]] = time.monotonic()

        pids = {**self.cluster.pids, "operator": operator.proc.pid, "bench": os.getpid()}
        pids["operator's progress front"] = front
        reporters = self.reporters
        meter = CpuMeter(pids | ({"reporters": reporters.pid} if reporters else {}))
        meter.mark("start")
        cpu1, t0 = operator_cpu(operator.proc.pid, front), time.monotonic()
        with ThreadPoolExecutor(self.args.concurrency) as pool:
            list(pool.map(create, bodies))
        if not self.standin.jobs_done.wait(self.args.timeout):
            run.note = f"timed out: {len(self.standin.job_running)} jobs Running"
        run.running_s = time.monotonic() - t0
        meter.mark("end")
        spent = meter.spent("start", "end")
        wall = spent.pop("wall")
        spent.pop("machine_all")
        run.start_cores = {k: v / wall for k, v in spent.items()}
        run.cores_start = (operator_cpu(operator.proc.pid, front) - cpu1) / run.running_s
        self._figures(text1, scrape(operator.metrics), created)

    def _figures(self, text1: str, text2: str, created: dict[str, float]) -> None:
        """The job-start run's figures from the operator's /metrics before
        (``text1``) and after (``text2``) it, and the stand-in's times."""
        run, standin = self.run, self.standin
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
            run.start_p50 = sample_quantile(latencies, 0.5)
            run.start_p99 = sample_quantile(latencies, 0.99)
        run.refused = {k: v for k, v in reports(text2).items() if k != "accepted" and v}
