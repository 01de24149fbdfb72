#!/usr/bin/env python3
"""Benchmark: how fast the operator starts jobs, beside the API server's own speed.

For each size (``JOBSxREPLICAS``: 200x4, 1x512 (one job of 512 replicas),
1000x4 and 10000x4 by default, each with the scenarios of
:data:`DEFAULT_PLAN`) and each scenario, on a fresh local control plane
(``python3 -m hack.cluster up --name t9k-bench``, or ``--cluster``; taken down after
the run):

* ``ceiling``: no operator; the bench creates the same pods itself (built by
  the operator's own builder, owner references dropped) with
  ``--concurrency`` threads, the operator's limit on pod creates in flight;
* ``writes``: no operator; a stand-in controller, a separate process of its
  own like the operator, makes the same writes a job's start needs with no
  logic between them: on each job's watch event, its first status, its
  Service, its pods (the operator's builders' output, all at once through a
  pool of ``--concurrency`` threads) and one Event, one job after another on
  each of ``--concurrency`` threads; once its pod watch has
  seen all of a job's pods Running, the job's Running status. The ceiling
  under any controller that makes those writes (``ceiling`` makes only the pods);
* ``defaults``: this tree's operator at its default flags;
* ``tuned``: this tree's operator with ``--kube-api-qps 1000 --kube-api-burst 2000``;
* ``baseline``: the operator at ``--baseline`` (default a08a3ab, the
  operator before its job-start work), checked out into a temporary git worktree, at its defaults.

A stand-in kubelet in the bench marks every pod Running at once (one status
patch, as a kubelet does). The pods carry ``schedulerName:
t9k-bench-unscheduled`` and the annotation ``kwok.t9k.dev/manual: "true"``, so
neither kube-scheduler (whose client limit of 50 QPS would dominate the
figures) nor KWOK's stages touch them.

The operator's integrations, for ``defaults`` and ``tuned`` only (the other
scenarios have no operator, or an older one, and refuse them):

* ``--kueue``: the cluster runs Kueue (``python3 -m hack.cluster up --kueue``) and
  the operator ``--kueue``. Before the operator starts, the bench makes the
  WorkloadPriorityClass ``t9k-priority-50`` (from
  manifests/kueue/workload-priority-classes.yaml), a ResourceFlavor whose
  ``nodeLabels`` are ``type: kwok`` (every KWOK node's), a ClusterQueue
  open to its namespace with CPU quota for every pod at once, and the
  LocalQueue ``bench``, and waits for the queues to be Active. Every job
  names the LocalQueue (label ``kueue.x-k8s.io/queue-name`` and
  ``spec.scheduler.t9kScheduler.queue``) and priority 50, and each replica
  requests 100m of CPU (Kueue assigns flavors only to requested
  resources): the operator creates each job's Workload with the class's
  priority, and once Kueue admits it, pods whose node selector has the
  flavor's labels.
* ``--gang volcano|coscheduling``: the cluster runs that gang scheduler
  (``up --gang``) and the operator ``--gang-scheduler=<backend>``: every job
  gets a PodGroup. The operator gives its pods the backend's
  ``schedulerName`` (``volcano``, ``scheduler-plugins-scheduler``) over the
  template's ``t9k-bench-unscheduled``, so the gang scheduler, not
  kube-scheduler, binds them, as the option means; they keep
  ``kwok.t9k.dev/manual``, so KWOK still leaves their status alone, and the
  stand-in kubelet marks a pod Running once it sees it bound to a node (not
  at once, as without a gang scheduler: a kubelet runs only pods bound to
  its node). Since the cluster's four KWOK nodes hold 110 pods each, the
  bench adds nodes of the same shape (``kwok-bench-node-<i>``) for a
  quarter more pods than the run has. With ``--kueue`` too, the jobs' pods
  name the PriorityClass ``t9k-priority-50`` (from
  manifests/scheduling/priority-classes.yaml, made too).

A run whose pods lack the expected ``schedulerName`` (or, with ``--kueue``,
the flavor's node labels) says how many in its row.

``--apiserver-flag FLAG`` (repeatable) starts every run's kube-apiserver with
FLAG, e.g. low ``--max-requests-inflight`` and
``--max-mutating-requests-inflight``: each run then says how many of the
operator's requests the server refused with 429 and the operator sent again
(``t9k_client_retries_total``) and how many error lines its log has.

Measured from the moment the bench starts submitting: the time until every
pod exists (the bench's watch saw it) and until every job's status says
Running; the operator's reads of the API server until every job is Running
("operator GET/LIST, reconciles / informers": the differences, before the
first submission and then, of its ``rest_client_requests_total`` of method
GET, which covers gets, list pages and the start of a watch, and of its
``t9k_informer_requests_total``, the informers' own list pages and
watches; the reconciles' reads are the first less the second); the operator's
CPU seconds (``/proc/<pid>/stat``, from just before the submission to the
end) and its peak RSS (``VmHWM``) and RSS at ready; the API server's writes
during the run, by verb and resource (the difference of
``apiserver_request_total`` before and after; it has no user-agent label, so
writes are told apart by resource: the bench's are the jobs' creates and the
pod status patches of the stand-in kubelet).

The operator's reconciles read only their informers' caches, so their
GET/LIST is 0 unless something reads past them. The informers' is 0 unless a
watch ended: the API server closes watchers that do not take its events in
time (``apiserver_terminated_watchers_total``; on this 2-core machine, under
load, all of a resource's watchers at once); a run where it did says "the
API server closed N watchers" in its row, and each of the operator's
informers whose watch it closed watches again from its last resourceVersion:
one request each, in the informers' column.

Prints one table per size, then where the time and the CPU went, the
memory, every comparison of two scenarios of a size as ratios
(:func:`comparisons`), ``--py-spy``'s profile of the operator, and the
targets. Run:
``make bench`` (or ``.venv/bin/python -m hack.bench_job_start``); choose with
``--sizes 200x4,1x512`` and ``--scenarios ceiling,tuned``; ``--repeat 3``
runs each three times, interleaved, and takes the targets from the medians;
``--kueue`` and ``--gang volcano`` (above) run the operator's scenarios only
(by default those of the default plan), and ``--json FILE`` writes every
run's figures, ``operator_reads`` and ``informer_reads`` among them.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hack.procstat import machine_cpu, proc_cpu, proc_kib
from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.builders.scheduling import priority_class
from t9k_operator.informers import Indexer, transform_for
from t9k_operator.integrations.gang.build import BACKENDS, DEFAULT_SCHEDULER_NAMES
from t9k_operator.integrations.kueue import build as kueue_objects
from t9k_operator.integrations.kueue.integration import (
    POD_PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
)
from t9k_operator.kinds.contract import PodMode, read
from t9k_operator.kinds.pytorch import PyTorchKind
from t9k_operator.kube import AlreadyExists, ClientOptions, KubeClient
from t9k_operator.reconcilers.pipeline.children import CREATE_PARALLEL
from t9k_operator.resources import (
    CONFIGMAPS,
    EVENTS,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    Resource,
)

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "bench"
JOBS = Resource("batch.tensorstack.dev", "v1beta1", "pytorchtrainingjobs", "PyTorchTrainingJob")
# What the operator's informers store of a run: its jobs, then the children its label selects.
STORED = (JOBS, PODS, SERVICES, CONFIGMAPS, SECRETS)
SCHEDULER = "t9k-bench-unscheduled"
SCENARIOS = ("ceiling", "writes", "defaults", "tuned", "baseline")
OPERATOR_SCENARIOS = ("defaults", "tuned")  # this tree's operator: --kueue and --gang apply
TUNED = ("--kube-api-qps", "1000", "--kube-api-burst", "2000")
# Sizes and the scenarios each gets by default (1x512: one job of 512
# replicas). Behind a client limit 4,000 pods take minutes (7,000 writes at
# 50 QPS: 140 s; a08a3ab at 20 QPS: 400 s),
# so 1000x4 compares the operator with the ceiling and the floor only
# (``--sizes 1000x4 --scenarios baseline`` runs the rest); 10000x4 runs the
# operator at its defaults alone: its memory and CPU per job at scale.
DEFAULT_PLAN = {
    "200x4": SCENARIOS,
    "1x512": SCENARIOS,
    "1000x4": ("ceiling", "writes", "defaults", "tuned"),
    "10000x4": ("defaults",),
}
DEFAULT_TIMEOUT = 600.0
WAIT_PER_POD = 0.06
"""Seconds a wait may take per pod of the run when that is longer than
``--timeout``'s default (10000x4: 40 minutes)."""
RSS_LIMIT_MB = 450
"""The operator's peak RSS a 10000x4 run must stay under (MB, 10^6 bytes)."""
CPU_TARGET = 0.75
"""The operator's CPU per job at its defaults against the baseline's, at most."""
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "APPLY")
# The operator's wait for its own client-side limiter, on the reconcile budget's
# client (the Events and leader-election clients have their own user agents).
LIMITER_WAIT = "t9k_client_rate_limiter_wait_seconds_sum"
RETRIES = "t9k_client_retries_total"
RECONCILE_AGENT = "t9k-operator"
# Resources only the operator writes in a run (the bench writes the jobs
# themselves and, as the stand-in kubelet, pods/status).
BUDGET = {
    ("POST", "pods", ""),
    ("DELETE", "pods", ""),
    ("POST", "services", ""),
    ("PUT", "pytorchtrainingjobs", "status"),
    ("PATCH", "pytorchtrainingjobs", "status"),
    ("POST", "workloads", ""),  # --kueue
    ("POST", "podgroups", ""),  # --gang
}
# The operator's reads, from its own rest_client_requests_total: its client
# labels a request by its HTTP method, so gets, lists and the start of a watch
# are all GET; the others are there should a client ever label them apart.
READ_METHODS = ("GET", "LIST", "WATCH")
REQUESTS_METRIC = "rest_client_requests_total"

