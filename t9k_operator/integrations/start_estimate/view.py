"""What ``t9k`` and the SDK show of a waiting job's ``status.startEstimate``:
the estimate typed (:func:`start_estimate`), and ``t9k list``'s START column
(:func:`start_column`): ``~14:05Z (in 23m)``, else the job's place
(``#3 in queue``) or what it lacks, or ``never``.

Pure: the job and its pods as listed, and the time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from t9k_operator.api.parts import CommandView, ListColumn
from t9k_operator.integrations.start_estimate.build import StartEstimateStatus
from t9k_operator.objects import parse_time
from t9k_operator.sdk import views

Obj = Mapping[str, Any]


def start_estimate(job: Obj) -> StartEstimateStatus | None:
    """``status.startEstimate`` of a job that waits to start, typed (None: it has
    none, or one this SDK cannot read)."""
    found = (job.get("status") or {}).get("startEstimate")
    if not isinstance(found, dict) or views.phase(job) != "Pending":
        return None
    try:
        return StartEstimateStatus.model_validate(found)
    except ValueError:
        return None


def start_column(job: Obj, pods: Sequence[Obj], now: datetime) -> str:
    """``t9k list``'s START: ``~14:05Z (in 23m)``, else the job's place
    (``#3 in queue``) or what it lacks; ``never`` for a job that never fits
    as it is (``t9k describe`` says why); ``starting`` for a Pending job whose
    pods (among ``pods``) are all placed, ``unknown`` for one without an
    estimate; "" for a job that is not Pending."""
    if views.phase(job) != "Pending":
        return ""
    estimate = start_estimate(job)
    if estimate is None:
        mine = views.job_pods(job, pods)
        return "starting" if mine and all(p["spec"].get("nodeName") for p in mine) else "unknown"
    if estimate.never_fits:
        return "never"
    at = parse_time(estimate.estimated_start_time)
    if at is not None:
        left = (at - now).total_seconds()
        return f"~{at:%H:%M}Z (in {views.human_duration(left)})" if left >= 60 else "~now"
    if estimate.cluster_queue_position is not None:
        return f"#{estimate.cluster_queue_position} in queue"
    if estimate.lacking:
        return f"lacks {estimate.lacking[0].resource}"
    return "unknown"


class StartEstimateView(CommandView):
    """``t9k list``'s START column."""

    columns = (ListColumn("START", start_column),)


VIEW = StartEstimateView()
