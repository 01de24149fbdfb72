"""The rows of the describe screen's tables (conditions, replicas, restarts,
events), as text, from objects and ``now``; :func:`t9k_operator.cli.render.describe`
lays them out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from t9k_operator.objects import parse_time
from t9k_operator.sdk import views

Obj = Mapping[str, Any]


def age(value: Any, now: datetime) -> str:
    """How long before ``now`` the timestamp ``value`` was, in words."""
    t = parse_time(value)
    return views.human_duration((now - t).total_seconds()) if t else "<unknown>"


def condition_rows(job: Obj, now: datetime) -> list[list[str]]:
    """The job's conditions, each with its age."""
    return [
        [
            str(c.get("type", "")),
            str(c.get("status", "")),
            str(c.get("reason", "")),
            age(c.get("lastTransitionTime"), now),
            str(c.get("message", "")),
        ]
        for c in views.conditions(job)
    ]


def replica_rows(job: Obj, pods: Sequence[Obj]) -> list[list[str]]:
    """Each replica's phase, exit code, restarts and node."""
    return [
        [r.replica, r.phase, r.exit_code or "-", str(r.restarts), r.node or "<none>"]
        for r in views.replica_rows(job, pods)
    ]


def restart_rows(status: Obj, name: str, now: datetime) -> list[list[str]]:
    """The restarts the status records: when, of which replica, why, on which
    node, and whether the restart limit counts it."""
    return [
        [
            age(r.get("time"), now) + " ago",
            views.replica_of(name, str(r.get("replica", ""))),
            "-" if r.get("exitCode") is None else str(r["exitCode"]),
            str(r.get("reason", "")),
            str(r.get("node", "")) or "<none>",
            "yes" if r.get("counted", True) else "no",
        ]
        for r in status.get("restarts") or []
    ]


def event_rows(events: Sequence[Obj], now: datetime) -> list[list[str]]:
    """The last 20 events, each with its age and the object it is about."""
    return [
        [
            age(
                e.get("lastTimestamp")
                or e.get("eventTime")
                or (e.get("metadata") or {}).get("creationTimestamp"),
                now,
            ),
            str(e.get("type", "")),
            str(e.get("reason", "")),
            _involved(e),
            str(e.get("message", "")).replace("\n", " "),
        ]
        for e in events[-20:]
    ]


def _involved(event: Obj) -> str:
    involved = event.get("involvedObject") or {}
    return f"{involved.get('kind', '')}/{involved.get('name', '')}"
