"""What ``t9k`` shows of the jobs' GPUs, asked of the Prometheus that scrapes
NVIDIA's DCGM exporter (``--prometheus-url``, default ``$T9K_PROMETHEUS_URL``):
a ``GPU usage`` line in ``t9k describe``, and PROGRESS, GPU UTIL and GPU
MEMORY columns in ``t9k top jobs``; each GPU over the job's life on ``t9k
console``'s Job page (:mod:`~t9k_operator.integrations.gpu_usage.history`).
Without a Prometheus, a hint where to get them for a job holding GPUs; with
one that does not answer, a warning on stderr and the command's other figures.

Only ``t9k`` loads this module (:func:`t9k_operator.registry.views`); the
queries and their reading are the operator's own (``usage.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from t9k_operator.api.parts import Columns, CommandView, JobKey
from t9k_operator.integrations.gpu_usage import sdk as gpu_usage
from t9k_operator.integrations.gpu_usage.history import gpu_history
from t9k_operator.integrations.gpu_usage.usage import Usage, describe_usage, memory_text, util_text
from t9k_operator.sdk import views

Obj = Mapping[str, Any]

HINT = (
    "GPU utilization and memory: add --prometheus-url URL (or set "
    f"{gpu_usage.ENV}), a Prometheus that scrapes NVIDIA's DCGM exporter"
)
HEADERS = ("PROGRESS", "GPU UTIL", "GPU MEMORY")


def _key(job: Obj) -> JobKey:
    meta = job.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(job.get("kind") or ""), str(meta.get("name")))


def _asked(
    url: str, jobs: Sequence[Obj], pods: Sequence[Obj], namespace: str | None
) -> dict[JobKey, Usage | None] | None:
    """Each job's GPUs now; None (after a warning) when the Prometheus gives no answer."""
    try:
        return gpu_usage.of_jobs(url, jobs, pods, namespace)
    except gpu_usage.PrometheusUnavailable as exc:
        print(f"warning: {exc.message}", file=sys.stderr)
        return None


def cells(
    rows: Sequence[views.JobSummary], jobs: Sequence[Obj], usage: Mapping[JobKey, Usage | None]
) -> dict[JobKey, tuple[str, ...]]:
    """Each job's PROGRESS (its ``status.progress.summary``), GPU UTIL and GPU
    MEMORY ("-": no report, no series)."""
    progress = {_key(j): ((j.get("status") or {}).get("progress") or {}) for j in jobs}
    out: dict[JobKey, tuple[str, ...]] = {}
    for r in rows:
        key = (r.namespace, r.kind, r.name)
        u = usage.get(key)
        out[key] = (
            str(progress.get(key, {}).get("summary") or "-"),
            *((util_text(u), memory_text(u)) if u else ("-", "-")),
        )
    return out


class GPUUsageView(CommandView):
    """The GPU figures of ``t9k describe`` and ``t9k top jobs``."""

    def add_arguments(self, command: str, parser: argparse.ArgumentParser) -> None:
        if command in ("describe", "top"):
            parser.add_argument(
                "--prometheus-url",
                default=gpu_usage.default_url(),
                help="a Prometheus that scrapes NVIDIA's DCGM exporter (http://host:9090), to "
                f"show what the jobs' GPUs do now (default ${gpu_usage.ENV})",
            )

    def fields(
        self, args: argparse.Namespace, job: Obj, pods: Sequence[Obj]
    ) -> list[tuple[str, str]]:
        """The ``GPU usage`` line; without a Prometheus, where to get it (for a
        job holding GPUs); nothing when there is nothing to say."""
        if not args.prometheus_url:
            allocated = views.summarize(job, pods, views.now_utc()).gpus_allocated
            hint = f"(add --prometheus-url or set {gpu_usage.ENV})"
            return [("GPU usage", hint)] if allocated else []
        found = _asked(args.prometheus_url, [job], pods, job["metadata"]["namespace"])
        if found is None:
            return [("GPU usage", "<unavailable>")]
        u = found[_key(job)]
        return [("GPU usage", describe_usage(u) if u else "<no DCGM series for its pods>")]

    def top_jobs(
        self,
        args: argparse.Namespace,
        jobs: Sequence[Obj],
        pods: Sequence[Obj],
        namespace: str | None,
    ) -> Columns | None:
        """The columns with a Prometheus that answers; without one, the hint
        when a job holds GPUs."""
        if not args.prometheus_url:
            rows = views.job_usage(jobs, pods, views.now_utc())
            return Columns(note=HINT) if any(r.gpus_allocated for r in rows) else None
        found = _asked(args.prometheus_url, jobs, pods, namespace)
        if found is None:
            return None
        rows = views.job_usage(jobs, pods, views.now_utc())
        return Columns(HEADERS, cells(rows, jobs, found))

    def charts(
        self, prometheus_url: str, job: Obj, pods: Sequence[Obj], span: tuple[float, float, int]
    ) -> dict[str, Any]:
        """Each GPU of the job's pods over its life (``gpus``), for ``t9k console``."""
        return gpu_history(prometheus_url, job, pods, span)


VIEW = GPUUsageView()
