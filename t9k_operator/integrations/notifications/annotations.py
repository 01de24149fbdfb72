"""What a job chooses of its notifications, in its annotations (which strict
server-side apply accepts, unlike an unknown spec field):

- ``notifications.tensorstack.dev/to``: endpoints of its namespace by the
  name of their Secret, comma-separated (``team-slack,oncall``);
- ``notifications.tensorstack.dev/on``: the events it is told of,
  comma-separated, of :data:`EVENTS` (default: all but ``start-estimate``);
- ``notifications.tensorstack.dev/start-estimate-over``: tell when the job,
  waiting to start, is estimated to start later than this from now (``30m``,
  ``2h``, ``90s``), or never; this turns ``start-estimate`` on.

Pure: :func:`choice` reads them and says what is wrong with them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PREFIX = "notifications.tensorstack.dev/"
TO = PREFIX + "to"
ON = PREFIX + "on"
OVER = PREFIX + "start-estimate-over"

SUCCEEDED, FAILED, HUNG, GPUS_IDLE = "succeeded", "failed", "hung", "gpus-idle"
PREEMPTED, RESTARTED, START_ESTIMATE = "preempted", "restarted", "start-estimate"
EVENTS = (SUCCEEDED, FAILED, HUNG, GPUS_IDLE, PREEMPTED, RESTARTED, START_ESTIMATE)
"""Every event a message may be sent for, as the annotations name them."""
DEFAULT_EVENTS = frozenset(EVENTS) - {START_ESTIMATE}

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Choice:
    """What the job chose: endpoint Secrets named (in its namespace), events,
    the start-estimate threshold (seconds; None: not told), and what was wrong."""

    to: tuple[str, ...] = ()
    on: frozenset[str] = DEFAULT_EVENTS
    over: int | None = None
    problems: tuple[str, ...] = ()


def duration(text: str) -> int | None:
    """``30m``, ``2h``, ``90s``, ``1d`` or plain seconds; None when malformed."""
    found = _DURATION.match(text.strip())
    if found is None:
        return None
    return int(found.group(1)) * _UNITS[found.group(2)]


def _items(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def choice(annotations: Mapping[str, str]) -> Choice:
    """The job's choice; each malformed annotation is named in ``problems``
    and left out (the rest still holds)."""
    problems: list[str] = []
    to: list[str] = []
    for name in _items(annotations.get(TO, "")):
        if _NAME.match(name):
            if name not in to:
                to.append(name)
        else:
            problems.append(f"annotation {TO}: {name!r} is not a Secret's name")
    on = set(DEFAULT_EVENTS)
    if ON in annotations:
        chosen = _items(annotations[ON])
        unknown = [e for e in chosen if e not in EVENTS]
        if unknown:
            problems.append(
                f"annotation {ON}: unknown event(s) {', '.join(unknown)} "
                f"(known: {', '.join(EVENTS)})"
            )
        on = {e for e in chosen if e in EVENTS}
    over: int | None = None
    if OVER in annotations:
        over = duration(annotations[OVER])
        if over is None:
            problems.append(
                f"annotation {OVER}: {annotations[OVER]!r} is not a duration (30m, 2h, 90s)"
            )
        else:
            on.add(START_ESTIMATE)
    if over is None:
        on.discard(START_ESTIMATE)
    return Choice(tuple(to), frozenset(on), over, tuple(problems))
