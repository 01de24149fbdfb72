"""The Job page's charts: its steps over time with the ETA, its GPUs'
utilization with the idle-GPU flag, and where its TensorBoard opens.

``GET /api/jobs/{ns}/{kind}/{name}/charts`` answers :func:`chart_data`:

- ``progress``: the (unix time, step) points the console saw
  (:class:`~.progress_history.ProgressHistory`, since it started watching),
  joined, with a Prometheus (``--prometheus-url``), by the operator's
  ``t9k_job_progress_step`` over the job's life (:mod:`~.prom_range`); the
  PROGRESS and ETA cells of ``t9k list`` (the progress integration's columns,
  through the CLI's renderer, as the Summary has them).
- ``gpu``: with a Prometheus, each GPU of the job's pods over the job's life
  (the GPU-usage integration's query, through its view's ``charts``); without
  one, none: the console has no other source of GPU utilization (the metrics
  API has none), and says it needs ``--prometheus-url``.
- ``idle``: the job's ``GPUsIdle`` condition, which the operator sets (with
  its own ``--prometheus-url``) on a Running job whose GPUs stayed idle.
- ``tensorboard``: the console's path to the job's TensorBoard (:mod:`~.tensorboard_proxy`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from t9k_operator.cli import render
from t9k_operator.console import prom_range
from t9k_operator.console.board import JobBoard
from t9k_operator.console.job_page import SafeJSONResponse
from t9k_operator.console.rows import job_key
from t9k_operator.objects import parse_time
from t9k_operator.registry import views as views_of_integrations
from t9k_operator.sdk import views

Obj = Mapping[str, Any]

IDLE_CONDITION = "GPUsIdle"
NEEDS_PROMETHEUS = (
    "GPU utilization needs a Prometheus that scrapes NVIDIA's DCGM exporter: "
    "start the console with --prometheus-url URL (or set T9K_PROMETHEUS_URL)"
)


def idle_flag(job: Obj) -> dict[str, Any]:
    """The job's ``GPUsIdle`` condition: idle (status True) or not, with its words."""
    c = next((c for c in views.conditions(job) if c.get("type") == IDLE_CONDITION), {})
    return {
        "idle": c.get("status") == "True",
        "status": str(c.get("status") or ""),
        "reason": str(c.get("reason") or ""),
        "message": str(c.get("message") or ""),
        "since": str(c.get("lastTransitionTime") or ""),
    }


def tensorboard_of(job: Obj) -> dict[str, Any]:
    """Whether the job has a TensorBoard (``spec.tensorboardSpec``), its state,
    and the console's path to it."""
    if not (job.get("spec") or {}).get("tensorboardSpec"):
        return {"url": ""}
    meta = job.get("metadata") or {}
    part = (job.get("status") or {}).get("tensorboard") or {}
    key = job_key(str(meta.get("namespace")), str(job.get("kind")), str(meta.get("name")))
    return {
        "url": f"/tensorboard/{key}/",
        "ready": bool(part.get("ready")),
        "reason": str(part.get("reason") or "not reported yet"),
    }


def _life(job: Obj, now: datetime) -> tuple[float, float, int] | None:
    status = job.get("status") or {}
    created = parse_time((job.get("metadata") or {}).get("creationTimestamp"))
    return prom_range.span(created, parse_time(status.get("completionTime")), now)


def list_cells(job: Obj, pods: Sequence[Obj], now: datetime) -> dict[str, str]:
    """``t9k list``'s cells of the job, by header (PROGRESS, ETA among them)."""
    cells = render.list_cells(job, pods, now)
    return {c.header: cell for c, cell in zip(render.list_columns(), cells, strict=True)}


def merged(
    seen: Sequence[Sequence[float]], asked: Sequence[tuple[float, int]]
) -> list[list[float]]:
    """Prometheus's points and the console's, by time; the console's win a tie."""
    by_time: dict[float, float] = {float(at): float(step) for at, step in asked}
    by_time.update({float(p[0]): float(p[1]) for p in seen})
    return [[at, step] for at, step in sorted(by_time.items())]


def ask_prometheus(url: str, job: Obj, pods: Sequence[Obj], now: datetime) -> dict[str, Any]:
    """The job's steps (``steps``) and the integrations' series (``gpus``) over
    its life, from the Prometheus at ``url``; ``...Error``: why one is missing."""
    life = _life(job, now)
    if life is None:
        return {}
    meta = job.get("metadata") or {}
    ns, kind, name = str(meta.get("namespace")), str(job.get("kind")), str(meta.get("name"))
    out: dict[str, Any] = {}
    try:
        out["steps"] = prom_range.step_history(url, ns, kind, name, life)
    except prom_range.PrometheusError as exc:
        out["stepsError"] = f"no steps from Prometheus: {exc}"
    for view in views_of_integrations():
        out.update(view.charts(url, job, pods, life))
    return out


def chart_data(
    job: Obj,
    pods: Sequence[Obj],
    seen: Sequence[Sequence[float]],
    now: datetime,
    prometheus_url: str | None,
) -> dict[str, Any]:
    """Everything the page's charts show of the job; ``seen``: the console's points."""
    asked = ask_prometheus(prometheus_url, job, pods, now) if prometheus_url else None
    progress = (job.get("status") or {}).get("progress") or {}
    cells = list_cells(job, pods, now)
    return {
        "now": now.timestamp(),
        "progress": {
            "points": merged(seen, (asked or {}).get("steps", [])),
            "source": "Prometheus and the console" if asked is not None else "console",
            "error": (asked or {}).get("stepsError", ""),
            "summary": cells.get("PROGRESS", ""),
            "eta": cells.get("ETA", ""),
            "totalSteps": progress.get("totalSteps"),
            "stepsPerSecond": progress.get("stepsPerSecond"),
        },
        "gpu": {
            "available": asked is not None,
            "note": "" if asked is not None else NEEDS_PROMETHEUS,
            "series": (asked or {}).get("gpus", []),
            "error": (asked or {}).get("gpusError", ""),
            "allocated": views.summarize(job, pods, now).gpus_allocated,
        },
        "idle": idle_flag(job),
        "tensorboard": tensorboard_of(job),
    }


def chart_routes(board: JobBoard, prometheus_url: str | None) -> list[Route]:
    """The charts' data of ``board``'s jobs, asking the Prometheus at
    ``prometheus_url`` (``None``: none)."""

    async def charts(request: Request) -> Response:
        p = request.path_params
        key = job_key(p["namespace"], p["kind"], p["name"])
        found = board.job(key)
        if found is None:
            return SafeJSONResponse({"error": "no such job"}, status_code=404)
        job, pods = found
        seen = [pt.to_json() for pt in board.progress.points(key)]
        data = await asyncio.to_thread(chart_data, job, pods, seen, views.now_utc(), prometheus_url)
        return SafeJSONResponse(data)

    return [Route("/api/jobs/{namespace}/{kind}/{name}/charts", charts, methods=["GET"])]
