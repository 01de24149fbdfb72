"""One run on a started trio: the watches that note each job's stages, the
jobs created on the manager, the wait until every one is Running on a
worker, and what the processes spent meanwhile."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hack.cluster.multikueue import CHECK
from t9k_operator.api.managed_by import MULTIKUEUE
from t9k_operator.resources import WORKLOADS

from ..common.cpu import CpuMeter
from ..common.follower import Follower
from ..common.jobs import JOBS, NAMESPACE
from ..common.kubelet import StandIn
from ..common.log import log
from ..common.procstat import proc_cpu, proc_kib
from ..job_start.apiserver import metrics
from ..job_start.integrations import FLAVOR_LABELS, Integrations, job_body
from .figures import REMOTE_RESOURCES, Throttled, remote_requests, throttled
from .trio import MANAGER, Trio, client_of, kueue_log_lines

SAMPLE_S = 5.0  # between two counts of MultiKueue's requests to the workers


def handed_job(name: str) -> dict[str, Any]:
    """The bench's job (one replica, 100m of CPU, in the LocalQueue) handed to
    MultiKueue."""
    job = job_body(name, 1, Integrations(kueue=True))
    job["spec"]["managedBy"] = MULTIKUEUE
    return job


def _true(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _check_ready(wl: dict[str, Any]) -> bool:
    checks = (wl.get("status") or {}).get("admissionChecks") or []
    return any(c.get("name") == CHECK and c.get("state") == "Ready" for c in checks)


class Stages:
    """When the bench's watches first saw each job reach each stage (the
    remote ones keyed by Workload name until :meth:`by_job`)."""

    def __init__(self) -> None:
        self.times: dict[str, dict[str, float]] = {}
        self.job_of: dict[str, str] = {}  # Workload -> job, from the manager's owner refs
        self.where: dict[str, str] = {}  # Workload -> the worker it ran on
        self._lock = threading.Lock()

    def note(self, stage: str, key: str) -> None:
        with self._lock:
            self.times.setdefault(stage, {}).setdefault(key, time.monotonic())

    def on_manager_workload(self, kind: str, wl: dict[str, Any]) -> None:
        if kind == "DELETED":
            return
        name = wl["metadata"]["name"]
        owners = wl["metadata"].get("ownerReferences") or []
        job = next((o["name"] for o in owners if o.get("kind") == JOBS.kind), None)
        if job is None:
            return
        self.job_of[name] = job
        self.note("workload", name)
        if _true(wl, "QuotaReserved"):
            self.note("reserved", name)
        if _check_ready(wl):
            self.note("dispatched", name)
            cluster = (wl.get("status") or {}).get("clusterName")
            if cluster:
                self.where[name] = cluster

    def on_remote_workload(self, kind: str, wl: dict[str, Any]) -> None:
        if kind == "DELETED":
            return
        name = wl["metadata"]["name"]
        self.note("remote", name)
        if _true(wl, "QuotaReserved"):
            self.note("remote_reserved", name)

    def by_job(self) -> dict[str, dict[str, float]]:
        """Every stage's times keyed by job name."""
        with self._lock:
            return {
                stage: {self.job_of.get(k, k): t for k, t in times.items()}
                for stage, times in self.times.items()
            }


@dataclass
class Result:
    """What one run noted, for :mod:`figures` and the report."""

    jobs: int
    times: dict[str, dict[str, float]] = field(default_factory=dict)
    placed: Counter[str] = field(default_factory=Counter)  # worker -> jobs run there
    cpu_s: dict[str, float] = field(default_factory=dict)  # role -> its operator's
    rss_peak_mib: dict[str, float] = field(default_factory=dict)
    limiter: dict[str, dict[str, float]] = field(default_factory=dict)  # operator sums
    spent: dict[str, float] = field(default_factory=dict)  # CpuMeter, first create to end
    requests: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    # worker -> resource -> (seconds after the first create, MultiKueue's requests so far)
    series: dict[str, dict[str, list[tuple[float, int]]]] = field(default_factory=dict)
    throttled: dict[str, list[Throttled]] = field(default_factory=dict)  # role -> lines
    note: str = ""
    kueue_config: dict[str, Any] = field(default_factory=dict)  # the manager's multiKueue
    load: tuple[float, float] = (0.0, 0.0)  # the machine's load average, start and end


