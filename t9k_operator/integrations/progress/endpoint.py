"""The operator's progress endpoint: where the replicas' reports come in.

A report is ``POST /v1/namespaces/<namespace>/<plural>/<job>/progress`` with
a JSON body (``reports.parse_report``) and ``Authorization: Bearer
<token>``, the pod's projected ServiceAccount token bound to the endpoint's
own audience. Each request, in this order (the cheap refusals first, and the
API server asked only for a job that exists and within its job's rate):

1. the path names a job kind the operator runs (404), this replica leads
   (503: a standby's workers are stopped, and its store would never be
   read), the body is at most :data:`MAX_BODY` bytes (413);
2. the job is in the cache (404);
3. the token is good for the endpoint's audience, by a TokenReview (401;
   the refusals of 3 and 4 are counted by their reason: :mod:`tokens`);
   reviews are cached by the token's digest for :data:`REVIEW_TTL` seconds
   (a refusal too, so a flood of one bad token reaches the API server once),
   and the reviews not in the cache are limited for all jobs together (429);
4. the token is a pod's (its review names the pod and its uid), in the
   job's namespace, and that pod, as cached, is the job's: controlled by the
   job with the uid the cache has (403);
5. the job's reports are within its rate (429, with ``Retry-After``): twice
   what its ranks send at the pace they are told (``pacing.Pacer``), and at
   least ``qps`` (``burst``); only its own pods' reports count against it,
   so no one else can use it up and make a reporting job look silent;
6. the body is a report within bounds (400, with the reason), or ``{}``: a
   liveness report (the process is alive; it carries no progress).

Every answer from 6 on carries ``checkpoint: true`` and the request's time
(``checkpointRequestedAt``) while the job's status holds a checkpoint request
for a stop not yet made (:func:`checkpoint_asked`): the operator is about to
stop the replicas and waits for their checkpoints.

An accepted report (202) is kept in the :class:`ProgressStore` and the job
queued after :class:`Coalescer`'s delay (the reconcile already due, when
there is one: the queue keeps one), so however many come, reports cause at
most one reconcile of a job per interval. The answers of 5 and 6 carry
``next``: the seconds the reporter waits before its next report. A reporter
names its process with ``X-T9k-Rank`` (its local rank in the pod), so the
pacer counts each process once. Every answer is counted in
``t9k_progress_reports_total{result}``.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog
from cachetools import TTLCache

from t9k_operator.foundation import metrics
from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.foundation.flowcontrol import TokenBucket
from t9k_operator.informers.informer import SharedInformer
from t9k_operator.integrations.progress.answers import (
    ACCEPTED,
    FORBIDDEN,
    INVALID,
    NOT_FOUND,
    RATE_LIMITED,
    TOO_LARGE,
    UNAUTHENTICATED,
    UNAVAILABLE,
    Answer,
    Refusal,
)
from t9k_operator.integrations.progress.pacing import Pacer
from t9k_operator.integrations.progress.reports import ReportError, parse_report
from t9k_operator.integrations.progress.store import Coalescer, ProgressStore
from t9k_operator.integrations.progress.tokens import (
    NO_TOKEN,
    NOT_BOUND,
    OTHER_JOB,
    OTHER_NAMESPACE,
    POD_REPLACED,
    refused,
)
from t9k_operator.kube import ApiError, Forbidden, KubeClient
from t9k_operator.objects import Obj, controller_ref
from t9k_operator.reconcilers.serving import Route
from t9k_operator.resources import TOKENREVIEWS, Resource

log = structlog.get_logger(__name__)

MAX_BODY = 8192
"""Bytes a report's body may have."""
REVIEW_TTL = 600.0
"""Seconds a token's review is remembered: long enough that the reviews of a
thousand pods' tokens stay within the reviews' rate (whether the pod is still
the job's is checked against the cache on every report)."""
REVIEWS_CACHED = 8192
RANK_HEADER = "X-T9k-Rank"
"""The header a reporter names its process (its local rank in the pod) with."""
MAX_RANK = 255
IDLE_TIMEOUT = 180.0
"""Seconds a kept-alive connection may be idle (past the longest pace)."""
POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"
SA_PREFIX = "system:serviceaccount:"
PATH = re.compile(
    r"^/v1/namespaces/([a-z0-9.-]{1,253})/([a-z0-9.-]{1,63})/([a-z0-9.-]{1,253})/progress$"
)


