"""The delivery record, ``status.notifications``: every message the job's
status called for that has an endpoint, where it goes (``to``, fixed when it
is first recorded) and each endpoint's outcome; and what is wrong with the
job's choice of endpoints (``problems``).

The message is recorded in the same status write as the change that calls
for it, before anything is sent: an operator that dies before the send finds
it ``Pending`` and sends it; one that dies after an endpoint's outcome is
recorded never sends it there again. The deliverer reports outcomes; the
next reconcile of the job records them (:func:`merge`).

Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from t9k_operator.integrations.notifications.events import Due

KEPT = 20
"""Messages kept in the record; the oldest settled ones go first."""
PENDING, DELIVERED, FAILED = "Pending", "Delivered", "Failed"
"""A message's state: not every endpoint has an outcome; all delivered; one gave up."""
GAVE_UP = "GaveUp"
"""An endpoint's outcome besides Delivered."""
SENT, NOT_SENT = "NotificationSent", "NotificationFailed"
MISCONFIGURED = "NotificationsMisconfigured"
"""The reasons of the Events."""

Event = tuple[str, str, str]


@dataclass(frozen=True)
class Outcome:
    """How a delivery of a message to an endpoint ended, as the deliverer reports it."""

    endpoint: str
    state: str  # Delivered | GaveUp
    attempts: int
    time: str
    error: str = ""


def state_of(message: Mapping[str, Any]) -> str:
    """Pending until every endpoint of ``to`` has an outcome."""
    done = {d.get("endpoint"): d.get("state") for d in message.get("deliveries") or []}
    to = message.get("to") or []
    if any(ep not in done for ep in to):
        return PENDING
    return DELIVERED if all(done[ep] == DELIVERED for ep in to) else FAILED


def pending(record: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The record's messages some endpoint has yet to get."""
    return [m for m in (record or {}).get("messages") or [] if state_of(m) == PENDING]


def merge(
    prev: Mapping[str, Any] | None,
    due: Sequence[Due],
    targets: Callable[[str], tuple[str, ...]],
    outcomes: Mapping[str, Mapping[str, Outcome]],
    problems: Sequence[str],
    now: str,
) -> tuple[dict[str, Any] | None, list[Event]]:
    """The record after ``prev``: ``due`` messages not yet in it added (those
    with an endpoint: ``targets(event)``), the deliverer's ``outcomes`` (by
    message id, then endpoint) of pending ones recorded, ``problems`` kept;
    and the Events to tell (an outcome, a new problem). None: nothing to record."""
    events: list[Event] = []
    messages = [
        {**m, "deliveries": [dict(d) for d in m.get("deliveries") or []]}
        for m in (prev or {}).get("messages") or []
    ]
    known = {m.get("id") for m in messages}
    for d in due:
        to = targets(d.event)
        if d.id in known or not to:
            continue
        messages.append(
            {
                "id": d.id,
                "event": d.event,
                "time": d.time,
                "reason": d.reason,
                "message": d.message,
                "queuedTime": now,
                "to": list(to),
                "deliveries": [],
            }
        )
    for m in messages:
        events.extend(_outcomes(m, outcomes))
        m["state"] = state_of(m)
    while len(messages) > KEPT:
        settled = [i for i, m in enumerate(messages) if m["state"] != PENDING]
        if not settled:
            break
        del messages[settled[0]]
    before = list((prev or {}).get("problems") or [])
    fresh = [p for p in problems if p not in before]
    if fresh:
        events.append(("Warning", MISCONFIGURED, "; ".join(fresh)))
    if not messages and not problems:
        return None, events
    record: dict[str, Any] = {"messages": messages}
    if problems:
        record["problems"] = list(problems)
    return record, events


def _outcomes(m: dict[str, Any], outcomes: Mapping[str, Mapping[str, Outcome]]) -> list[Event]:
    """Record in ``m`` the outcomes of its endpoints that have none yet; their Events."""
    events: list[Event] = []
    have = {d.get("endpoint") for d in m["deliveries"]}
    for ep in m.get("to") or []:
        got = outcomes.get(str(m["id"]), {}).get(ep)
        if ep in have or got is None:
            continue
        entry: dict[str, Any] = {
            "endpoint": ep,
            "state": got.state,
            "attempts": got.attempts,
            "time": got.time,
        }
        if got.error:
            entry["error"] = got.error
        m["deliveries"].append(entry)
        if got.state == DELIVERED:
            events.append(("Normal", SENT, f"told {ep} of {m['event']} ({m['id'][:8]})"))
        else:
            events.append(
                (
                    "Warning",
                    NOT_SENT,
                    f"gave up telling {ep} of {m['event']} ({m['id'][:8]}) after "
                    f"{got.attempts} attempt(s): {got.error}",
                )
            )
    return events
