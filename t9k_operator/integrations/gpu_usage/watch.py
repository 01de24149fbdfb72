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
from collections.abc import Callable
from datetime import datetime
from typing import Any

import structlog

from t9k_operator.foundation import prometheus
from t9k_operator.foundation.clock import Clock
from t9k_operator.informers import CONTROLLER_UID_INDEX
from t9k_operator.integrations.gpu_usage.integration import WatchOptions
from t9k_operator.integrations.gpu_usage.metrics import (
    QUERIES,
    Judged,
    Verdicts,
    judged_state,
)
from t9k_operator.integrations.gpu_usage.usage import (
    GPUPod,
    judge,
    samples,
    window_query,
    windows,
)
from t9k_operator.kinds.gpus import pod_gpus
from t9k_operator.objects import Obj, parse_time
from t9k_operator.reconcilers.serving import Host

Query = Callable[[str, str], list[dict[str, Any]]]
"""Ask the Prometheus at a URL an instant query (:func:`prometheus.query`)."""

log = structlog.get_logger(__name__)


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
            state = judged_state(judged.get(uid))
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