# --kueue: every job waits in this LocalQueue (of a ClusterQueue of its own,
# open to the bench's namespace only) at this priority, the
# WorkloadPriorityClass ``t9k-priority-50``; its one ResourceFlavor has node
# labels every KWOK node carries, so the admitted pods' node selector gets
# them and they stay placeable. Each replica asks for a little CPU: Kueue
# assigns a flavor to the resources a pod set requests, and to none when it
# requests nothing.
LOCAL_QUEUE = "bench"
CLUSTER_QUEUE = "t9k-bench"
FLAVOR = "t9k-bench"
FLAVOR_LABELS = {"type": "kwok"}
PRIORITY = 50
CPU_MILLIS = 100  # per replica, with --kueue
KUEUE_API = f"{kueue_objects.GROUP}/{kueue_objects.VERSION}"
CLUSTER_QUEUES = Resource(
    kueue_objects.GROUP, kueue_objects.VERSION, "clusterqueues", "ClusterQueue", namespaced=False
)
LOCAL_QUEUES = Resource(kueue_objects.GROUP, kueue_objects.VERSION, "localqueues", "LocalQueue")
# --gang: a gang scheduler binds the pods, so they must fit on the nodes; the
# local cluster's four hold 110 pods each (its NODE_CAPACITY), and the bench
# adds more of the same shape for a quarter more pods than the run has.
PODS_PER_NODE = 110
NODE_HEADROOM = 1.25


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Integrations:
    """What this tree's operator runs with besides a scenario's own flags:
    ``--kueue`` and ``--gang BACKEND`` (one of the operator's gang schedulers)."""

    kueue: bool = False
    gang: str | None = None

    @property
    def on(self) -> bool:
        return self.kueue or self.gang is not None

    def cluster_flags(self) -> tuple[str, ...]:
        """``hack.cluster up``'s flags that start what the operator needs."""
        gang = ("--gang", self.gang) if self.gang else ()
        return (*gang, *(("--kueue",) if self.kueue else ()))

    def operator_flags(self) -> tuple[str, ...]:
        gang = (f"--gang-scheduler={self.gang}",) if self.gang else ()
        return (*(("--kueue",) if self.kueue else ()), *gang)

    def scheduler(self) -> str:
        """The schedulerName the operator's pods end up with."""
        return DEFAULT_SCHEDULER_NAMES[self.gang] if self.gang else SCHEDULER

    def __str__(self) -> str:
        return " ".join(self.operator_flags()) or "none"


def job_body(name: str, replicas: int, using: Integrations | None = None) -> dict[str, Any]:
    """A job of ``replicas`` workers; with ``--kueue`` it names the LocalQueue
    (Kueue's label and its ``t9kScheduler.queue``), the priority
    :data:`PRIORITY` and asks :data:`CPU_MILLIS` of CPU a replica."""
    container: dict[str, Any] = {
        "name": "pytorch",
        "image": "pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel",
        "command": ["python", "dist_mnist.py"],
    }
    job: dict[str, Any] = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": replicas,
                    "restartPolicy": "OnFailure",
                    "template": {
                        "metadata": {"annotations": {"kwok.t9k.dev/manual": "true"}},
                        "spec": {"schedulerName": SCHEDULER, "containers": [container]},
                    },
                }
            ]
        },
    }
    if using is not None and using.kueue:
        job["metadata"]["labels"] = {kueue_objects.QUEUE_LABEL: LOCAL_QUEUE}
        job["spec"]["scheduler"] = {"t9kScheduler": {"queue": LOCAL_QUEUE, "priority": PRIORITY}}
        container["resources"] = {"requests": {"cpu": f"{CPU_MILLIS}m"}}
    return job


def scenario_plan(
    sizes: list[str], chosen: list[str] | None, using: Integrations
) -> dict[str, tuple[str, ...]]:
    """Each size's scenarios: ``chosen`` for every size, else its default
    (:data:`DEFAULT_PLAN`). With ``--kueue`` or ``--gang`` only the operator's
    scenarios: the default plan keeps those, and ``chosen`` may name no other
    (ValueError, saying which)."""
    for s in chosen or ():
        if s not in SCENARIOS:
            raise ValueError(f"unknown scenario {s!r}")
    if chosen is not None and using.on:
        others = [s for s in chosen if s not in OPERATOR_SCENARIOS]
        if others:
            raise ValueError(
                f"{using} runs only with this tree's operator (scenarios "
                f"{', '.join(OPERATOR_SCENARIOS)}), not {', '.join(others)}"
            )
    out = {}
    for size in sizes:
        plan = tuple(chosen) if chosen is not None else DEFAULT_PLAN.get(size, SCENARIOS)
        out[size] = tuple(s for s in plan if s in OPERATOR_SCENARIOS) if using.on else plan
    return out


def samples(metrics: str, name: str) -> Iterator[tuple[dict[str, str], float]]:
    """Each sample of the labelled metric ``name`` in a /metrics text: its
    labels and its value."""
    for line in metrics.splitlines():
        if line.startswith(name + "{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line.partition("}")[0]))
            yield labels, float(line.rpartition(" ")[2])