class Run:
    """``jobs`` jobs through the started ``trio``, waiting ``timeout`` seconds
    at most for the last to run."""

    def __init__(self, trio: Trio, jobs: int, timeout: float, concurrency: int = 8) -> None:
        self.trio, self.jobs, self.timeout, self.concurrency = trio, jobs, timeout, concurrency
        self.stages = Stages()
        self.standins: dict[str, StandIn] = {}
        self.followers: list[Follower] = []
        self.result = Result(jobs)
        self._sampling = threading.Event()  # set: stop sampling

    def watch(self) -> None:
        """The stand-in kubelet on each worker (which notes each job Running
        there), one on the manager (which has no pods: it notes the mirrored
        status), and the Workloads' watches."""
        for m in self.trio.members.values():
            worker = m.role != MANAGER
            standin = StandIn(
                client_of(m),
                self.jobs if worker else 0,
                self.jobs,
                node_labels=FLAVOR_LABELS if worker else None,
            )
            standin.start()
            self.standins[m.role] = standin
            handle = self.stages.on_remote_workload if worker else self.stages.on_manager_workload
            follower = Follower(client_of(m), WORKLOADS, handle)
            if not follower.ready.wait(60):
                raise RuntimeError(f"the Workloads' watch on {m.role} did not open")
            self.followers.append(follower)

    def stop(self) -> None:
        for f in self.followers:
            f.stop()
        for s in self.standins.values():
            s.stop()

    def _running(self) -> int:
        return sum(len(s.job_running) for r, s in self.standins.items() if r != MANAGER)

    def execute(self) -> Result:
        trio, result = self.trio, self.result
        servers0 = {m.role: metrics(m.cluster) for m in trio.workers}
        meter = CpuMeter(self._pids())
        cpu0 = {m.role: proc_cpu(m.operator.proc.pid) for m in trio.members.values() if m.operator}
        meter.mark("start")
        sampler = threading.Thread(target=self._sample, args=(servers0,), daemon=True)
        sampler.start()
        self._submit()
        deadline = time.monotonic() + self.timeout
        next_log = time.monotonic() + 15
        while self._running() < self.jobs and time.monotonic() < deadline:
            time.sleep(0.5)
            if time.monotonic() >= next_log:
                next_log += 15
                self._progress()
        if self._running() < self.jobs:
            result.note = f"timed out after {self.timeout:.0f} s: {self._running()} jobs Running"
        meter.mark("end")
        mirrored = self.standins[MANAGER]
        mirrored.jobs_done.wait(min(120.0, max(0.0, deadline - time.monotonic()) + 60))
        self._sampling.set()
        sampler.join(60)
        self._progress()
        result.spent = meter.spent("start", "end")
        for m in trio.members.values():
            if m.operator is None:
                continue
            result.cpu_s[m.role] = proc_cpu(m.operator.proc.pid) - cpu0[m.role]
            result.rss_peak_mib[m.role] = proc_kib(m.operator.proc.pid, "VmHWM") / 1024
            result.limiter[m.role] = m.operator.sums()
        for m in trio.workers:
            after = remote_requests(metrics(m.cluster))
            after.subtract(remote_requests(servers0[m.role]))
            result.requests[m.role] = +after
        for m in trio.members.values():
            result.throttled[m.role] = throttled(kueue_log_lines(m))
        self._collect()
        return result

    def _sample(self, servers0: dict[str, str], every: float = SAMPLE_S) -> None:
        """MultiKueue's requests to each worker by resource, every ``every``
        seconds from the first create until the run's end."""
        base = {role: remote_requests(text) for role, text in servers0.items()}
        t0 = time.monotonic()
        while True:
            for m in self.trio.workers:
                try:
                    now = remote_requests(metrics(m.cluster))
                except Exception:  # a scrape that failed: the next one counts
                    continue
                now.subtract(base[m.role])
                series = self.result.series.setdefault(m.role, {})
                for resource in REMOTE_RESOURCES:
                    n = sum(v for (_, r), v in now.items() if r == resource)
                    series.setdefault(resource, []).append((time.monotonic() - t0, n))
            if self._sampling.wait(every):
                return

    def _pids(self) -> dict[str, int]:
        pids: dict[str, int] = {"bench": os.getpid()}
        for m in self.trio.members.values():
            for proc, pid in m.cluster.pids.items():
                pids[f"{m.role} {proc}"] = pid
            if m.operator is not None:
                pids[f"{m.role} operator"] = m.operator.proc.pid
        return pids

    def _submit(self) -> None:
        """Every job created on the manager, ``concurrency`` at a time; each
        one's time is when its create was sent."""
        client = client_of(self.trio.manager)

        def create(j: int) -> None:
            name = f"mk-{j:04d}"
            self.stages.note("created", name)
            client.create(JOBS, handed_job(name), NAMESPACE)

        started = time.monotonic()
        with ThreadPoolExecutor(self.concurrency) as pool:
            list(pool.map(create, range(self.jobs)))
        log(f"{self.jobs} jobs created on the manager in {time.monotonic() - started:.1f} s")

    def _progress(self) -> None:
        times = self.stages.times
        counts = ", ".join(f"{k} {len(v)}" for k, v in times.items())
        mirrored = len(self.standins[MANAGER].job_running)
        log(f"{counts}; Running on a worker {self._running()}, on the manager {mirrored}")

    def _collect(self) -> None:
        """The stages by job, and where each job ran."""
        times = self.stages.by_job()
        running: dict[str, float] = {}
        for role, s in self.standins.items():
            if role == MANAGER:
                continue
            for job, t in s.job_running.items():
                running[job] = min(t, running.get(job, t))
                self.result.placed[role] += 1
        times["running"] = running
        times["mirrored"] = dict(self.standins[MANAGER].job_running)
        self.result.times = times
        misplaced = sum(s.misplaced for s in self.standins.values())
        restarts = sum(s.restarts for s in self.standins.values())
        restarts += sum(f.restarts for f in self.followers)
        notes = [self.result.note] if self.result.note else []
        if misplaced:
            notes.append(f"{misplaced} pods without the flavor's node selector")
        if restarts:
            notes.append(f"{restarts} watch restarts")
        self.result.note = "; ".join(notes)
