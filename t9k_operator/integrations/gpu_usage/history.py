"""A job's GPUs over its life, for the console's Job page: the query ``t9k
describe`` and ``t9k top jobs`` ask as an instant query
(:func:`~t9k_operator.integrations.gpu_usage.usage.current_query`, every GPU
held in the job's namespace) asked over a range instead, and its
utilization series of the job's pods kept, one per GPU.

Only ``t9k console`` asks it, through this integration's view (``charts``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from t9k_operator.foundation import prometheus
from t9k_operator.integrations.gpu_usage.usage import STAT, current_query
from t9k_operator.sdk import views

Obj = Mapping[str, Any]


def gpu_series(
    result: Iterable[Mapping[str, Any]], namespace: str, pods: Sequence[str]
) -> list[dict[str, Any]]:
    """A range answer of :func:`current_query`: the utilization of each GPU of
    ``pods`` as ``{"pod", "gpu", "points": [[unix seconds, percent], ...]}``
    (a GPU's series of one pod merged; values that do not parse left out)."""
    wanted = set(pods)
    merged: dict[tuple[str, str], dict[float, float]] = {}
    for series in result:
        labels = series.get("metric") or {}
        pod = str(labels.get("pod") or "")
        if labels.get(STAT) != "util" or labels.get("namespace") != namespace:
            continue
        if pod not in wanted:
            continue
        gpu = str(labels.get("UUID") or f"{labels.get('Hostname', '')}/{labels.get('gpu', '')}")
        merged.setdefault((pod, gpu), {}).update(prometheus.points(series))
    return [
        {"pod": pod, "gpu": gpu, "points": [[t, v] for t, v in sorted(points.items())]}
        for (pod, gpu), points in sorted(merged.items())
    ]


def gpu_history(
    url: str, job: Obj, pods: Sequence[Obj], span: tuple[float, float, int]
) -> dict[str, Any]:
    """``{"gpus": [...]}`` over ``span`` (start, end, step), or
    ``{"gpusError": why}`` when the Prometheus gives no answer."""
    namespace = str((job.get("metadata") or {}).get("namespace") or "")
    start, end, step = span
    try:
        result = prometheus.query_range(url, current_query(namespace), start, end, step)
    except prometheus.PrometheusError as exc:
        return {"gpusError": f"no GPU usage from Prometheus: {exc}"}
    names = [str(p["metadata"]["name"]) for p in views.job_pods(job, pods)]
    return {"gpus": gpu_series(result, namespace, names)}