def count_requests(metrics: str, methods: tuple[str, ...] = READ_METHODS) -> int | None:
    """The requests of ``methods`` in a process's ``rest_client_requests_total``
    (every code and host), from its /metrics text; None when it has none."""
    found = list(samples(metrics, REQUESTS_METRIC))
    if not found:
        return None
    return int(sum(v for labels, v in found if labels.get("method", "").upper() in methods))


INFORMER_METRIC = "t9k_informer_requests_total"


def informer_requests(metrics: str) -> int | None:
    """The informers' own requests (list pages and watches, every resource)
    in a process's ``t9k_informer_requests_total``; None when it has none."""
    found = [v for _, v in samples(metrics, INFORMER_METRIC)]
    return int(sum(found)) if found else None


def closed_watchers(metrics: str) -> Counter[str]:
    """The watchers the API server closed because they did not take its events
    in time (``apiserver_terminated_watchers_total``), by resource, from its
    /metrics text. A client then watches again: an informer's re-watch is a
    GET in its ``rest_client_requests_total``."""
    out: Counter[str] = Counter()
    for labels, value in samples(metrics, "apiserver_terminated_watchers_total"):
        out[labels.get("resource", "")] += int(value)
    return out


def nodes_to_add(pods: int, present: int) -> int:
    """KWOK nodes to add so that ``pods`` fit with :data:`NODE_HEADROOM` to spare."""
    return max(0, math.ceil(pods * NODE_HEADROOM / PODS_PER_NODE) - present)


def ceiling_pods(jobs: int, replicas: int) -> list[dict[str, Any]]:
    """The pods the operator would create, built by its own builder, without
    owner references (the garbage collector would delete them)."""
    kind = PyTorchKind()
    out = []
    for j in range(jobs):
        stored = job_body(f"job-{j}", replicas)
        stored["metadata"].update(uid=f"00000000-0000-0000-0000-{j:012d}", generation=1)
        parsed = read(kind, stored)
        assert parsed.job is not None, parsed.view.spec_error
        for i in range(replicas):
            pod = kind.build_pod(parsed.job, "worker", i, PodMode(), {})
            pod["metadata"].pop("ownerReferences", None)
            out.append(pod)
    return out


class Follower:
    """Follows a resource in the bench's namespace as an informer does: lists,
    hands every object to ``handle`` (as an ``ADDED``), watches from the
    list's resourceVersion, and lists and watches again whenever the watch
    ends or breaks (the API server closes a watch that falls behind), so no
    object is missed. ``handle`` must be idempotent. ``restarts`` counts the
    watches that ended before ``stop``."""

    def __init__(self, client: KubeClient, resource: Resource, handle: Any) -> None:
        self.client, self.resource, self.handle = client, resource, handle
        self.restarts = 0
        self.ready = threading.Event()
        self._stopped = False
        self._stream: Any = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stopped:
            try:
                listed = self._list()
                for obj in listed["items"]:
                    self.handle("ADDED", obj)
                rv = listed["metadata"]["resourceVersion"]
                self._stream = self.client.watch(
                    self.resource, NAMESPACE, resource_version=rv, timeout_seconds=3600
                )
                self.ready.set()
                for event in self._stream:
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.handle(event["type"], event["object"])
            except Exception as exc:
                if self._stopped:
                    return
                log(f"{self.resource.plural} watch: {exc}; listing again")
            if not self._stopped:
                self.restarts += 1
                time.sleep(0.2)

    def _list(self) -> Any:
        """A list, retried while the API server's storage for a new CRD initializes."""
        deadline = time.monotonic() + 60
        while True:
            try:
                return self.client.request("GET", self.resource.path(NAMESPACE))
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        self._stopped = True
        if self._stream is not None:
            self._stream.close()


