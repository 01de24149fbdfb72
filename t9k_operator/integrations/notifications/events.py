"""Which messages a job's status calls for, read from the status alone
(level-triggered): each is keyed by what in the status marks it (a
condition's transition time, a count), so the same status always gives the
same messages with the same ids, and an operator that died between a change
and its message finds the message again in the status it left.

- the job's end: ``Succeeded``, or ``Failed`` with its condition's reason and
  message (which name the replica and its exit code);
- ``Hung`` and ``GPUsIdle`` turning True;
- a preemption: Kueue evicting the job (its Running condition's reason
  ``EvictedByKueue``), or a disruption of its pods (``disruptionCount``);
- a restart of the whole job (``restartScope: Job``: ``restartCount``);
- a waiting job estimated to start later than the threshold it chose, or
  never (``status.startEstimate``).

Only the latest of each is derived: an older one is in the record already, or
was never to be sent. An event older than :data:`MAX_AGE` when first seen (a
job that ended before the operator sent notifications) is not sent.

Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from t9k_operator.integrations.notifications.annotations import (
    FAILED,
    GPUS_IDLE,
    HUNG,
    PREEMPTED,
    RESTARTED,
    START_ESTIMATE,
    SUCCEEDED,
    Choice,
)
from t9k_operator.objects import format_time, parse_time

MAX_AGE = timedelta(hours=24)
EVICTED_BY_KUEUE = "EvictedByKueue"
"""The Kueue integration's reason on the Running condition of an evicted job."""


@dataclass(frozen=True)
class Due:
    """A message the status calls for."""

    id: str  # the delivery id: the same for the same job and mark, whoever derives it
    event: str  # one of annotations.EVENTS
    time: str  # when it happened (RFC 3339)
    reason: str
    message: str


def message_id(uid: str, mark: str) -> str:
    """The delivery id of the message marked ``mark`` of the job ``uid``."""
    return hashlib.sha256(f"{uid}/{mark}".encode()).hexdigest()[:32]


def _condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def _last_restart(status: Mapping[str, Any], counted: bool) -> Mapping[str, Any]:
    found = [r for r in status.get("restarts") or [] if bool(r.get("counted")) == counted]
    return found[-1] if found else {}


Mark = tuple[str, str, str, str, str]
"""An event the status marks: event, mark, time, reason, message."""


def derive(
    uid: str,
    status: Mapping[str, Any],
    choice: Choice,
    restart_scope: str,
    now: datetime,
) -> list[Due]:
    """The messages ``status`` calls for that the job chose, oldest first."""
    out = []
    for event, mark, at, reason, message in [
        *_conditions(status),
        *_counts(status, restart_scope),
        *_estimate(status, choice, now),
    ]:
        when = parse_time(at)
        if event not in choice.on or when is None or now - when > MAX_AGE:
            continue
        out.append(Due(message_id(uid, mark), event, at, reason, message))
    return sorted(out, key=lambda d: (d.time, d.id))


def _conditions(status: Mapping[str, Any]) -> list[Mark]:
    """The job's end, a hang, idle GPUs, an eviction by Kueue."""
    found: list[Mark] = []
    phase = status.get("phase")
    if phase in ("Succeeded", "Failed"):
        cond = _condition(status, "Completed" if phase == "Succeeded" else "Failed")
        at = str(status.get("completionTime") or cond.get("lastTransitionTime") or "")
        event = SUCCEEDED if phase == "Succeeded" else FAILED
        reason = str(cond.get("reason") or phase)
        found.append((event, f"{phase}@{at}", at, reason, str(cond.get("message") or "")))
    for event, type_ in ((HUNG, "Hung"), (GPUS_IDLE, "GPUsIdle")):
        cond = _condition(status, type_)
        if cond.get("status") == "True":
            at = str(cond.get("lastTransitionTime") or "")
            found.append(
                (event, f"{type_}@{at}", at, str(cond.get("reason")), str(cond.get("message")))
            )
    running = _condition(status, "Running")
    if running.get("status") == "False" and running.get("reason") == EVICTED_BY_KUEUE:
        at = str(running.get("lastTransitionTime") or "")
        found.append(
            (PREEMPTED, f"evicted@{at}", at, EVICTED_BY_KUEUE, str(running.get("message")))
        )
    return found


def _counts(status: Mapping[str, Any], restart_scope: str) -> list[Mark]:
    """The latest disruption, the latest restart of the whole job."""
    found: list[Mark] = []
    disruptions = int(status.get("disruptionCount") or 0)
    if disruptions:
        last = _last_restart(status, counted=False)
        what = f"pod {last.get('replica')} {last.get('reason')}" if last else "a pod"
        found.append(
            (
                PREEMPTED,
                f"disrupted#{disruptions}",
                str(last.get("time") or ""),
                "Disrupted",
                f"{what}: disruption {disruptions}, the replica is recreated",
            )
        )
    restarts = int(status.get("restartCount") or 0)
    if restart_scope == "Job" and restarts:
        last = _last_restart(status, counted=True)
        code = f" (exit code {last['exitCode']})" if "exitCode" in last else ""
        found.append(
            (
                RESTARTED,
                f"restarted#{restarts}",
                str(last.get("time") or ""),
                "Restarting",
                f"every replica restarted after {last.get('replica', 'a replica')}{code}: "
                f"restart {restarts}",
            )
        )
    return found


def _estimate(status: Mapping[str, Any], choice: Choice, now: datetime) -> list[Mark]:
    """A waiting job's start estimated past the threshold it chose, or never."""
    estimate = status.get("startEstimate") or {}
    if status.get("phase") != "Pending" or not estimate or choice.over is None:
        return []
    late = _late(estimate, choice.over, now)
    return [(START_ESTIMATE, "start-estimate", format_time(now), "StartLate", late)] if late else []


def _late(estimate: Mapping[str, Any], over: int, now: datetime) -> str:
    """Why the estimate crosses the threshold, or "" when it does not."""
    reason = str(estimate.get("reason") or "")
    if estimate.get("neverFits"):
        return f"the job never starts as it is: {reason}"
    at = parse_time(estimate.get("estimatedStartTime"))
    if at is None or at - now <= timedelta(seconds=over):
        return ""
    minutes = int((at - now).total_seconds() // 60)
    return f"the job is estimated to start at {format_time(at)}, in {minutes} min: {reason}"
