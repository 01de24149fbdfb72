"""``status.notifications``: the job's delivery record (``record.py``), its
schema and what ``t9k describe`` shows of it.

Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.parts import StatusPart

SECTION = "Notifications"


class DeliveryStatus(T9kModel):
    """How the message's delivery to one endpoint ended."""

    endpoint: str = Field(description="namespace/name of the endpoint's Secret.")
    state: str = Field(description="Delivered, or GaveUp.")
    attempts: int = Field(description="How many times it was sent.")
    time: str = Field(description="When it ended (RFC 3339).")
    error: str | None = Field(default=None, description="The last failure, when it gave up.")


class MessageStatus(T9kModel):
    """One message the job's status called for."""

    id: str = Field(description="The delivery id: X-T9k-Delivery of every try.")
    event: str = Field(description="succeeded, failed, hung, gpus-idle, preempted, ...")
    time: str = Field(description="When the event happened (RFC 3339).")
    reason: str = Field(description="The event's reason, as the status says it.")
    message: str = Field(description="What the status said of the event.")
    queued_time: str = Field(description="When the message was recorded (RFC 3339).")
    to: list[str] = Field(description="The endpoints it goes to (namespace/name of each Secret).")
    state: str = Field(description="Pending, Delivered (to every endpoint) or Failed.")
    deliveries: list[DeliveryStatus] = Field(
        default_factory=list, description="Each endpoint's outcome, once it has one."
    )


class NotificationsStatus(T9kModel):
    """The job's notifications: what was sent, where, and how it went."""

    messages: list[MessageStatus] = Field(default_factory=list, description="The latest messages.")
    problems: list[str] | None = Field(
        default=None, description="What is wrong with the job's notification annotations."
    )


def _lines(part: Mapping[str, Any]) -> list[str]:
    lines = [f"problem: {p}" for p in part.get("problems") or []]
    for m in part.get("messages") or []:
        done = {d.get("endpoint"): d for d in m.get("deliveries") or []}
        where = []
        for ep in m.get("to") or []:
            d = done.get(ep)
            if d is None:
                where.append(f"{ep} pending")
            else:
                tries = d.get("attempts")
                what = f"{ep} {d.get('state')} ({tries} attempt{'s' if tries != 1 else ''})"
                if d.get("error"):
                    what += f": {d['error']}"
                where.append(what)
        lines.append(f"{m.get('event')} at {m.get('time')}: {m.get('state')}; {', '.join(where)}")
    return lines


NOTIFICATIONS_PART = StatusPart(
    key="notifications",
    model=NotificationsStatus,
    description=(
        "The job's notifications (docs/notifications.md): each message its status "
        "called for, the endpoints it goes to and each one's outcome; and what is "
        "wrong with its notification annotations."
    ),
    section=SECTION,
    lines=_lines,
)