def writer_main(kubeconfig: str, replicas: int, concurrency: int) -> int:
    """The ``writes`` scenario's stand-in controller (its own process, started
    by ``--writer``): prints ``ready`` once its watches are open, then makes
    each job's writes as its watch sees the job, until stdin closes."""
    from datetime import UTC, datetime

    from t9k_operator.reconcilers import engine

    client = KubeClient.from_config(
        kubeconfig,
        options=ClientOptions(qps=1e6, burst=1_000_000, pool_size=64, user_agent="t9k-writer"),
    )
    kind = PyTorchKind()
    pool = ThreadPoolExecutor(concurrency, thread_name_prefix="writer")
    # A job's pods all at once through one pool of its own, as the operator's
    # creates share one (no slow start: the ceiling makes no failing requests).
    pod_pool = ThreadPoolExecutor(concurrency, thread_name_prefix="writer-pods")
    lock = threading.Lock()
    stored: dict[str, dict[str, Any]] = {}  # job name -> the job as its first status left it
    running: dict[str, set[str]] = {}  # job name -> its pods seen Running
    done: set[str] = set()

    def start(job: dict[str, Any]) -> None:
        parsed = read(kind, job)
        assert parsed.job is not None, parsed.view.spec_error
        plan = engine.plan(kind, parsed.view, {}, datetime.now(UTC))
        first = client.replace_status(JOBS, {**job, "status": kind.render_status(job, plan.status)})
        with lock:
            stored[job["metadata"]["name"]] = first
        for extra in kind.extras(parsed.job):
            client.create(SERVICES, extra, NAMESPACE)
        pods = [kind.build_pod(parsed.job, "worker", i, PodMode(), {}) for i in range(replicas)]
        list(
            pod_pool.map(
                lambda pod: client.create(PODS, pod, NAMESPACE, field_validation="Strict"), pods
            )
        )
        client.create(EVENTS, bench_event(job), NAMESPACE)
        finish(job["metadata"]["name"])

    def finish(name: str) -> None:
        with lock:
            job = stored.get(name)
            if job is None or len(running.get(name, ())) < replicas or name in done:
                return
            done.add(name)
        status = {**job["status"], "phase": "Running"}
        client.replace_status(JOBS, {**job, "status": status})

    def logged(fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:
            print(f"writer: {exc}", file=sys.stderr, flush=True)

    started: set[str] = set()

    def on_job(kind_: str, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        with lock:
            if kind_ == "DELETED" or name in started:
                return
            started.add(name)
        pool.submit(logged, start, job)

    def on_pod(kind_: str, pod: dict[str, Any]) -> None:
        if kind_ == "DELETED" or (pod.get("status") or {}).get("phase") != "Running":
            return
        owner = (pod["metadata"].get("ownerReferences") or [{}])[0].get("name")
        if owner:
            with lock:
                running.setdefault(owner, set()).add(pod["metadata"]["name"])
            pool.submit(logged, finish, owner)

    followers = [Follower(client, JOBS, on_job), Follower(client, PODS, on_pod)]
    for f in followers:
        if not f.ready.wait(60):
            raise RuntimeError("the writer's watches did not open")
    print("ready", flush=True)
    sys.stdin.read()
    for f in followers:
        f.stop()
    print(f"watch restarts: {sum(f.restarts for f in followers)}", file=sys.stderr, flush=True)
    pool.shutdown(wait=False, cancel_futures=True)
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
    """The ``writes`` scenario's stand-in controller, as a process."""

    def __init__(self, kubeconfig: Path, replicas: int, concurrency: int, log_path: Path) -> None:
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hack.bench_job_start",
                "--writer",
                str(kubeconfig),
                str(replicas),
                str(concurrency),
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, name: str) -> None:
        self.name = name
        self.kubeconfig = Path()
        self.bin_dir = Path()
        self.pids: dict[str, int] = {}

    def cluster(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "hack.cluster", *args, "--name", self.name],
            cwd=ROOT,
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        ).stdout

    def up(self, *flags: str) -> None:
        """A fresh cluster, with ``hack.cluster up``'s ``flags`` (gang
        schedulers, Kueue)."""
        self.cluster("down")
        self.kubeconfig = Path(self.cluster("up", *flags).strip().splitlines()[-1])
        state = json.loads((self.kubeconfig.parent / "cluster.json").read_text())
        self.bin_dir = Path(state["bin_dir"])
        self.pids = {k: int(v) for k, v in state["pids"].items()}

    def down(self) -> None:
        self.cluster("down")

    def kubectl(self, *args: str) -> str:
        return subprocess.run(
            [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def profile(self, seconds: int, out: Path) -> threading.Thread:
        """The API server's CPU profile over the next ``seconds`` (Go pprof, its
        /debug/pprof handler), written to ``out`` by a thread."""

        def take() -> None:
            got = subprocess.run(
                [
                    str(self.bin_dir / "kubectl"),
                    "--kubeconfig",
                    str(self.kubeconfig),
                    "get",
                    "--raw",
                    f"/debug/pprof/profile?seconds={seconds}",
                ],
                capture_output=True,
                check=False,
            )
            out.write_bytes(got.stdout)

        thread = threading.Thread(target=take, daemon=True)
        thread.start()
        return thread

    def metrics(self) -> str:
        """The API server's /metrics."""
        return self.kubectl("get", "--raw", "/metrics")

    def writes(
        self, metrics: str | None = None
    ) -> tuple[Counter[tuple[str, str, str]], dict[tuple[str, str, str], float]]:
        """apiserver_request_total of the write verbs, by (verb, resource,
        subresource); and the server's seconds spent on them (the sum of
        apiserver_request_duration_seconds), by the same key; from
        ``metrics`` (the server's /metrics text) or a scrape now."""
        out: Counter[tuple[str, str, str]] = Counter()
        seconds: dict[tuple[str, str, str], float] = {}
        text = self.metrics() if metrics is None else metrics

        def written(name: str) -> Iterator[tuple[tuple[str, str, str], float]]:
            for labels, value in samples(text, name):
                if labels.get("verb") in WRITE_VERBS:
                    key = (
                        labels["verb"],
                        labels.get("resource", ""),
                        labels.get("subresource", ""),
                    )
                    yield key, value

        for key, value in written("apiserver_request_total"):
            out[key] += int(value)
        for key, value in written("apiserver_request_duration_seconds_sum"):
            seconds[key] = seconds.get(key, 0.0) + value
        return out, seconds


def wait_until(what: str, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def manifest_object(path: Path, name: str) -> dict[str, Any]:
    """The object ``name`` of the multi-document manifest ``path``."""
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc["metadata"]["name"] == name:
            return dict(doc)
    raise LookupError(f"no {name} in {path}")


def active(obj: dict[str, Any]) -> bool:
    """Whether a Kueue queue's condition ``Active`` is True."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions)


def kueue_queues(pods: int) -> list[tuple[Resource, dict[str, Any]]]:
    """The ResourceFlavor (with node labels), the ClusterQueue (open to the
    bench's namespace, with CPU quota for all ``pods`` at once) and the
    LocalQueue the bench's jobs wait in, in the order to create them."""

    def obj(kind: str, name: str, **fields: Any) -> dict[str, Any]:
        return {"apiVersion": KUEUE_API, "kind": kind, "metadata": {"name": name}, **fields}

    namespaces = {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}}
    quota = [{"name": "cpu", "nominalQuota": f"{pods * CPU_MILLIS}m"}]
    return [
        (RESOURCE_FLAVORS, obj("ResourceFlavor", FLAVOR, spec={"nodeLabels": FLAVOR_LABELS})),
        (
            CLUSTER_QUEUES,
            obj(
                "ClusterQueue",
                CLUSTER_QUEUE,
                spec={
                    "namespaceSelector": namespaces,
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": FLAVOR, "resources": quota}],
                        }
                    ],
                },
            ),
        ),
        (LOCAL_QUEUES, obj("LocalQueue", LOCAL_QUEUE, spec={"clusterQueue": CLUSTER_QUEUE})),
    ]


def prepare(client: KubeClient, using: Integrations, pods: int, timeout: float = 60) -> None:
    """What the integrations need, made before the operator starts (so its
    informers list it at start): with ``--kueue`` the WorkloadPriorityClass of
    :data:`PRIORITY` (from manifests/kueue; with ``--gang`` too, the
    PriorityClass of that name from manifests/scheduling, which the pods then
    name) and the queues, Active; with ``--gang`` the nodes for ``pods``."""
    if using.kueue:
        name = priority_class(PRIORITY)
        wpcs = ROOT / "manifests" / "kueue" / "workload-priority-classes.yaml"
        client.create(WORKLOAD_PRIORITY_CLASSES, manifest_object(wpcs, name))
        if using.gang:
            pcs = ROOT / "manifests" / "scheduling" / "priority-classes.yaml"
            client.create(POD_PRIORITY_CLASSES, manifest_object(pcs, name))
        for resource, body in kueue_queues(pods):
            client.create(resource, body, NAMESPACE if resource.namespaced else None)
        wait_until(
            "the ClusterQueue Active",
            lambda: active(client.get(CLUSTER_QUEUES, CLUSTER_QUEUE)),
            timeout,
        )
        wait_until(
            "the LocalQueue Active",
            lambda: active(client.get(LOCAL_QUEUES, LOCAL_QUEUE, NAMESPACE)),
            timeout,
        )
    if using.gang:
        add_nodes(client, pods, timeout)


def add_nodes(client: KubeClient, pods: int, timeout: float) -> None:
    """KWOK nodes like the cluster's first (its labels, annotations and
    capacity), as many as :func:`nodes_to_add` says, Ready."""
    nodes = client.list(NODES)["items"]
    first = next(n for n in nodes if n["metadata"]["name"] == "kwok-node-0")
    capacity = int(first["status"]["capacity"]["pods"])
    if capacity != PODS_PER_NODE:
        raise RuntimeError(
            f"kwok-node-0 holds {capacity} pods, the bench counts on {PODS_PER_NODE}"
        )
    names = [f"kwok-bench-node-{i}" for i in range(nodes_to_add(pods, len(nodes)))]
    for name in names:
        meta = first["metadata"]
        client.create(
            NODES,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": dict(meta.get("annotations") or {}),
                    "labels": {**meta["labels"], "kubernetes.io/hostname": name},
                },
                "status": {
                    "capacity": first["status"]["capacity"],
                    "allocatable": first["status"]["allocatable"],
                },
            },
        )

    def ready() -> bool:
        by_name = {n["metadata"]["name"]: n for n in client.list(NODES)["items"]}
        return all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (by_name[n].get("status") or {}).get("conditions") or []
            )
            for n in names
        )

    if names:
        log(f"added {len(names)} KWOK nodes for {pods} pods")
        wait_until(f"{len(names)} KWOK nodes Ready", ready, timeout)


