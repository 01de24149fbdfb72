"""Who a progress report's token is, and why it is refused.

Owns reading a TokenReview's status into the pod a token is of (or the
reason it is not a reporter's), and the check that this pod is a current pod
of the job the report is for. Each refusal has a reason, the ``reason``
label of ``t9k_progress_reports_total`` (docs/progress.md, "The endpoint").
"""

from __future__ import annotations

from dataclasses import dataclass

from t9k_operator.informers.informer import SharedInformer
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.integrations.contract import controller_of
from t9k_operator.resources import Resource

POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"
SA_PREFIX = "system:serviceaccount:"

# The reasons of a refusal by the token (401) or by whose pod it is (403).
NO_TOKEN = "no-token"
AUDIENCE = "audience"
"""The token is for another audience (e.g. a pod's default, the API server's)."""
EXPIRED = "expired"
POD_REPLACED = "pod-replaced"
"""The pod the token is bound to is gone, or replaced (another uid)."""
NOT_BOUND = "not-bound"
"""The token is valid, but not a ServiceAccount token bound to a pod."""
INVALID = "invalid"
"""The API server does not accept the token, for any other reason (forged)."""
OTHER_NAMESPACE = "other-namespace"
OTHER_JOB = "other-job"
"""The token's pod is not the job's (another job's pod, or a report for another job)."""

# What the API server says in a TokenReview's status.error (its message is
# the one clue to why it refused a token).
_SAYS = (
    ("is invalid for the target audiences", AUDIENCE),
    ("token has expired", EXPIRED),
    ("token has been invalidated", POD_REPLACED),
)


@dataclass(frozen=True)
class Reviewed:
    """What a TokenReview said of a token: the pod's, or why it is refused."""

    namespace: str = ""
    pod: str = ""
    pod_uid: str = ""
    refusal: str = ""

    @property
    def authenticated(self) -> bool:
        return bool(self.pod)


def reviewed(status: Obj, audience: str) -> Reviewed:
    """A TokenReview's status, read: a pod's token for ``audience``, or refused."""
    if not status.get("authenticated"):
        error = str(status.get("error") or "")
        return Reviewed(refusal=next((why for says, why in _SAYS if says in error), INVALID))
    if audience not in (status.get("audiences") or []):
        return Reviewed(refusal=AUDIENCE)
    user = status.get("user") or {}
    username = str(user.get("username") or "")
    extra = user.get("extra") or {}
    pods, uids = extra.get(POD_NAME) or [], extra.get(POD_UID) or []
    if not username.startswith(SA_PREFIX) or len(pods) != 1 or len(uids) != 1:
        return Reviewed(refusal=NOT_BOUND)
    namespace = username[len(SA_PREFIX) :].split(":", 1)[0]
    return Reviewed(namespace, str(pods[0]), str(uids[0]))


def not_the_jobs(
    who: Reviewed, pods: SharedInformer, namespace: str, job: Obj, resource: Resource
) -> tuple[str, str] | None:
    """Why the token's pod may not report for ``job`` (its reason and the
    message), None when it may."""
    name = job["metadata"]["name"]
    if who.namespace != namespace:
        return (
            OTHER_NAMESPACE,
            f"the token is of a pod in namespace {who.namespace}, not {namespace}",
        )
    pod = pods.get(namespace, who.pod)
    if pod is None or pod["metadata"].get("uid") != who.pod_uid:
        return POD_REPLACED, f"the token's pod {who.pod} is not a pod of {resource.kind} {name}"
    owner = controller_of(pod)
    if (
        owner is None
        or owner.get("uid") != job["metadata"]["uid"]
        or owner.get("kind") != resource.kind
    ):
        return OTHER_JOB, f"pod {who.pod} is not a pod of {resource.kind} {name}"
    return None
