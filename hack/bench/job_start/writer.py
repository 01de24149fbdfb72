"""The ``writes`` scenario's stand-in controller: a process of its own, like
the operator, making the writes a job's start needs with no logic between
them. Run as ``python -m hack.bench.job_start.writer KUBECONFIG REPLICAS
CONCURRENCY``, it prints ``ready`` once its watches are open, then makes
each job's writes as its watch sees the job, until stdin closes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hack.cluster.handle import ROOT
from t9k_operator.kinds.contract import PodMode, read
from t9k_operator.kinds.pytorch import PyTorchKind
from t9k_operator.kube import ClientOptions, KubeClient
from t9k_operator.reconcilers import engine
from t9k_operator.resources import EVENTS, PODS, SERVICES

from ..common.follower import Follower
from ..common.jobs import JOBS, NAMESPACE


class Writes:
    """Each job's writes: on its watch event, its first status, its Service,
    its pods (the operator's builders' output, all at once through a pool)
    and one Event; once its pods are all seen Running, its Running status."""

    def __init__(self, client: KubeClient, replicas: int, concurrency: int) -> None:
        self.client, self.replicas = client, replicas
        self.kind = PyTorchKind()
        self.pool = ThreadPoolExecutor(concurrency, thread_name_prefix="writer")
        # A job's pods all at once through one pool of its own, as the operator's
        # creates share one (no slow start: the ceiling makes no failing requests).
        self.pod_pool = ThreadPoolExecutor(concurrency, thread_name_prefix="writer-pods")
        self.lock = threading.Lock()
        self.stored: dict[str, dict[str, Any]] = {}  # job name -> as its first status left it
        self.running: dict[str, set[str]] = {}  # job name -> its pods seen Running
        self.done: set[str] = set()
        self.started: set[str] = set()

    def start(self, job: dict[str, Any]) -> None:
        kind, client = self.kind, self.client
        parsed = read(kind, job)
        assert parsed.job is not None, parsed.view.spec_error
        plan = engine.plan(kind, parsed.view, {}, datetime.now(UTC))
        first = client.replace_status(JOBS, {**job, "status": kind.render_status(job, plan.status)})
        with self.lock:
            self.stored[job["metadata"]["name"]] = first
        for extra in kind.extras(parsed.job):
            client.create(SERVICES, extra, NAMESPACE)
        pods = [
            kind.build_pod(parsed.job, "worker", i, PodMode(), {}) for i in range(self.replicas)
        ]
        list(
            self.pod_pool.map(
                lambda pod: client.create(PODS, pod, NAMESPACE, field_validation="Strict"), pods
            )
        )
        client.create(EVENTS, bench_event(job), NAMESPACE)
        self.finish(job["metadata"]["name"])

    def finish(self, name: str) -> None:
        with self.lock:
            job = self.stored.get(name)
            if job is None or len(self.running.get(name, ())) < self.replicas or name in self.done:
                return
            self.done.add(name)
        status = {**job["status"], "phase": "Running"}
        self.client.replace_status(JOBS, {**job, "status": status})

    def logged(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:
            print(f"writer: {exc}", file=sys.stderr, flush=True)

    def on_job(self, kind_: str, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        with self.lock:
            if kind_ == "DELETED" or name in self.started:
                return
            self.started.add(name)
        self.pool.submit(self.logged, self.start, job)

    def on_pod(self, kind_: str, pod: dict[str, Any]) -> None:
        if kind_ == "DELETED" or (pod.get("status") or {}).get("phase") != "Running":
            return
        owner = (pod["metadata"].get("ownerReferences") or [{}])[0].get("name")
        if owner:
            with self.lock:
                self.running.setdefault(owner, set()).add(pod["metadata"]["name"])
            self.pool.submit(self.logged, self.finish, owner)


def main(kubeconfig: str, replicas: int, concurrency: int) -> int:
    client = KubeClient.from_config(
        kubeconfig,
        options=ClientOptions(qps=1e6, burst=1_000_000, pool_size=64, user_agent="t9k-writer"),
    )
    writes = Writes(client, replicas, concurrency)
    followers = [Follower(client, JOBS, writes.on_job), Follower(client, PODS, writes.on_pod)]
    for f in followers:
        if not f.ready.wait(60):
            raise RuntimeError("the writer's watches did not open")
    print("ready", flush=True)
    sys.stdin.read()
    for f in followers:
        f.stop()
    print(f"watch restarts: {sum(f.restarts for f in followers)}", file=sys.stderr, flush=True)
    writes.pool.shutdown(wait=False, cancel_futures=True)
    return 0


def bench_event(job: dict[str, Any]) -> dict[str, Any]:
    """One Event about ``job``, as the operator tells a job's start."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta = job["metadata"]
    return {
        "metadata": {"generateName": meta["name"] + ".", "namespace": NAMESPACE},
        "involvedObject": {
            "apiVersion": job["apiVersion"],
            "kind": job["kind"],
            "name": meta["name"],
            "namespace": NAMESPACE,
            "uid": meta["uid"],
        },
        "reason": "Created",
        "message": "created the job's pods",
        "type": "Normal",
        "source": {"component": "t9k-writer"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


class Writer:
    """The stand-in controller, as a process (this module run)."""

    def __init__(self, kubeconfig: Path, replicas: int, concurrency: int, log_path: Path) -> None:
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "hack.bench.job_start.writer"),
                *(str(kubeconfig), str(replicas), str(concurrency)),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("the writer did not start; see " + str(log_path))

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()


if __name__ == "__main__":
    kubeconfig, replicas, concurrency = sys.argv[1:4]
    sys.exit(main(kubeconfig, int(replicas), int(concurrency)))