class StandIn:
    """A stand-in kubelet: follows the bench's pods, marks each Running at once
    with one status patch, and notes when it first saw each pod and job.

    With ``bound_only`` (a gang scheduler places the pods) it marks a pod only
    once a scheduler has bound it to a node, as a kubelet would. Pods whose
    ``schedulerName`` is not ``scheduler``, or whose node selector lacks
    ``node_labels`` (a Kueue flavor's), are counted in ``misplaced``."""

    def __init__(
        self,
        client: KubeClient,
        expect_pods: int,
        expect_jobs: int,
        *,
        bound_only: bool = False,
        scheduler: str = SCHEDULER,
        node_labels: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.expect_pods, self.expect_jobs = expect_pods, expect_jobs
        self.bound_only, self.scheduler = bound_only, scheduler
        self.node_labels = node_labels or {}
        self.misplaced = 0
        self._marking: set[str] = set()  # pods handed to the pool to mark Running
        self.pod_seen: dict[str, float] = {}
        self.job_running: dict[str, float] = {}
        self.pods_done = threading.Event()
        self.jobs_done = threading.Event()
        self.all_marked = threading.Event()
        self._marked = 0
        self.errors = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="kubelet")
        self._followers: list[Follower] = []

    @property
    def restarts(self) -> int:
        """Watches that ended and were listed again during the run."""
        return sum(f.restarts for f in self._followers)

    def start(self) -> None:
        self._followers = [
            Follower(self.client, PODS, self._on_pod),
            Follower(self.client, JOBS, self._on_job),
        ]
        for f in self._followers:
            if not f.ready.wait(60):
                raise RuntimeError("the bench's watches did not open")

    def stop(self) -> None:
        for f in self._followers:
            f.stop()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self, pod: dict[str, Any]) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        containers = pod["spec"]["containers"]
        status = {
            "phase": "Running",
            "startTime": now,
            "podIP": "10.244.0.99",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": now}
                for t in ("Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c["image"],
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                }
                for c in containers
            ],
        }
        meta = pod["metadata"]
        self.client.patch(PODS, meta["name"], {"status": status}, NAMESPACE, subresource="status")
        with self._lock:
            self._marked += 1
            if self._marked >= self.expect_pods:
                self.all_marked.set()

    def _run_logged(self, pod: dict[str, Any]) -> None:
        try:
            self._run(pod)
        except Exception as exc:
            self.errors += 1
            if self.errors == 1:
                log(f"stand-in kubelet: {pod['metadata']['name']}: {exc}")

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            return
        if name not in self.pod_seen:
            self.pod_seen[name] = time.monotonic()
            spec = pod["spec"]
            selector = spec.get("nodeSelector") or {}
            if spec.get("schedulerName") != self.scheduler or any(
                selector.get(k) != v for k, v in self.node_labels.items()
            ):
                self.misplaced += 1
            if len(self.pod_seen) >= self.expect_pods:
                self.pods_done.set()
        if name in self._marking or (pod.get("status") or {}).get("phase") == "Running":
            return
        if self.bound_only and not pod["spec"].get("nodeName"):
            return  # not placed yet: its scheduler's binding comes as a MODIFIED
        self._marking.add(name)
        with contextlib.suppress(RuntimeError):  # stopping
            self._pool.submit(self._run_logged, pod)

    def _on_job(self, kind: str, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        phase = (job.get("status") or {}).get("phase")
        if kind != "DELETED" and phase == "Running" and name not in self.job_running:
            self.job_running[name] = time.monotonic()
            if len(self.job_running) >= self.expect_jobs:
                self.jobs_done.set()


class CpuMeter:
    """CPU seconds by process over a run, and the machine's: who spends the
    machine's cores while jobs start (the cluster's processes from its
    cluster.json, the operator, this bench with its stand-in kubelet)."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.marks: dict[str, dict[str, float]] = {}

    def _now(self) -> dict[str, float]:
        out = {}
        for name, pid in self.pids.items():
            with contextlib.suppress(OSError):
                out[name] = proc_cpu(pid)
        out["machine"], out["machine_all"] = machine_cpu()
        out["wall"] = time.monotonic()
        return out

    def mark(self, label: str) -> None:
        self.marks[label] = self._now()

    def spent(self, since: str, until: str) -> dict[str, float]:
        a, b = self.marks.get(since), self.marks.get(until)
        if a is None or b is None:
            return {}
        return {k: b[k] - a[k] for k in b if k in a}


PROFILE_TOP = 15  # entries of --py-spy's tables, by self and by cumulative share


class PySpy:
    """``--py-spy PROGRAM``: py-spy sampling the operator from the first
    submission to the end of the run, the collapsed stacks written to
    ``out``: ``record --gil`` (only the thread holding the GIL, so the samples
    are the operator's Python work, not threads blocked reading a socket)
    ``--nonblocking`` (the process is not paused: py-spy's CPU is its own)."""

    def __init__(self, program: str, pid: int, out: Path, rate: int = 1000) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [
                *(program, "record", "--gil", "--nonblocking", "--format", "raw"),
                *("--rate", str(rate), "--pid", str(pid), "--output", str(out)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)  # attached

    def stop(self) -> tuple[dict[str, list[tuple[str, float, float]]], int]:
        """The run's :func:`profile_top` and its number of samples."""
        self.proc.send_signal(signal.SIGINT)  # py-spy writes its file and exits
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return {}, 0
        return profile_top(self.out) if self.out.exists() else ({}, 0)


def profile_top(
    path: Path, n: int = PROFILE_TOP
) -> tuple[dict[str, list[tuple[str, float, float]]], int]:
    """The functions of py-spy's collapsed stacks (``frame;frame;... count``)
    with the largest self and cumulative shares of the samples: a function is
    ``name (file)``, its lines merged; cumulative counts a stack once however
    often the function recurs in it."""
    own: Counter[str] = Counter()
    cumulative: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        # py-spy's first frame names the thread ("process ..." / "thread ..."): not code.
        frames = [f for f in frames if "(" in f and not f.startswith(("thread ", "process "))]
        if not frames:
            continue
        total += int(count)
        own[frames[-1]] += int(count)
        for f in set(frames):
            cumulative[f] += int(count)
    if not total:
        return {}, 0
    shares = {f: (own[f] / total, cumulative[f] / total) for f in cumulative}
    by_self = sorted(shares, key=lambda f: (-shares[f][0], f))[:n]
    by_cumulative = sorted(shares, key=lambda f: (-shares[f][1], f))[:n]
    return {
        "self": [(f, *shares[f]) for f in by_self],
        "cumulative": [(f, *shares[f]) for f in by_cumulative],
    }, total


class Operator:
    def __init__(self, source: Path, kubeconfig: Path, log_path: Path, *flags: str) -> None:
        self.health = free_port()
        self.metrics = free_port()
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["PYTHONPATH"] = str(source)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "t9k_operator",
                "--kubeconfig",
                str(kubeconfig),
                "--metrics-bind-address",
                f"127.0.0.1:{self.metrics}",
                "--health-probe-bind-address",
                f"127.0.0.1:{self.health}",
                *flags,
            ],
            cwd=source,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"operator exited with {self.proc.returncode}")
            with contextlib.suppress(OSError):
                url = f"http://127.0.0.1:{self.health}/readyz"
                with urllib.request.urlopen(url, timeout=1) as resp:
                    if resp.status == 200:
                        return
            time.sleep(0.2)
        raise RuntimeError("operator not ready in time")

    def sums(self) -> dict[str, float]:
        """The job controller's reconciles and their time, its queue wait, and
        the seconds the reconcile client's requests waited for its own rate
        limiter (``limiter_wait_s``: absent from code that does not export it)."""
        wanted = {
            "controller_runtime_reconcile_total": "reconciles",
            "controller_runtime_reconcile_time_seconds_sum": "reconcile_s",
            "workqueue_queue_duration_seconds_sum": "queue_wait_s",
            "workqueue_queue_duration_seconds_count": "queue_gets",
        }
        retried = 0.0  # requests the API server refused with 429, sent again
        out = dict.fromkeys(wanted.values(), 0.0)
        url = f"http://127.0.0.1:{self.metrics}/metrics"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as resp:
            for line in resp.read().decode().splitlines():
                name = line.partition("{")[0]
                if name in wanted and "pytorchtrainingjob" in line:
                    out[wanted[name]] += float(line.rpartition(" ")[2])
                elif name == LIMITER_WAIT and f'client="{RECONCILE_AGENT}"' in line:
                    value = float(line.rpartition(" ")[2])
                    out["limiter_wait_s"] = out.get("limiter_wait_s", 0.0) + value
                elif name == RETRIES and 'reason="TooManyRequests"' in line:
                    retried += float(line.rpartition(" ")[2])
        return {**out, "retries_429": retried}

    def error_lines(self) -> int:
        """Lines its log wrote at level error."""
        self._log.flush()
        text = self.log_path.read_text(errors="replace")
        return sum('"level": "error"' in line for line in text.splitlines())

    def reads(self) -> tuple[int, int] | None:
        """Its GETs of the API server so far (:func:`count_requests` of its
        /metrics) and how many of them its informers sent
        (:func:`informer_requests`); None when it does not answer or counts
        neither."""
        url = f"http://127.0.0.1:{self.metrics}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            return None
        gets, informers = count_requests(text), informer_requests(text)
        return None if gets is None or informers is None else (gets, informers)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


@dataclass
class Run:
    size: str
    scenario: str
    pods_s: float | None = None
    running_s: float | None = None
    cpu_s: float | None = None
    rss_ready_mib: float | None = None
    rss_peak_mib: float | None = None
    writes: dict[str, int] = field(default_factory=dict)
    budget_writes: int = 0
    events: int = 0
    jobs: int = 0
    pods: int = 0
    note: str = ""
    pod_create_ms: float | None = None  # the API server's mean time on a pod create
    server_s: dict[str, float] = field(default_factory=dict)  # its seconds per kind of write
    cache_mib: float | None = None  # what the operator's informer stores hold at the end
    cache_rss_mib: float | None = None  # the same, as resident memory in a fresh process
    rss_end_mib: float | None = None
    operator: dict[str, float] = field(default_factory=dict)
    # CPU seconds by process (and the machine's busy and all, and the wall
    # time) from the first submission until every pod exists, and until the end.
    cpu_to_pods: dict[str, float] = field(default_factory=dict)
    cpu_to_end: dict[str, float] = field(default_factory=dict)
    rep: int = 0  # which of --repeat runs (0: the only one)
    # The operator's GETs (gets, lists, watches) from just before the first
    # submission until every job was Running (None: no operator, or it does
    # not count its requests).
    operator_reads: int | None = None  # the reconciles' (GETs less the informers')
    informer_reads: int | None = None  # the informers' list pages and watches
    integrations: str = "none"  # the operator's --kueue / --gang-scheduler flags
    # Watchers the API server closed over the same span, by resource (everyone's).
    closed_watchers: dict[str, int] = field(default_factory=dict)
    # --py-spy: the operator's samples over the same span, as (function,
    # self share, cumulative share), the largest first by each.
    profile: dict[str, list[tuple[str, float, float]]] = field(default_factory=dict)
    profile_samples: int = 0

    @property
    def label(self) -> str:
        return f"{self.scenario} #{self.rep}" if self.rep else self.scenario


def run_one(
    cluster: Cluster,
    size: str,
    scenario: str,
    sources: dict[str, Path],
    concurrency: int,
    timeout: float | None,
    logs: Path,
    extra_flags: tuple[str, ...] = (),
    pprof: int = 0,
    rep: int = 0,
    using: Integrations | None = None,
    py_spy: str | None = None,
    server_flags: tuple[str, ...] = (),
) -> Run:
    using = using or Integrations()
    jobs, replicas = (int(x) for x in size.split("x"))
    if timeout is None:
        timeout = max(DEFAULT_TIMEOUT, WAIT_PER_POD * jobs * replicas)
    run = Run(size, scenario, jobs=jobs, pods=jobs * replicas, rep=rep, integrations=str(using))
    tag = f"{size}-{scenario}" + (f"-{rep}" if rep else "")
    try:
        cluster.up(*using.cluster_flags(), *(f"--apiserver-flag={f}" for f in server_flags))
    except BaseException:
        with contextlib.suppress(Exception):  # an add-on that did not start
            cluster.down()
        raise
    operator: Operator | None = None
    writer: Writer | None = None
    client = KubeClient.from_config(
        str(cluster.kubeconfig),
        options=ClientOptions(qps=1e6, burst=1_000_000, pool_size=64, user_agent="t9k-bench"),
    )
    standin = StandIn(
        client,
        jobs * replicas,
        jobs,
        bound_only=using.gang is not None,
        scheduler=using.scheduler(),
        node_labels=FLAVOR_LABELS if using.kueue else None,
    )
    try:
        source = sources["baseline" if scenario == "baseline" else "tree"]
        cluster.kubectl(
            "apply", "--server-side", "--force-conflicts", "-f", str(source / "manifests" / "crds")
        )
        cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        with contextlib.suppress(AlreadyExists):
            client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        pods = ceiling_pods(jobs, replicas) if scenario == "ceiling" else []
        bodies = [job_body(f"job-{j}", replicas, using) for j in range(jobs)]
        prepare(client, using, jobs * replicas)
        if scenario == "writes":
            writer = Writer(cluster.kubeconfig, replicas, concurrency, logs / f"{tag}.log")
        elif scenario != "ceiling":
            flags = (*(TUNED if scenario == "tuned" else ()), *using.operator_flags(), *extra_flags)
            operator = Operator(source, cluster.kubeconfig, logs / f"{tag}.log", *flags)
            operator.wait_ready()
            run.rss_ready_mib = proc_kib(operator.proc.pid, "VmRSS") / 1024
        standin.start()
        time.sleep(1.0)  # the watches are open
        server0 = cluster.metrics()
        before, lat0 = cluster.writes(server0)
        # The controller: the operator, or the writes scenario's stand-in for it.
        ctl = operator.proc if operator else writer.proc if writer else None
        cpu0 = proc_cpu(ctl.pid) if ctl else 0.0
        meter = CpuMeter(
            {**cluster.pids, "bench": os.getpid()} | ({"operator": ctl.pid} if ctl else {})
        )
        meter.mark("start")
        profiling = cluster.profile(pprof, logs / f"{tag}.apiserver.pprof") if pprof else None
        reads0 = operator.reads() if operator else None
        spy = (
            PySpy(py_spy, operator.proc.pid, logs / f"{tag}.py-spy")
            if py_spy and operator
            else None
        )
        t0 = time.monotonic()
        with ThreadPoolExecutor(concurrency) as pool:
            if scenario == "ceiling":
                list(pool.map(lambda p: client.create(PODS, p, NAMESPACE), pods))
            else:
                list(pool.map(lambda body: client.create(JOBS, body, NAMESPACE), bodies))
        if standin.pods_done.wait(timeout):
            meter.mark("pods")
            run.pods_s = max(standin.pod_seen.values()) - t0
        if scenario != "ceiling" and standin.jobs_done.wait(timeout):
            run.running_s = max(standin.job_running.values()) - t0
        if operator is not None:
            reads1 = operator.reads()
            if reads0 is not None and reads1 is not None:
                run.informer_reads = reads1[1] - reads0[1]
                run.operator_reads = reads1[0] - reads0[0] - run.informer_reads
            log(
                f"operator GET/LIST (all, informers'): {reads0} before the first "
                f"submission, {reads1} after"
            )
        if scenario == "ceiling":
            # Every pod marked Running: the stand-in's share of the server's work is done.
            standin.all_marked.wait(timeout)
        meter.mark("end")
        if spy is not None:
            run.profile, run.profile_samples = spy.stop()
        closed = closed_watchers(cluster.metrics())  # kubectl: after the CPU meter's end
        closed.subtract(closed_watchers(server0))
        run.closed_watchers = {k: v for k, v in sorted(closed.items()) if v > 0}
        if profiling is not None:
            profiling.join(pprof + 30)
        run.cpu_to_pods = meter.spent("start", "pods")
        run.cpu_to_end = meter.spent("start", "end")
        time.sleep(2.0)  # late writes (a last status, Events) land in the counts
        if ctl is not None:
            run.cpu_s = proc_cpu(ctl.pid) - cpu0
        if operator is not None:
            run.rss_peak_mib = proc_kib(operator.proc.pid, "VmHWM") / 1024
            run.rss_end_mib = proc_kib(operator.proc.pid, "VmRSS") / 1024
            traced, resident = cache_bytes(client)
            run.cache_mib, run.cache_rss_mib = traced / 2**20, resident / 2**20
        after, lat1 = cluster.writes()
        run.server_s = {
            " ".join(x for x in k if x): v - lat0.get(k, 0.0)
            for k, v in sorted(lat1.items())
            if v - lat0.get(k, 0.0) > 0
        }
        pod_key = ("POST", "pods", "")
        creates = after[pod_key] - before.get(pod_key, 0)
        if creates:
            run.pod_create_ms = 1000 * (lat1.get(pod_key, 0.0) - lat0.get(pod_key, 0.0)) / creates
        if operator is not None:
            run.operator = operator.sums()
            refused = run.operator.get("retries_429", 0.0)
            if refused or server_flags:
                errors = operator.error_lines()
                run.note = f"{run.note}; " * bool(run.note) + (
                    f"{refused:.0f} requests refused with 429 and sent again, "
                    f"{errors} error lines in the operator's log"
                )
        diff = {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}
        run.writes = {" ".join(x for x in k if x): v for k, v in sorted(diff.items())}
        run.budget_writes = sum(v for k, v in diff.items() if k in BUDGET)
        run.events = sum(v for k, v in diff.items() if k[1] == "events")
        if run.pods_s is None or (scenario != "ceiling" and run.running_s is None):
            run.note = (
                f"timed out: {len(standin.pod_seen)} pods, {len(standin.job_running)} jobs Running"
            )
        if standin.misplaced:
            where = f"schedulerName {using.scheduler()}" + (
                f", node selector {FLAVOR_LABELS}" if using.kueue else ""
            )
            run.note = (
                f"{run.note}; " * bool(run.note) + f"{standin.misplaced} pods without {where}"
            )
        if run.closed_watchers:
            # Everyone's watches of that resource, the operator's among them: its
            # informers watch again, a GET each (in the informers' column).
            by = ", ".join(f"{k} {v}" for k, v in run.closed_watchers.items())
            what = f"the API server closed {sum(run.closed_watchers.values())} watchers ({by})"
            run.note = f"{run.note}; " * bool(run.note) + what
        if standin.restarts:
            # A watch the API server closed: the objects listed again were seen late.
            run.note = f"{run.note}; " * bool(run.note) + f"{standin.restarts} watch restarts"
    finally:
        standin.stop()
        if operator is not None:
            operator.stop()
        if writer is not None:
            writer.stop()
        client.close()
        cluster.down()
    return run


def build_stores(raw: list[list[str]]) -> list[Indexer]:
    """An informer store per list of JSON texts (of STORED's resources, in
    order), each text decoded on its own (as a watch event is) and passed
    through the transform the operator's informers of its resource use."""
    stores = []
    for resource, texts in zip(STORED, raw, strict=True):
        transform = transform_for(resource)
        store = Indexer()
        for text in texts:
            store.add(transform(json.loads(text)))
        stores.append(store)
    return stores


def cache_bytes(client: KubeClient) -> tuple[int, int]:
    """The memory the operator's informer stores retain for what it caches now:
    the same objects (its jobs, and the children its label selects), listed
    from the server, each decoded on its own (as a watch event is) and passed
    through the informers' default transform into the same store type.
    Measured twice, not estimated from a per-pod figure (the bench's pods are
    not the pods of ``make bench-memory``): the bytes Python asked for
    (tracemalloc, in this process), and the resident memory the stores add to
    a fresh process (``VmRSS`` before and after, in a child), the unit the
    operator's peak RSS is in: it counts what the allocator holds for those
    objects (its size classes, its pools), which tracemalloc does not."""
    payloads = [
        client.request("GET", JOBS.path(None)),
        *(
            client.request("GET", r.path(None), query={"labelSelector": CHILD_SELECTOR})
            for r in STORED[1:]
        ),
    ]
    raw = [[json.dumps(obj) for obj in p["items"]] for p in payloads]
    del payloads
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    stores = build_stores(raw)
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del stores
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(raw, f)
        f.flush()
        child = subprocess.run(
            [sys.executable, "-m", "hack.bench_job_start", "--store-rss", f.name],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    return size, int(child.stdout.split()[-1])


def store_rss_main(path: str) -> int:
    """``--store-rss FILE``: build the informer stores from the JSON texts in
    FILE (a list per store) in this fresh process and print the resident
    bytes they added."""
    with open(path) as f:
        raw = json.load(f)
    gc.collect()
    before = proc_kib(os.getpid(), "VmRSS")
    stores = build_stores(raw)
    gc.collect()
    added = proc_kib(os.getpid(), "VmRSS") - before
    del stores  # held until here: their pages are the figure
    print(added * 1024)
    return 0


def fmt(v: float | None, spec: str = ".1f") -> str:
    return "-" if v is None else format(v, spec)


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


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


PAIRS = (
    ("defaults", "baseline"),
    ("tuned", "baseline"),
    ("defaults", "tuned"),
    ("tuned", "ceiling"),
    ("tuned", "writes"),
    ("defaults", "writes"),
    ("writes", "ceiling"),
)
"""The comparisons :func:`comparisons` prints, where a size ran both."""


def cpu_per_job(r: Run) -> float | None:
    """The controller's CPU milliseconds per job (the operator's, or the writes
    scenario's stand-in's)."""
    return None if r.cpu_s is None or not r.jobs else 1000 * r.cpu_s / r.jobs


def comparisons(by: dict[tuple[str, str], Run]) -> str:
    """Every pair of :data:`PAIRS` a size ran, as ratios (first / second) of
    the time until all pods exist and until all jobs are Running, the CPU
    per job, the reconcile-budget writes per job and the peak RSS ("-" where
    either lacks the figure)."""
    rows = [
        "| size | first / second | all pods exist | all jobs Running | CPU per job | "
        "writes per job | peak RSS |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    sizes = sorted({size for size, _ in by}, key=lambda z: [int(x) for x in z.split("x")])
    for size in sizes:
        for a, b in PAIRS:
            x, y = by.get((size, a)), by.get((size, b))
            if x is None or y is None:
                continue
            writes = [r.budget_writes / r.jobs if r.jobs else None for r in (x, y)]
            rows.append(
                f"| {size} | {a} / {b} | {ratio(x.pods_s, y.pods_s)} | "
                f"{ratio(x.running_s, y.running_s)} | {ratio(cpu_per_job(x), cpu_per_job(y))} | "
                f"{ratio(*writes) if x.scenario != 'ceiling' and y.scenario != 'ceiling' else '-'}"
                f" | {ratio(x.rss_peak_mib, y.rss_peak_mib)} |"
            )
    return "\n".join(rows)


def medians(runs: list[Run]) -> dict[tuple[str, str], Run]:
    """Each (size, scenario)'s median run by the time until all pods exist (the
    lower middle one of an even number; runs that timed out sort last)."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.size, r.scenario), []).append(r)
    out = {}
    for key, group in groups.items():
        ranked = sorted(group, key=lambda r: float("inf") if r.pods_s is None else r.pods_s)
        out[key] = ranked[(len(ranked) - 1) // 2]
    return out


def targets(by: dict[tuple[str, str], Run]) -> list[str]:
    out = []

    def get(size: str, scenario: str) -> Run | None:
        return by.get((size, scenario))

    d, b = get("200x4", "defaults"), get("200x4", "baseline")
    if d and b:
        out.append(
            f"200x4 all Running, baseline / defaults: {ratio(b.running_s, d.running_s)}x "
            "faster (target >= 1.5)"
        )
    for size in ("200x4", "1000x4"):
        t, c, w = get(size, "tuned"), get(size, "ceiling"), get(size, "writes")
        if t and c:
            out.append(
                f"{size} tuned pods / ceiling pods: {ratio(t.pods_s, c.pods_s)} (target <= 1.25); "
                f"all Running / ceiling pods: {ratio(t.running_s, c.pods_s)} (target <= 1.5)"
            )
        if t and w:
            out.append(
                f"{size} tuned pods / writes pods: {ratio(t.pods_s, w.pods_s)} (target <= 1.25); "
                f"all Running / writes pods: {ratio(t.running_s, w.pods_s)} (target <= 1.5); "
                f"all Running / writes all Running: {ratio(t.running_s, w.running_s)}"
            )
        if w and c:
            out.append(
                f"{size} writes pods / ceiling pods: {ratio(w.pods_s, c.pods_s)}: the same "
                "writes with no operator against the pods alone"
            )
    c, w = get("1x512", "ceiling"), get("1x512", "writes")
    for scenario in ("tuned", "defaults", "baseline"):
        r = get("1x512", scenario)
        if r and c:
            out.append(
                f"1x512 {scenario} pods / ceiling pods: {ratio(r.pods_s, c.pods_s)} "
                "(target <= 1.5 when tuned)"
                + (f"; / writes pods: {ratio(r.pods_s, w.pods_s)}" if w else "")
            )
    for (size, scenario), r in sorted(by.items()):
        if scenario in ("defaults", "tuned") and r.jobs and size.endswith("x4"):
            cpu_ms = None if r.cpu_s is None else 1000 * r.cpu_s / r.jobs
            out.append(
                f"{size} {scenario}: {r.budget_writes / r.jobs:.2f} reconcile-budget writes "
                f"per job (target <= 7), CPU {fmt(cpu_ms)} ms per job (target <= 20)"
            )
    for size in sorted({size for size, _ in by}):
        d, b = get(size, "defaults"), get(size, "baseline")
        if d and b:
            out.append(
                f"{size} CPU per job, defaults / baseline: {fmt(cpu_per_job(d))} / "
                f"{fmt(cpu_per_job(b))} ms = {ratio(cpu_per_job(d), cpu_per_job(b))} "
                f"(target <= {CPU_TARGET})"
            )
    for (size, scenario), r in sorted(by.items()):
        if scenario == "defaults" and r.jobs >= 10_000 and r.rss_peak_mib is not None:
            mb = 2**20 / 1e6
            out.append(
                f"{size} defaults: RSS at ready {fmt((r.rss_ready_mib or 0) * mb, '.0f')} MB, "
                f"peak {fmt(r.rss_peak_mib * mb, '.0f')} MB (target < {RSS_LIMIT_MB} MB), "
                f"CPU {fmt(cpu_per_job(r))} ms per job"
            )
    small, large = get("200x4", "tuned"), get("1000x4", "tuned")
    if small and large and None not in (small.rss_peak_mib, large.rss_peak_mib):
        # The growth rate: what 800 jobs more add to the peak RSS, against what
        # they add to the informer stores (fixed costs such as threads cancel).
        assert small.rss_peak_mib is not None and large.rss_peak_mib is not None
        d_rss = large.rss_peak_mib - small.rss_peak_mib
        d_cache = (large.cache_mib or 0) - (small.cache_mib or 0)
        d_resident = (large.cache_rss_mib or 0) - (small.cache_rss_mib or 0)
        out.append(
            f"tuned, 200x4 to 1000x4: peak RSS +{d_rss:.1f} MiB, informer stores "
            f"+{d_resident:.1f} MiB resident: {ratio(d_rss, d_resident)} (target <= 1); "
            f"+{d_cache:.1f} MiB traced: {ratio(d_rss, d_cache)}"
        )
    return out


def main() -> int:
    if sys.argv[1:2] == ["--writer"]:  # the writes scenario's stand-in controller
        kubeconfig, replicas, concurrency = sys.argv[2:5]
        return writer_main(kubeconfig, int(replicas), int(concurrency))
    if sys.argv[1:2] == ["--store-rss"]:  # cache_bytes's fresh process
        return store_rss_main(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    args = parser.parse_args()
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
        parser.error(str(exc))
    logs = Path(tempfile.mkdtemp(prefix="t9k-bench-"))
    sources = {"tree": ROOT}
    worktree = logs / "baseline"
    needs_baseline = any("baseline" in plan[size] for size in sizes)
    if needs_baseline:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), args.baseline],
            check=True,
            capture_output=True,
        )
        sources["baseline"] = worktree
    cluster = Cluster(args.cluster)
    log(f"logs in {logs}")
    runs: list[Run] = []
    try:
        for size, rep in ((z, r) for z in sizes for r in range(args.repeat)):
            for scenario in plan[size]:
                log(f"{size} {scenario}" + (f" #{rep + 1}" if args.repeat > 1 else ""))
                started = time.monotonic()
                extra = tuple(args.operator_flags.split()) if scenario != "baseline" else ()
                run = run_one(
                    cluster,
                    size,
                    scenario,
                    sources,
                    args.concurrency,
                    args.timeout,
                    logs,
                    extra,
                    args.pprof,
                    rep + 1 if args.repeat > 1 else 0,
                    using,
                    args.py_spy,
                    tuple(args.apiserver_flag),
                )
                runs.append(run)
                log(
                    f"{size} {scenario}: pods {fmt(run.pods_s)} s, Running "
                    f"{fmt(run.running_s)} s, operator GET/LIST {run.operator_reads} "
                    f"(informers {run.informer_reads}), "
                    f"CPU {fmt(run.cpu_s, '.2f')} s "
                    f"(run {time.monotonic() - started:.0f} s) {run.note}"
                )
    finally:
        if needs_baseline:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                check=False,
                capture_output=True,
            )
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=2) + "\n")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
