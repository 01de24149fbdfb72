"""A message as it is sent: the job (kind, namespace, name, phase, how long it
has run, its progress, a link) and the event, from the job as cached and the
record's entry; and its one text, which the chat formats and e-mail carry.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from t9k_operator.objects import parse_time

TITLES = {
    "succeeded": "Succeeded",
    "failed": "Failed",
    "hung": "Hung",
    "gpus-idle": "GPUs idle",
    "preempted": "Preempted",
    "restarted": "Restarted",
    "start-estimate": "Start estimate",
}
PLACEHOLDERS = ("namespace", "name", "kind", "plural", "uid")
"""What a console URL template (``--console-url``) may name, in braces."""


@dataclass(frozen=True)
class Message:
    id: str
    event: str
    time: str
    reason: str
    text: str  # what the status said of the event
    kind: str
    namespace: str
    name: str
    uid: str
    phase: str
    duration_seconds: int | None
    progress: str | None
    link: str | None


def link(template: str | None, kind: str, plural: str, namespace: str, name: str, uid: str) -> str:
    """The console's page of the job from ``template``; "" without one."""
    if not template:
        return ""
    return template.format(namespace=namespace, name=name, kind=kind, plural=plural, uid=uid)


def duration(status: Mapping[str, Any], now: datetime) -> int | None:
    """Seconds from the job's start to its completion (or ``now``)."""
    start = parse_time(status.get("startTime"))
    if start is None:
        return None
    end = parse_time(status.get("completionTime")) or now
    return max(0, int((end - start).total_seconds()))


def human(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def build(
    job: Mapping[str, Any],
    entry: Mapping[str, Any],
    console: str | None,
    plural: str,
    now: datetime,
) -> Message:
    """The message of the record's ``entry`` about ``job``."""
    meta = job.get("metadata") or {}
    status = job.get("status") or {}
    kind, namespace, name = str(job.get("kind")), str(meta.get("namespace")), str(meta.get("name"))
    uid = str(meta.get("uid"))
    progress = (status.get("progress") or {}).get("summary")
    return Message(
        id=str(entry["id"]),
        event=str(entry["event"]),
        time=str(entry.get("time") or ""),
        reason=str(entry.get("reason") or ""),
        text=str(entry.get("message") or ""),
        kind=kind,
        namespace=namespace,
        name=name,
        uid=uid,
        phase=str(status.get("phase") or ""),
        duration_seconds=duration(status, now),
        progress=str(progress) if progress else None,
        link=link(console, kind, plural, namespace, name, uid) or None,
    )


def subject(m: Message) -> str:
    return f"[t9k] {TITLES.get(m.event, m.event)}: {m.kind} {m.namespace}/{m.name}"


def text(m: Message) -> str:
    """The message as a few lines of plain text."""
    lines = [
        subject(m),
        f"phase {m.phase or '-'}, ran {human(m.duration_seconds)}, progress {m.progress or '-'}",
        f"{m.reason}: {m.text}" if m.text else m.reason,
    ]
    if m.link:
        lines.append(m.link)
    return "\n".join(line for line in lines if line)
