"""The engine's words: its reasons, the time format of the status, and the
condition bookkeeping (``lastTransitionTime`` moves only when a status does).
Pure."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from t9k_operator.objects import Obj, format_time

TERMINAL = ("Succeeded", "Failed")


class Reason(StrEnum):
    """The engine's reasons, for conditions and Events. Control flow never reads
    them back: what a pass decided is in the :class:`Plan`'s fields (a stop
    gate may keep the reason of a stop it holds, as it wrote it)."""

    NONE = "-"
    PAUSED = "Paused"
    RESUMED = "Resumed"
    RESTARTING = "Restarting"
    REPLICA_FAILED = "ReplicaFailed"
    BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    UNSCHEDULABLE = "Unschedulable"
    FAILED_CREATE = "FailedCreate"
    SCHEDULE_TIMEOUT = "ScheduleTimeout"
    SUCCEEDED = "Succeeded"
    INVALID_SPEC = "InvalidSpec"
    POD_CANNOT_START = "PodCannotStart"
    DISRUPTED = "Disrupted"
    TOO_MANY_DISRUPTIONS = "TooManyDisruptions"
    NODE_NOT_READY = "NodeNotReady"
    NODE_READY = "NodeReady"
    HUNG = "Hung"
    REPORTING = "Reporting"


# -- time helpers -------------------------------------------------------------------


fmt_time = format_time
"""A condition's (or status's) time as ``metav1.Time``."""


# -- conditions ---------------------------------------------------------------------


def set_condition(
    conditions: list[Obj], type_: str, status: str, reason: str, message: str, now: datetime
) -> None:
    """Set a condition; ``lastTransitionTime`` moves only when ``status`` moves."""
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = fmt_time(now)
            cond["status"], cond["reason"], cond["message"] = status, str(reason), message
            return
    conditions.append(
        {
            "type": type_,
            "status": status,
            "reason": str(reason),
            "message": message,
            "lastTransitionTime": fmt_time(now),
        }
    )


def get_condition(status: Mapping[str, Any], type_: str) -> Obj | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None
