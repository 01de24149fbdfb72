"""A TensorBoard's pass, planned: what its Service and its pod need, as the
pipeline's :class:`~t9k_operator.reconcilers.pipeline.contract.Action` s, the
readiness each leaves, and the status to write.

Pure, as the jobs' plan is: the controller (``controller.py``) reads the
caches, plans here and carries the actions out through the pipeline's writer,
whose refusals come back here (:func:`refused`) as the Ready condition.

Every write is a soft action: a refusal, or a name held by another owner, is
told in the TensorBoard's Ready condition, never a job's problem. Creates are
strict: a field the API does not know is refused, never dropped in silence.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime

from t9k_operator.api import tensorboard as api
from t9k_operator.api.tensorboard import TensorBoardObject
from t9k_operator.integrations.tensorboard import build
from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.integrations.tensorboard.status import (
    Readiness,
    pod_readiness,
    render_status,
    replace_in,
)
from t9k_operator.objects import Obj, controller_ref
from t9k_operator.reconcilers.pipeline.contract import Action, Refusal
from t9k_operator.reconcilers.pipeline.queued_pods import QueuesPods, waiting
from t9k_operator.resources import PODS, SERVICES, Resource

POD = "the TensorBoard's pod"
SERVICE = "the TensorBoard's Service"


@dataclass(frozen=True)
class Step:
    """What one child needs this pass: a write (None: none), the TensorBoard's
    readiness once it is done (None: the child has nothing to say), and when to
    look at it again."""

    action: Action | None = None
    readiness: Readiness | None = None
    requeue_after: float | None = None


def create(resource: Resource, child: Obj, what: str) -> Action:
    return Action("create", resource, child, what, soft=True, strict=True)


def delete(pod: Obj) -> Action:
    """The pod's delete, with its uid as precondition: never its successor's."""
    meta = pod["metadata"]
    doomed = {"metadata": {k: meta[k] for k in ("name", "namespace", "uid")}}
    return Action("delete", PODS, doomed, POD, soft=True)


def name_conflict(label: str) -> Readiness:
    return Readiness(
        False,
        "NameConflict",
        f"{label} already exists and is not this TensorBoard's: delete it or rename "
        "the TensorBoard",
    )


def clash(seen: Obj, tb: TensorBoardObject) -> Readiness | None:
    """NameConflict when ``seen`` (a child's name) is not this TensorBoard's."""
    if (controller_ref(seen) or {}).get("uid") == tb.uid:
        return None
    return name_conflict(f"{seen.get('kind', 'object')} {seen['metadata']['name']}")


def service_step(tb: TensorBoardObject, seen: Obj | None) -> Step:
    """The Service is created when missing; one of another owner is a conflict."""
    if seen is not None:
        return Step(readiness=clash(seen, tb))
    return Step(create(SERVICES, build.build_service(tb), SERVICE))


SUSPENDED = Readiness(
    False,
    api.SUSPENDED,
    "spec.suspend is true: its pod is deleted, its Service kept; spec.suspend: false "
    "starts it again",
)


def queue_of(tb: TensorBoardObject) -> str | None:
    """The queue the TensorBoard names (``spec.scheduler.t9kScheduler.queue``), or None."""
    t9k = tb.spec.scheduler.t9k_scheduler if tb.spec.scheduler else None
    return t9k.queue if t9k is not None and t9k.queue else None


def wanted_pod(tb: TensorBoardObject, queuer: QueuesPods | None) -> Obj:
    """The pod the TensorBoard should have: queued by ``queuer`` when it names a
    queue and one is on (its spec hash covers what the queue adds, so an
    operator that starts queueing it, or stops, replaces it)."""
    queue = queue_of(tb)
    if queue is None or queuer is None:
        return build.build_pod(tb)
    return build.build_pod(tb, lambda pod: queuer.queue_pod(pod, queue))


def pod_step(
    tb: TensorBoardObject, seen: Obj | None, now: datetime, queuer: QueuesPods | None = None
) -> Step:
    """The pod is created when missing (queued by ``queuer`` when the TensorBoard
    names a queue), and replaced when built from an older spec, or a while after
    it ended; deleted while the TensorBoard is suspended; its readiness otherwise."""
    if seen is not None:
        conflict = clash(seen, tb)
        if conflict is not None:
            return Step(readiness=conflict)
    if tb.spec.suspend:
        if seen is None or seen["metadata"].get("deletionTimestamp"):
            return Step(readiness=SUSPENDED)
        return Step(delete(seen), SUSPENDED)
    want = wanted_pod(tb, queuer)
    if seen is None:
        return Step(create(PODS, want, POD), pod_readiness(None))
    readiness = pod_readiness(seen)
    if seen["metadata"].get("deletionTimestamp"):
        return Step(readiness=readiness)
    annotations = seen["metadata"].get("annotations") or {}
    if annotations.get(build.SPEC_HASH) != want["metadata"]["annotations"][build.SPEC_HASH]:
        replacing = Readiness(False, "Replacing", "its spec changed: the pod is replaced")
        return Step(delete(seen), replacing)
    if (seen.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        wait = replace_in(seen, now)
        if wait > 0:
            message = f"{readiness.message}; replaced in {wait:.0f}s"
            return Step(readiness=Readiness(False, readiness.reason, message), requeue_after=wait)
        message = f"{readiness.message}; it is replaced"
        return Step(delete(seen), Readiness(False, readiness.reason, message))
    return Step(readiness=readiness)


def queued(
    tb: TensorBoardObject, pod: Obj | None, readiness: Readiness, queuer: QueuesPods | None
) -> Readiness:
    """``readiness``, as the queue the spec names leaves it: ``Queued`` while the
    pod waits in it (its engine's words), unchanged once it is let go; and, with no
    integration that queues pods on, saying that the queue is not used."""
    queue = queue_of(tb)
    if queue is None:
        return readiness
    if queuer is None:
        note = (
            f"spec.scheduler.t9kScheduler.queue {queue} is not used: the operator queues "
            "a TensorBoard's pod only with --kueue or --gang-scheduler volcano; it is "
            "placed by the default scheduler"
        )
        return Readiness(readiness.ready, readiness.reason, f"{readiness.message}; {note}")
    why = waiting(pod) if pod is not None and not readiness.trouble else None
    if why is None:
        return readiness
    name = pod["metadata"]["name"] if pod is not None else ""
    return Readiness(False, api.QUEUED, f"pod {name} waits in {queuer.engine} {queue}: {why}")


def refused(action: Action, refusal: Refusal) -> tuple[Readiness, bool]:
    """A refused write as the Ready condition, and whether retrying may cure it."""
    if refusal.clash:
        return name_conflict(action.label), False
    retry = not refusal.permanent
    then = "retrying" if retry else "fix the spec (or the namespace's policy)"
    message = f"the API server refused {action.label}: {refusal.message}; {then}"
    return Readiness(False, "FailedCreate", message), retry


def status_write(
    stored: Obj, tb: TensorBoardObject | None, readiness: Readiness, now: datetime
) -> Action | None:
    """The status write, when the status changed (the body carries the
    resourceVersion it was planned from)."""
    status = render_status(tb, stored, readiness, now)
    if status == (stored.get("status") or {}):
        return None
    updated = copy.deepcopy(stored)
    updated["status"] = status
    return Action("replace_status", TENSORBOARDS, updated, "the TensorBoard's status")
