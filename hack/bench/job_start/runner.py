"""One run: a scenario at a size on a fresh cluster, from its start to its
figures (the package's docstring says what each is)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hack.bench.common.procstat import proc_cpu, proc_kib
from hack.cluster import Cluster
from t9k_operator.resources import PODS

from ..common.cluster import bench_client, install_crds, start_fresh
from ..common.cpu import CpuMeter
from ..common.jobs import JOBS, NAMESPACE
from ..common.kubelet import StandIn
from ..common.log import log
from ..common.operator import Operator
from . import apiserver, kubeflow
from .ceiling import ceiling_pods
from .integrations import FLAVOR_LABELS, job_body
from .plan import TUNED, run_timeout
from .prepare import prepare
from .pyspy import PySpy
from .run import Options, Run
from .stores import cache_bytes
from .writer import Writer

Writes = tuple[Counter[tuple[str, str, str]], dict[tuple[str, str, str], float]]


def run_one(cluster: Cluster, size: str, scenario: str, rep: int, opts: Options) -> Run:
    """``scenario`` at ``size`` (``JOBSxREPLICAS``), the ``rep``-th time (0:
    the only one), on ``cluster`` started anew and taken down after."""
    return Trial(cluster, size, scenario, rep, opts).execute()


class Trial:
    """A run's state from its start to its figures."""

    def __init__(self, cluster: Cluster, size: str, scenario: str, rep: int, opts: Options):
        self.cluster, self.scenario, self.opts, self.using = cluster, scenario, opts, opts.using
        self.jobs, self.replicas = (int(x) for x in size.split("x"))
        self.timeout = run_timeout(opts.timeout, self.jobs * self.replicas)
        self.run = Run(
            size,
            scenario,
            jobs=self.jobs,
            pods=self.jobs * self.replicas,
            rep=rep,
            integrations=str(self.using),
        )
        self.tag = f"{size}-{scenario}" + (f"-{rep}" if rep else "")
        self.operator: Operator | None = None
        self.writer: Writer | None = None
        self.spy: PySpy | None = None
        self.profiling: threading.Thread | None = None

    def execute(self) -> Run:
        flags = (f"--apiserver-flag={f}" for f in self.opts.server_flags)
        start_fresh(self.cluster, *self.using.cluster_flags(), *flags)
        self.client = bench_client(self.cluster)
        theirs = self.scenario == "kubeflow"
        self.job_resource = kubeflow.PYTORCHJOBS if theirs else JOBS
        self.standin = StandIn(
            self.client,
            self.jobs * self.replicas,
            self.jobs,
            bound_only=self.using.gang is not None,
            scheduler=self.using.scheduler(),
            node_labels=FLAVOR_LABELS if self.using.kueue else None,
            jobs=self.job_resource,
            running=kubeflow.running if theirs else None,
        )
        try:
            self._prepare()
            self._measure()
        finally:
            self.standin.stop()
            if self.operator is not None:
                self.operator.stop()
            if self.writer is not None:
                self.writer.stop()
            self.client.close()
            self.cluster.down()
        return self.run

    def _prepare(self) -> None:
        """The CRDs, what the integrations need, the controller, the stand-in kubelet."""
        scenario, opts = self.scenario, self.opts
        source = opts.sources["baseline" if scenario == "baseline" else "tree"]
        install_crds(self.cluster, self.client, source)
        self.pods = ceiling_pods(self.jobs, self.replicas) if scenario == "ceiling" else []
        body = kubeflow.job_body if scenario == "kubeflow" else self._job_body
        self.bodies = [body(f"job-{j}", self.replicas) for j in range(self.jobs)]
        prepare(self.client, self.using, self.jobs * self.replicas)
        log_path = opts.logs / f"{self.tag}.log"
        if scenario == "kubeflow":
            folder = kubeflow.install(self.cluster, self.client)
            kubeconfig = self.cluster.kubeconfig
            self.operator = kubeflow.TrainingOperator(folder, kubeconfig, log_path, self.client)
            self.operator.wait_ready()
            self.run.rss_ready_mib = proc_kib(self.operator.proc.pid, "VmRSS") / 1024
        elif scenario == "writes":
            self.writer = Writer(self.cluster.kubeconfig, self.replicas, opts.concurrency, log_path)
        elif scenario != "ceiling":
            extra = opts.operator_flags if scenario != "baseline" else ()
            tuned = TUNED if scenario == "tuned" else ()
            flags = (*tuned, *self.using.operator_flags(), *extra)
            self.operator = Operator(source, self.cluster.kubeconfig, log_path, *flags)
            self.operator.wait_ready()
            self.run.rss_ready_mib = proc_kib(self.operator.proc.pid, "VmRSS") / 1024
        self.standin.start()
        time.sleep(1.0)  # the watches are open

    def _job_body(self, name: str, replicas: int) -> dict[str, Any]:
        return job_body(name, replicas, self.using)

    def _measure(self) -> None:
        """Submit, wait, and take every figure."""
        server0 = apiserver.metrics(self.cluster)
        before = apiserver.writes(server0)
        # The controller: the operator, or the writes scenario's stand-in for it.
        ctl = self.operator.proc if self.operator else self.writer.proc if self.writer else None
        cpu0 = proc_cpu(ctl.pid) if ctl else 0.0
        pids = {**self.cluster.pids, "bench": os.getpid()}
        meter = CpuMeter(pids | ({"operator": ctl.pid} if ctl else {}))
        meter.mark("start")
        reads0 = self._start_profiles()
        self._submit_and_wait(meter)
        self._reads(reads0)
        if self.scenario == "ceiling":
            # Every pod marked Running: the stand-in's share of the server's work is done.
            self.standin.all_marked.wait(self.timeout)
        meter.mark("end")
        self._end_profiles(server0)
        self.run.cpu_to_pods = meter.spent("start", "pods")
        self.run.cpu_to_end = meter.spent("start", "end")
        time.sleep(2.0)  # late writes (a last status, Events) land in the counts
        if ctl is not None:
            self.run.cpu_s = proc_cpu(ctl.pid) - cpu0
        self._memory()
        self._writes(before, apiserver.writes(apiserver.metrics(self.cluster)))
        self._notes()

    def _start_profiles(self) -> tuple[int, int] | None:
        """``--pprof`` and ``--py-spy`` started; the operator's reads so far."""
        opts, operator = self.opts, self.operator
        if opts.pprof:
            out = opts.logs / f"{self.tag}.apiserver.pprof"
            self.profiling = apiserver.profile(self.cluster, opts.pprof, out)
        reads0 = operator.reads() if operator else None
        if opts.py_spy and operator:
            self.spy = PySpy(opts.py_spy, operator.proc.pid, opts.logs / f"{self.tag}.py-spy")
        return reads0

    def _submit_and_wait(self, meter: CpuMeter) -> None:
        """Every job (or the ceiling's every pod) created; until all pods exist
        and every job is Running."""
        client, standin, run = self.client, self.standin, self.run
        t0 = time.monotonic()
        with ThreadPoolExecutor(self.opts.concurrency) as pool:
            if self.scenario == "ceiling":
                list(pool.map(lambda p: client.create(PODS, p, NAMESPACE), self.pods))
            else:
                jobs = self.job_resource
                list(pool.map(lambda body: client.create(jobs, body, NAMESPACE), self.bodies))
        if standin.pods_done.wait(self.timeout):
            meter.mark("pods")
            run.pods_s = max(standin.pod_seen.values()) - t0
        if self.scenario != "ceiling" and standin.jobs_done.wait(self.timeout):
            run.running_s = max(standin.job_running.values()) - t0

    def _reads(self, reads0: tuple[int, int] | None) -> None:
        if self.operator is None:
            return
        reads1 = self.operator.reads()
        if reads0 is not None and reads1 is not None:
            self.run.informer_reads = reads1[1] - reads0[1]
            self.run.operator_reads = reads1[0] - reads0[0] - self.run.informer_reads
        log(
            f"operator GET/LIST (all, informers'): {reads0} before the first "
            f"submission, {reads1} after"
        )

    def _end_profiles(self, server0: str) -> None:
        """``--py-spy``'s summary, the watchers the server closed, ``--pprof``'s end."""
        if self.spy is not None:
            self.run.profile, self.run.profile_samples = self.spy.stop()
        # kubectl: after the CPU meter's end
        closed = apiserver.closed_watchers(apiserver.metrics(self.cluster))
        closed.subtract(apiserver.closed_watchers(server0))
        self.run.closed_watchers = {k: v for k, v in sorted(closed.items()) if v > 0}
        if self.profiling is not None:
            self.profiling.join(self.opts.pprof + 30)

    def _memory(self) -> None:
        if self.operator is None:
            return
        pid, run = self.operator.proc.pid, self.run
        run.rss_peak_mib = proc_kib(pid, "VmHWM") / 1024
        run.rss_end_mib = proc_kib(pid, "VmRSS") / 1024
        if self.scenario == "kubeflow":
            return  # the stores measured are the operator's, of its own kinds
        traced, resident = cache_bytes(self.client)
        run.cache_mib, run.cache_rss_mib = traced / 2**20, resident / 2**20

    def _writes(self, before: Writes, after_: Writes) -> None:
        """The server's writes over the run, its time on them, and the
        operator's own figures."""
        (before_n, lat0), (after, lat1), run = before, after_, self.run
        run.server_s = {
            " ".join(x for x in k if x): v - lat0.get(k, 0.0)
            for k, v in sorted(lat1.items())
            if v - lat0.get(k, 0.0) > 0
        }
        pod_key = ("POST", "pods", "")
        creates = after[pod_key] - before_n.get(pod_key, 0)
        if creates:
            run.pod_create_ms = 1000 * (lat1.get(pod_key, 0.0) - lat0.get(pod_key, 0.0)) / creates
        if self.operator is not None:
            run.operator = self.operator.sums()
            refused = run.operator.get("retries_429", 0.0)
            if refused or self.opts.server_flags:
                errors = self.operator.error_lines()
                self._note(
                    f"{refused:.0f} requests refused with 429 and sent again, "
                    f"{errors} error lines in the operator's log"
                )
        diff = {k: after[k] - before_n.get(k, 0) for k in after if after[k] - before_n.get(k, 0)}
        run.writes = {" ".join(x for x in k if x): v for k, v in sorted(diff.items())}
        run.budget_writes = sum(v for k, v in diff.items() if k in apiserver.BUDGET)
        run.events = sum(v for k, v in diff.items() if k[1] == "events")

    def _notes(self) -> None:
        """What the run's row says beside its figures."""
        run, standin = self.run, self.standin
        if run.pods_s is None or (self.scenario != "ceiling" and run.running_s is None):
            run.note = (
                f"timed out: {len(standin.pod_seen)} pods, {len(standin.job_running)} jobs Running"
            )
        if standin.misplaced:
            where = f"schedulerName {self.using.scheduler()}" + (
                f", node selector {FLAVOR_LABELS}" if self.using.kueue else ""
            )
            self._note(f"{standin.misplaced} pods without {where}")
        if run.closed_watchers:
            # Everyone's watches of that resource, the operator's among them: its
            # informers watch again, a GET each (in the informers' column).
            by = ", ".join(f"{k} {v}" for k, v in run.closed_watchers.items())
            self._note(f"the API server closed {sum(run.closed_watchers.values())} watchers ({by})")
        if standin.restarts:
            # A watch the API server closed: the objects listed again were seen late.
            self._note(f"{standin.restarts} watch restarts")

    def _note(self, what: str) -> None:
        self.run.note = f"{self.run.note}; " * bool(self.run.note) + what