@dataclass(frozen=True)
class Reviewed:
    """What a TokenReview said of a token: the pod's, or None (refused)."""

    namespace: str = ""
    pod: str = ""
    pod_uid: str = ""
    refusal: str = ""  # why it is refused (tokens.py)

    @property
    def authenticated(self) -> bool:
        return bool(self.pod)


class ProgressEndpoint:
    def __init__(
        self,
        client: KubeClient,
        routes: Mapping[str, Route],
        pods: SharedInformer,
        store: ProgressStore,
        coalescer: Coalescer,
        audience: str,
        *,
        is_leader: Callable[[], bool] = lambda: True,
        qps: float = 10.0,
        burst: int = 50,
        review_qps: float = 20.0,
        review_burst: int = 50,
        clock: Clock = REAL_CLOCK,
        pacer: Pacer | None = None,
    ) -> None:
        self.client, self.routes, self.pods = client, dict(routes), pods
        self.store, self.coalescer, self.audience = store, coalescer, audience
        self.is_leader, self.qps, self.burst, self.clock = is_leader, qps, burst, clock
        self.pacer = Pacer() if pacer is None else pacer
        self._lock = threading.Lock()
        self._reviews: TTLCache[str, Reviewed] = TTLCache(
            REVIEWS_CACHED, ttl=REVIEW_TTL, timer=clock.monotonic
        )
        self._review_bucket = TokenBucket(review_qps, review_burst, clock)
        self._waiting: TTLCache[str, bool] = TTLCache(  # tokens refused a review lately
            REVIEWS_CACHED, ttl=60.0, timer=clock.monotonic
        )
        self._logged: TTLCache[tuple[int, str], bool] = TTLCache(
            1024, ttl=60.0, timer=clock.monotonic
        )
        for route in self.routes.values():
            route.jobs.add_event_handler(on_delete=self._job_gone)

    def _job_gone(self, job: Obj) -> None:
        meta = job["metadata"]
        self.store.forget(meta.get("uid", ""))
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        self.coalescer.forget(key)
        self.pacer.forget(key)

    # -- a request ----------------------------------------------------------------

    def answers_at_once(self, headers: Mapping[str, str]) -> bool:
        """Whether :meth:`handle` answers these headers' request without asking
        the API server (no token, or its review is remembered): the server
        answers it on the thread that read it, not through its pool."""
        token = _bearer(headers)
        if token is None:
            return True
        with self._lock:
            return _digest(token) in self._reviews

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        answer = self._answer(method, path, headers, body)
        reason = answer.reason if isinstance(answer, Refusal) else ""
        metrics.PROGRESS_REPORTS.labels(answer.result, reason).inc()
        if answer.result not in (ACCEPTED, RATE_LIMITED) and self._first_lately(answer, path):
            log.info("progress report refused", path=path, status=answer.status, why=answer.message)
        return answer

    def _first_lately(self, answer: Answer, path: str) -> bool:
        """Whether this refusal of this path was not logged within a minute (a
        flood is counted, not logged line by line)."""
        key = (answer.status, path[:300])
        with self._lock:
            if key in self._logged:
                return False
            self._logged[key] = True
            return True

    def _answer(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        match = PATH.match(path.split("?", 1)[0])
        route = self.routes.get(match.group(2)) if match else None
        if match is None or route is None:
            return Answer(
                404,
                NOT_FOUND,
                "no such endpoint: POST /v1/namespaces/<ns>/<kind plural>/<job>/progress",
            )
        if method != "POST":
            return Answer(405, NOT_FOUND, "only POST")
        if not self.is_leader():
            return Answer(503, UNAVAILABLE, "this replica of the operator is not the leader", 1.0)
        if len(body) > MAX_BODY:
            return Answer(413, TOO_LARGE, f"a report is at most {MAX_BODY} bytes")
        namespace, name = match.group(1), match.group(3)
        job = route.jobs.get(namespace, name)
        if job is None:
            return Answer(404, NOT_FOUND, f"no {route.resource.kind} {namespace}/{name}")
        reviewed = self._authenticate(headers, namespace, job, route.resource)
        if isinstance(reviewed, Answer):
            return reviewed
        key = f"{namespace}/{name}"
        rank = _rank(headers)
        now = self.clock.monotonic()
        pace = self.pacer.heard(key, f"{reviewed.pod}/{rank}", now, _hang_timeout(job))
        over = self.pacer.take(key, now, self.qps, self.burst)
        if over is not None:
            return Answer(429, RATE_LIMITED, f"too many reports for {key}", over, max(over, pace))
        self.pacer.arrived(now)  # the load: reports within their job's rate only
        uid, asked = job["metadata"]["uid"], checkpoint_asked(job)
        if body.strip() == b"{}":  # liveness: the process is alive
            self.store.alive(uid, reviewed.pod, reviewed.pod_uid, self.clock.now())
            return Answer(202, ACCEPTED, "alive", next=pace, checkpoint=asked)
        try:
            report = parse_report(body)
        except ReportError as exc:
            return Answer(400, INVALID, str(exc), next=pace, checkpoint=asked)
        if not self.store.record(uid, reviewed.pod, reviewed.pod_uid, report, self.clock.now()):
            why = "not kept: older than the report kept, or too many pods"
            return Answer(202, ACCEPTED, why, next=pace, checkpoint=asked)
        now = self.clock.monotonic()
        delay = self.coalescer.report(key, now)
        # Asked again when one is due already: a queue drops a later ask while an
        # earlier one is due but not yet handed to a worker, which may read the
        # store before this report.
        route.enqueue_after(key, delay if delay is not None else self.coalescer.due_in(key, now))
        return Answer(202, ACCEPTED, "accepted", next=pace, checkpoint=asked)

    def _authenticate(
        self, headers: Mapping[str, str], namespace: str, job: Obj, resource: Resource
    ) -> Reviewed | Answer:
        """The pod whose token the request bears, when it may report for ``job``
        (by the token's review, then the cache of pods); else the answer."""
        token = _bearer(headers)
        if token is None:
            return Refusal(401, UNAUTHENTICATED, "no bearer token", reason=NO_TOKEN)
        reviewed = self._review(token)
        if reviewed is None:  # after the tokens waiting before it, at the reviews' rate
            with self._lock:
                wait = min(30.0, max(1.0, len(self._waiting) / self._review_bucket.qps))
            wait *= 1.0 - 0.2 * random.random()
            return Answer(429, RATE_LIMITED, "too many token reviews; try again", wait, wait)
        if isinstance(reviewed, Answer):
            return reviewed
        if not reviewed.authenticated:
            why = f"not a pod's token for audience {self.audience} ({reviewed.refusal})"
            return Refusal(401, UNAUTHENTICATED, why, reason=reviewed.refusal)
        refusal = self._not_the_jobs(reviewed, namespace, job, resource)
        return reviewed if refusal is None else refusal

    def _review(self, token: str) -> Reviewed | Answer | None:
        """The token's review (cached); None when over the reviews' rate; an
        Answer when the API server could not tell."""
        digest = _digest(token)
        with self._lock:
            cached = self._reviews.get(digest)
        if cached is not None:
            return cached
        if not self._review_bucket.try_take():
            with self._lock:
                self._waiting[digest] = True
            return None
        review = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": [self.audience]},
        }
        try:
            status = self.client.create(TOKENREVIEWS, review).get("status") or {}
        except Forbidden as exc:
            log.error(
                "the operator may not create TokenReviews, so no report is taken: grant it "
                "create on tokenreviews (e.g. a ClusterRoleBinding to system:auth-delegator; "
                "docs/progress.md)",
                error=str(exc),
            )
            return Answer(503, UNAVAILABLE, "the operator cannot review tokens", 60.0)
        except ApiError as exc:
            log.warning("token review failed", error=str(exc))
            return Answer(503, UNAVAILABLE, "cannot review the token now", 5.0)
        result = _reviewed(status, self.audience)
        with self._lock:
            self._reviews[digest] = result
            self._waiting.pop(digest, None)
        return result

    def _not_the_jobs(
        self, who: Reviewed, namespace: str, job: Obj, resource: Resource
    ) -> Refusal | None:
        """Why the token's pod may not report for ``job`` (None: it may)."""
        name = job["metadata"]["name"]
        if who.namespace != namespace:
            why = f"the token is of a pod in namespace {who.namespace}, not {namespace}"
            return Refusal(403, FORBIDDEN, why, reason=OTHER_NAMESPACE)
        pod = self.pods.get(namespace, who.pod)
        if pod is None or pod["metadata"].get("uid") != who.pod_uid:
            why = f"the token's pod {who.pod} is not a pod of {resource.kind} {name}"
            return Refusal(403, FORBIDDEN, why, reason=POD_REPLACED)
        owner = controller_ref(pod)
        if (
            owner is None
            or owner.get("uid") != job["metadata"]["uid"]
            or owner.get("kind") != resource.kind
        ):
            why = f"pod {who.pod} is not a pod of {resource.kind} {name}"
            return Refusal(403, FORBIDDEN, why, reason=OTHER_JOB)
        return None


