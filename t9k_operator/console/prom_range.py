"""The Job page's steps from Prometheus (``t9k console --prometheus-url``): a
range query over the job's life of the operator's gauge
``t9k_job_progress_step{kind,namespace,name}`` (the latest step a job not
finished reported, exported by the leader; docs/observability.md). Scraped
without ``honorLabels``, its ``namespace`` arrives as ``exported_namespace``:
both spellings are asked. The GPUs' series come from the integrations' views
(``CommandView.charts``), over the same span.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from t9k_operator.foundation import prometheus

MAX_POINTS = 300
"""Points a series at most: the step of a range query is the span over this."""
MIN_STEP = 15
"""Seconds: a scrape interval's worth; a finer step shows nothing more."""
STEP_METRIC = "t9k_job_progress_step"

PrometheusError = prometheus.PrometheusError


def span(
    created: datetime | None, finished: datetime | None, now: datetime
) -> tuple[float, float, int] | None:
    """The job's life as (start, end, step): unix seconds, and a step that
    gives about :data:`MAX_POINTS` points, at least :data:`MIN_STEP`; ``None``
    for a job without a creation time."""
    if created is None:
        return None
    end = (finished or now).timestamp()
    start = min(created.timestamp(), end - MIN_STEP)
    return start, end, max(MIN_STEP, int((end - start) / MAX_POINTS) + 1)


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def step_query(namespace: str, kind: str, name: str) -> str:
    """The job's steps, under either spelling of its namespace's label."""
    job = f'kind="{_quoted(kind)}",name="{_quoted(name)}"'
    ns = _quoted(namespace)
    return (
        f'max(({STEP_METRIC}{{exported_namespace="{ns}",{job}}}) '
        f'or ({STEP_METRIC}{{namespace="{ns}",{job}}}))'
    )


def steps(result: Iterable[Mapping[str, Any]]) -> list[tuple[float, int]]:
    """:func:`step_query`'s range answer as (unix time, step) points."""
    return sorted((at, int(v)) for series in result for at, v in prometheus.points(series))


def step_history(
    url: str, namespace: str, kind: str, name: str, life: tuple[float, float, int]
) -> list[tuple[float, int]]:
    """The job's steps over ``life`` from the Prometheus at ``url``; raises
    :class:`PrometheusError`."""
    start, end, step = life
    return steps(prometheus.query_range(url, step_query(namespace, kind, name), start, end, step))
