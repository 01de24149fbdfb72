"""What jobs' GPUs are doing now, from the Prometheus that scrapes NVIDIA's
DCGM exporter, for the SDK and ``t9k``: one query for every GPU of the
namespace (or the cluster), summed up per job over its pods
(:class:`~t9k_operator.integrations.gpu_usage.usage.Usage`: GPUs seen, mean
and highest utilization, framebuffer memory in use and in all). The queries
and their reading are the operator's own (``usage.py``).

::

    from t9k_operator.integrations.gpu_usage.sdk import gpu_usage
    from t9k_operator.sdk import Client

    with Client(namespace="team-a") as client:
        usage = gpu_usage(client, "mnist", prometheus_url="http://prometheus:9090")
        if usage is not None:
            print(f"{usage.util_avg}% of {usage.gpus} GPUs")
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from t9k_operator.foundation import prometheus
from t9k_operator.integrations.gpu_usage.usage import Usage, current_query, samples, usage
from t9k_operator.sdk import views
from t9k_operator.sdk.errors import T9kError

ENV = "T9K_PROMETHEUS_URL"
"""Where ``t9k top jobs`` and ``t9k describe`` find the Prometheus by default."""

JobKey = tuple[str, str, str]
"""A job: (namespace, kind, name)."""


class Jobs(Protocol):
    """What :func:`gpu_usage` reads through the SDK's ``Client``."""

    def get(
        self, name: str, kind: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]: ...

    def pods(self, job: Mapping[str, Any]) -> list[dict[str, Any]]: ...


class PrometheusUnavailable(T9kError):
    """The Prometheus gave no answer (unreachable, an error, a bad address)."""


def default_url() -> str | None:
    return os.environ.get(ENV) or None


def of_jobs(
    prometheus_url: str,
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    namespace: str | None = None,
) -> dict[JobKey, Usage | None]:
    """Each job's GPUs now (None: none of its pods' GPUs has a series), from
    one query of the GPUs held in ``namespace`` (None: every namespace)."""
    problem = prometheus.check_url(prometheus_url)
    if problem:
        raise PrometheusUnavailable(problem)
    try:
        found = samples(prometheus.query(prometheus_url, current_query(namespace)))
    except prometheus.PrometheusError as exc:
        raise PrometheusUnavailable(f"no GPU usage from Prometheus: {exc}") from None
    out: dict[JobKey, Usage | None] = {}
    for job in jobs:
        meta = job.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(job.get("kind") or ""), str(meta.get("name")))
        mine = [
            (str(p["metadata"].get("namespace") or ""), str(p["metadata"].get("name") or ""))
            for p in views.job_pods(job, pods)
        ]
        out[key] = usage(found, mine)
    return out


def gpu_usage(
    client: Jobs,
    name: str,
    kind: str | None = None,
    namespace: str | None = None,
    *,
    prometheus_url: str | None = None,
) -> Usage | None:
    """The job's GPUs now, from the Prometheus scraping NVIDIA's DCGM exporter
    (``prometheus_url``, else ``$T9K_PROMETHEUS_URL``): how many report, their
    mean and highest utilization, memory in use and in all (MiB); None when
    no GPU of its pods has a series. ``client`` is the SDK's ``Client``.
    Raises :class:`PrometheusUnavailable`."""
    url = prometheus_url or default_url()
    if not url:
        raise PrometheusUnavailable(f"no Prometheus: pass prometheus_url or set {ENV}")
    job = client.get(name, kind, namespace)
    meta = job["metadata"]
    found = of_jobs(url, [job], client.pods(job), meta["namespace"])
    return found[(meta["namespace"], job["kind"], meta["name"])]