def _bearer(headers: Mapping[str, str]) -> str | None:
    value = headers.get("Authorization") or headers.get("authorization") or ""
    scheme, _, token = value.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 16384:
        return None
    return token


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _rank(headers: Mapping[str, str]) -> int:
    """The reporting process's local rank its header names (0 without one)."""
    value = headers.get(RANK_HEADER) or headers.get(RANK_HEADER.lower()) or "0"
    try:
        rank = int(value)
    except ValueError:
        return 0
    return rank if 0 <= rank <= MAX_RANK else 0


def _hang_timeout(job: Obj) -> float | None:
    """The job's hangTimeoutSeconds, if it asks to be judged for hangs."""
    policy = (job.get("spec") or {}).get("runPolicy") or {}
    progress = policy.get("progress") if isinstance(policy, dict) else None
    value = progress.get("hangTimeoutSeconds") if isinstance(progress, dict) else None
    return float(value) if isinstance(value, int | float) and value > 0 else None


def checkpoint_asked(job: Obj) -> str:
    """When the job, as cached, asked its replicas to checkpoint: the time of the
    request the operator wrote (``status.checkpoint.requestedAt``) for a stop it
    has not made yet (no ``stoppedAt``); "" when it does not ask."""
    status = job.get("status") or {}
    saved = status.get("checkpoint") if isinstance(status, dict) else None
    if not isinstance(saved, dict) or saved.get("stoppedAt"):
        return ""
    return str(saved.get("requestedAt") or "")


def _reviewed(status: Obj, audience: str) -> Reviewed:
    """A TokenReview's status, read: a pod's token for ``audience``, or refused."""
    why = refused(status, audience)
    if why:
        return Reviewed(refusal=why)
    user = status.get("user") or {}
    username = str(user.get("username") or "")
    extra = user.get("extra") or {}
    pods, uids = extra.get(POD_NAME) or [], extra.get(POD_UID) or []
    if not username.startswith(SA_PREFIX) or len(pods) != 1 or len(uids) != 1:
        return Reviewed(refusal=NOT_BOUND)  # not a ServiceAccount token bound to a pod
    namespace = username[len(SA_PREFIX) :].split(":", 1)[0]
    return Reviewed(namespace, str(pods[0]), str(uids[0]))
