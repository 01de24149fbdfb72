"""The stand-in kubelet: the benchmarks' pods marked Running, and when each
pod and job was first seen."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from t9k_operator.kube import KubeClient
from t9k_operator.resources import PODS, Resource

from .follower import Follower
from .jobs import JOBS, NAMESPACE, SCHEDULER
from .log import log


class StandIn:
    """A stand-in kubelet: follows the bench's pods, marks each Running at once
    with one status patch, and notes when it first saw each pod and job.

    With ``bound_only`` (a gang scheduler places the pods) it marks a pod only
    once a scheduler has bound it to a node, as a kubelet would. Pods whose
    ``schedulerName`` is not ``scheduler``, or whose node selector lacks
    ``node_labels`` (a Kueue flavor's), are counted in ``misplaced``. The jobs
    followed are ``jobs`` (the operator's PyTorchTrainingJobs, or another
    controller's kind), Running when ``running`` says so (by default, the
    operator's ``status.phase``)."""

    def __init__(
        self,
        client: KubeClient,
        expect_pods: int,
        expect_jobs: int,
        *,
        bound_only: bool = False,
        scheduler: str = SCHEDULER,
        node_labels: dict[str, str] | None = None,
        jobs: Resource = JOBS,
        running: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self.client = client
        self.jobs = jobs
        self.running = running or _phase_running
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
            Follower(self.client, self.jobs, self._on_job),
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
        if kind != "DELETED" and name not in self.job_running and self.running(job):
            self.job_running[name] = time.monotonic()
            if len(self.job_running) >= self.expect_jobs:
                self.jobs_done.set()


def _phase_running(job: dict[str, Any]) -> bool:
    return (job.get("status") or {}).get("phase") == "Running"
