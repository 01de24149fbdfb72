"""The GPU-usage watch's metrics: the queries it asks Prometheus
(``t9k_gpu_usage_queries_total``) and each judged job's verdict
(``t9k_job_gpus_idle``), with the verdicts the watch keeps. Registered when
the registry is imported, so the operator's metrics hold both families from
the start, empty while the integration is off; the watch itself is loaded
only when it is built.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from t9k_operator.foundation.metrics import collector, custom_collector
from t9k_operator.integrations.gpu_usage.usage import (
    BUSY,
    IDLE,
    Verdict,
)

QUERIES = collector(
    Counter,
    "t9k_gpu_usage_queries_total",
    "Queries of the GPU-usage watch to Prometheus (--prometheus-url), by result: success or error.",
    ["result"],
)


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
        changed = {u: j for u, j in jobs.items() if judged_state(before.get(u)) != j.verdict.state}
        changed.update({u: j for u, j in before.items() if u not in jobs})
        return changed

    def clear(self) -> None:
        with self._lock:
            self._jobs = {}

    def judged(self) -> list[Judged]:
        with self._lock:
            return list(self._jobs.values())


def judged_state(judged: Judged | None) -> str | None:
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
