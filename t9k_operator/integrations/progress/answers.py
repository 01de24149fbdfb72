"""The progress endpoint's answers: an HTTP status, the result counted in
``t9k_progress_reports_total{result}`` (a refused token's with its
``reason``), a message, and what the reporter is told: when to try again,
when to report next, and whether to checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# The results counted (the label of t9k_progress_reports_total).
ACCEPTED = "accepted"
INVALID = "invalid"
UNAUTHENTICATED = "unauthenticated"
FORBIDDEN = "forbidden"
RATE_LIMITED = "rate_limited"
NOT_FOUND = "not_found"
UNAVAILABLE = "unavailable"
TOO_LARGE = "too_large"


@dataclass(frozen=True)
class Answer:
    status: int
    result: str
    message: str
    retry_after: float | None = None
    next: float | None = None
    """Seconds the reporter waits before its next report (the endpoint's pace)."""
    checkpoint: str = ""
    """When the operator asked the job's replicas to checkpoint, as it is about to
    stop them ("": it does not ask)."""

    def body(self) -> bytes:
        out: dict[str, Any] = {"result": self.result, "message": self.message}
        if self.next is not None:
            out["next"] = round(self.next, 2)
        if self.checkpoint:
            out.update(checkpoint=True, checkpointRequestedAt=self.checkpoint)
        return (json.dumps(out) + "\n").encode()


@dataclass(frozen=True)
class Refusal(Answer):
    """A 401 or 403, with why: the ``reason`` label of the count (tokens.py)."""

    reason: str = ""
