"""The watch on Running jobs' GPUs: once a period, on the leader, one query to
Prometheus for every pod's GPU utilization over the window, a verdict for
each Running job whose pods hold GPUs (:func:`t9k_operator.integrations.gpu_usage.usage.judge`),
kept in :class:`Verdicts` (what the gpu-usage integration reads through its
caches) and exported as ``t9k_job_gpus_idle``; a job whose verdict changed is
queued, so its next reconcile sets or clears its ``GPUsIdle`` condition.

A query that fails (Prometheus down, a bad answer) is logged and counted in
``t9k_gpu_usage_queries_total{result="error"}``; the verdicts stay what they
were and the next query comes a period later, never sooner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from t9k_operator.foundation import prometheus
from t9k_operator.foundation.clock import Clock
from t9k_operator.foundation.metrics import collector, custom_collector
from t9k_operator.informers import CONTROLLER_UID_INDEX
from t9k_operator.integrations.gpu_usage.integration import WatchOptions
from t9k_operator.integrations.gpu_usage.usage import (
    BUSY,
    IDLE,
    GPUPod,
    Verdict,
    judge,
    samples,
    window_query,
    windows,
)
from t9k_operator.kinds.gpus import pod_gpus
from t9k_operator.objects import Obj, parse_time
from t9k_operator.reconcilers.serving import Host

log = structlog.get_logger(__name__)

QUERIES = collector(
    Counter,
    "t9k_gpu_usage_queries_total",
    "Queries of the GPU-usage watch to Prometheus (--prometheus-url), by result: success or error.",
    ["result"],
)
Query = Callable[[str, str], list[dict[str, Any]]]
"""Ask the Prometheus at a URL an instant query (:func:`prometheus.query`)."""


@dataclass(frozen=True)
class Judged:
    """A job's verdict, and which job it is (for the gauge)."""

    kind: str
    plural: str  # its route
    namespace: str
    name: str
    verdict: Verdict


class Verdicts:
    """The latest verdict of each Running job holding GPUs, by the job's uid;
    replaced as a whole by each successful query. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Judged] = {}

    def verdict(self, job_uid: str) -> Verdict | None:
        with self._lock:
            judged = self._jobs.get(job_uid)
        return judged.verdict if judged else None

    def replace(self, jobs: Mapping[str, Judged]) -> dict[str, Judged]:
        """Keep ``jobs``; the jobs whose verdict's state changed (or that are
        new, or gone), by uid."""
        with self._lock:
            before, self._jobs = self._jobs, dict(jobs)
        changed = {u: j for u, j in jobs.items() if _state(before.get(u)) != j.verdict.state}
        changed.update({u: j for u, j in before.items() if u not in jobs})
        return changed

    def clear(self) -> None:
        with self._lock:
            self._jobs = {}

    def judged(self) -> list[Judged]:
        with self._lock:
            return list(self._jobs.values())


def _state(judged: Judged | None) -> str | None:
    return judged.verdict.state if judged else None


class IdleGauge(Collector):
    """``t9k_job_gpus_idle{kind,namespace,name}``: 1 for a Running job whose
    GPUs are idle, 0 for one whose GPUs are in use; no series for a job not
    judged (not Running, no GPUs, not enough samples yet). Only the leader
    queries, so only it exports."""

    def __init__(self) -> None:
        self.verdicts: Verdicts | None = None

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "t9k_job_gpus_idle",
            "1 while a Running job's GPUs have stayed under --gpu-idle-threshold for "
            "--gpu-idle-window (its condition GPUsIdle), 0 while they are in use; for "
            "Running jobs holding GPUs that the operator could judge. Leader only.",
            labels=["kind", "namespace", "name"],
        )

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        verdicts = self.verdicts
        for j in sorted(verdicts.judged() if verdicts else [], key=lambda j: (j.namespace, j.name)):
            if j.verdict.state in (IDLE, BUSY):
                family.add_metric(
                    [j.kind, j.namespace, j.name], 1.0 if j.verdict.state == IDLE else 0.0
                )
        yield family


IDLE_GAUGE = custom_collector(IdleGauge)


def running_since(pod: Obj) -> datetime | None:
    """Since when every container of a Running pod has run: its latest
    container (re)start; None for a pod not Running."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    starts = []
    for cs in status.get("containerStatuses") or []:
        started = parse_time(((cs.get("state") or {}).get("running") or {}).get("startedAt"))
        if started is None:
            return None  # a container not running (yet, or any more)
        starts.append(started)
    return max(starts) if starts else None


class GPUWatch:
    """The watch, a server of the manager's (started on every replica; it
    asks only while its replica leads)."""

    def __init__(
        self,
        host: Host,
        options: WatchOptions,
        verdicts: Verdicts,
        *,
        ask: Query | None = None,
    ) -> None:
        self.host, self.options, self.verdicts = host, options, verdicts
        self.clock: Clock = host.ctx.clock
        self._ask: Query = ask or (lambda url, expr: prometheus.query(url, expr))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gpu-usage", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)

    def _run(self) -> None:
        while not self.clock.wait(self._stop, self.options.period):
            if not self.host.ctx.is_leader():
                self.verdicts.clear()
                continue
            try:
                self.poll()
            except Exception as exc:  # never the end of the watch
                log.error("the GPU-usage watch failed", error=str(exc))

    def poll(self) -> bool:
        """One query and the verdicts from it; whether the query succeeded."""
        jobs = self._running_gpu_jobs()
        try:
            result = self._ask(self.options.url, window_query(self.options.window))
        except prometheus.PrometheusError as exc:
            QUERIES.labels("error").inc()
            log.warning(
                "GPU usage: the query to Prometheus failed; verdicts kept, asking again "
                f"in {self.options.period:g}s",
                error=str(exc),
            )
            self._failing = True
            return False
        QUERIES.labels("success").inc()
        if self._failing:
            log.info("GPU usage: Prometheus answers again")
            self._failing = False
        found = windows(samples(result))
        now = self.clock.now()
        threshold, window = self.options.threshold, self.options.window
        judged = {
            uid: Judged(*job, judge(pods, found, threshold, window, now))
            for uid, (job, pods) in jobs.items()
        }
        for uid, j in self.verdicts.replace(judged).items():
            route = self.host.routes.get(j.plural)
            if route is not None:
                route.enqueue_after(f"{j.namespace}/{j.name}", 0.0)
            state = _state(judged.get(uid))
            log.debug("GPU usage: a verdict changed", job=f"{j.namespace}/{j.name}", state=state)
        return True

    def _running_gpu_jobs(self) -> dict[str, tuple[tuple[str, str, str, str], list[GPUPod]]]:
        """Every Running job whose live pods hold GPUs: (kind, plural,
        namespace, name) and those pods, by the job's uid."""
        out: dict[str, tuple[tuple[str, str, str, str], list[GPUPod]]] = {}
        for plural, route in self.host.routes.items():
            for job in route.jobs.list():
                if (job.get("status") or {}).get("phase") != "Running":
                    continue
                meta = job["metadata"]
                pods = [
                    GPUPod(
                        str(p["metadata"].get("namespace")),
                        str(p["metadata"].get("name")),
                        gpus,
                        running_since(p),
                    )
                    for p in self.host.pods.by_index(CONTROLLER_UID_INDEX, str(meta["uid"]))
                    if (gpus := pod_gpus(p))
                    and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                ]
                if pods:
                    job_id = (
                        route.resource.kind,
                        plural,
                        str(meta["namespace"]),
                        str(meta["name"]),
                    )
                    out[str(meta["uid"])] = (job_id, pods)
        return out
