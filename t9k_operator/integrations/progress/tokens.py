"""Why the progress endpoint refuses a report's token: the reasons, the
``reason`` label of ``t9k_progress_reports_total`` (docs/progress.md, "The
endpoint"), and reading the API server's own reason from a TokenReview that
did not authenticate the token.
"""

from __future__ import annotations

from t9k_operator.objects import Obj

# Refused by the token (401).
NO_TOKEN = "no-token"
AUDIENCE = "audience"
"""The token is for another audience (e.g. a pod's default one, the API server's)."""
EXPIRED = "expired"
POD_REPLACED = "pod-replaced"
"""The pod the token is bound to is gone, or was replaced by one of another uid
(by the API server's review: 401; by the operator's cache of pods: 403)."""
NOT_BOUND = "not-bound"
"""The token is good, but not a ServiceAccount's token bound to a pod."""
INVALID = "invalid"
"""The API server refuses the token for any other reason (e.g. forged)."""
# Refused by whose pod the token is (403).
OTHER_NAMESPACE = "other-namespace"
OTHER_JOB = "other-job"
"""Another job's pod, or a report for another job."""

# What the API server says in a TokenReview's status.error when it refuses a
# token (its message is the one clue to why; pkg/serviceaccount of Kubernetes).
_SAYS = (
    ("is invalid for the target audiences", AUDIENCE),
    ("token has expired", EXPIRED),
    ("token has been invalidated", POD_REPLACED),
)


def refused(status: Obj, audience: str) -> str:
    """Why the TokenReview ``status`` does not make its token one for
    ``audience`` ("" when it does: whether it names a pod is the caller's)."""
    if not status.get("authenticated"):
        error = str(status.get("error") or "")
        return next((why for says, why in _SAYS if says in error), INVALID)
    if audience not in (status.get("audiences") or []):
        return AUDIENCE
    return ""
