"""The TensorBoard controller: a TensorBoard -> its Service and pod, and a status
saying whether it serves and how to reach it.

A TensorBoard is not a job (no replicas, restarts or phases), so it has a
small reconciler of its own on the shared runtime rather than a kind for the
job engine. Level-triggered: each reconcile reads the TensorBoard, its
Service and its pod from the caches and makes them match:

1. the Service ``<name>-tensorboard`` is created when missing;
2. the pod ``<name>-tensorboard`` is created when missing; one built from an
   older spec (its spec-hash annotation differs) is deleted, and the next
   pass creates the new one; one that ended (evicted, its node lost: its
   container itself restarts in place, ``restartPolicy: Always``) is deleted
   :data:`~t9k_operator.reconcilers.tensorboard_status.REPLACE_FAILED_AFTER`
   seconds after it ended;
3. the status (Ready condition, pod, Service, URL, the ``kubectl
   port-forward`` command, the run groups) is written through the status
   subresource when it changed, and a change of the Ready condition's reason
   gets an Event: Warning when it is in trouble (a missing claim leaves the
   pod Unschedulable; a bad image, ImagePullBackOff), Normal when it serves.

A child whose name is held by something else, or that the API server refuses,
is reported in the Ready condition (NameConflict, FailedCreate) rather than
retried in a tight loop: a refusal retrying may cure comes back with backoff.

Why a pod rather than a Deployment: the operator already watches the pods it
labels, reads a pod's own words for why it does not run (the scheduler's
Unschedulable message, the container's ImagePullBackOff) straight from it,
and has the RBAC for it; a Deployment would add a ReplicaSet between the
TensorBoard and that pod, two more watches and rules, and gives nothing a
single stateless server needs that these few lines do not (replacement when
the spec changes or the pod ends).
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

import structlog

from t9k_operator.api import tensorboard as api
from t9k_operator.api.tensorboard import TensorBoardObject
from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.integrations.tensorboard import build
from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.integrations.tensorboard.status import (
    Readiness,
    pod_readiness,
    render_status,
    replace_in,
    transition_event,
)
from t9k_operator.kinds.contract import parse
from t9k_operator.kube import AlreadyExists, ApiError, NotFound, Resource
from t9k_operator.objects import Obj, controller_ref
from t9k_operator.reconcilers.pipeline.children import refusal_is_permanent
from t9k_operator.resources import PODS, SERVICES
from t9k_operator.runtime.controller import Controller, ControllerContext, Result
from t9k_operator.runtime.wiring import watch

log = structlog.get_logger(__name__)


class TensorBoardReconciler:
    def __init__(self, ctx: ControllerContext) -> None:
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.tensorboards = ctx.informers.informer(TENSORBOARDS)
        self.pods = ctx.informers.informer(PODS, CHILD_SELECTOR)
        self.services = ctx.informers.informer(SERVICES, CHILD_SELECTOR)
        self.controller = Controller(
            "tensorboard", self.reconcile, workers=ctx.workers, clock=ctx.clock
        )
        watch(
            self.controller,
            [self.tensorboards],
            owns=[self.pods, self.services],
            owner=(api.GROUP, api.KIND),
        )

    # -- reconcile ----------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        stored = self.tensorboards.get(namespace, name)
        if stored is None or stored["metadata"].get("deletionTimestamp"):
            return Result()  # its pod and Service go with it (ownerReferences)
        rlog = log.bind(kind=api.KIND, namespace=namespace, name=name)
        now: datetime = self.clock.now()
        tb, error = parse(TensorBoardObject, stored)
        if tb is None:
            assert error is not None
            why = Readiness(False, "InvalidSpec", f"{error}; fix the spec")
            return self._report(stored, None, why, now, rlog)
        requeue_after: float | None = None
        problem, retry = self._ensure_service(tb, rlog)
        if problem is not None:
            readiness = problem
        else:
            readiness, requeue_after, retry = self._ensure_pod(tb, now, rlog)
        result = self._report(stored, tb, readiness, now, rlog)
        if requeue_after is not None:
            return Result(requeue_after=requeue_after)
        return Result(requeue=True) if retry else result

    def _ensure_service(self, tb: TensorBoardObject, rlog: Any) -> tuple[Readiness | None, bool]:
        """Create the Service when missing; (a problem, whether to retry it)."""
        want = build.build_service(tb)
        seen = self.services.get(tb.namespace, want["metadata"]["name"])
        if seen is not None:
            return self._clash(seen, tb), False
        return self._create(SERVICES, want, tb, rlog)

    def _ensure_pod(
        self, tb: TensorBoardObject, now: datetime, rlog: Any
    ) -> tuple[Readiness, float | None, bool]:
        """Make the pod match the spec: (its readiness, when to look again, retry)."""
        want = build.build_pod(tb)
        pod_name = want["metadata"]["name"]
        seen = self.pods.get(tb.namespace, pod_name)
        if seen is None:
            problem, retry = self._create(PODS, want, tb, rlog)
            return problem or pod_readiness(None), None, retry
        clash = self._clash(seen, tb)
        if clash is not None:
            return clash, None, False
        readiness = pod_readiness(seen)
        if seen["metadata"].get("deletionTimestamp"):
            return readiness, None, False
        annotations = seen["metadata"].get("annotations") or {}
        if annotations.get(build.SPEC_HASH) != want["metadata"]["annotations"][build.SPEC_HASH]:
            self._delete_pod(seen, "its spec changed", rlog)
            replacing = Readiness(False, "Replacing", "its spec changed: the pod is replaced")
            return replacing, None, False
        if (seen.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            wait = replace_in(seen, now)
            if wait > 0:
                message = f"{readiness.message}; replaced in {wait:.0f}s"
                return Readiness(False, readiness.reason, message), wait, False
            self._delete_pod(seen, "it ended", rlog)
            message = f"{readiness.message}; it is replaced"
            return Readiness(False, readiness.reason, message), None, False
        return readiness, None, False

    def _create(
        self, resource: Resource, child: Obj, tb: TensorBoardObject, rlog: Any
    ) -> tuple[Readiness | None, bool]:
        label = f"{child['kind']} {child['metadata']['name']}"
        try:
            # Strict: a field the API does not know is refused, never dropped in silence.
            self.client.create(resource, child, tb.namespace, field_validation="Strict")
            rlog.info("created", child=label)
        except AlreadyExists:
            try:
                seen = self.client.get(resource, child["metadata"]["name"], tb.namespace)
            except NotFound:
                return None, True  # gone meanwhile: the next pass creates it
            return self._clash(seen, tb), False
        except ApiError as exc:
            retry = not refusal_is_permanent(exc)
            then = "retrying" if retry else "fix the spec (or the namespace's policy)"
            message = f"the API server refused {label}: {exc.message}; {then}"
            return Readiness(False, "FailedCreate", message), retry
        return None, False

    def _clash(self, seen: Obj, tb: TensorBoardObject) -> Readiness | None:
        """NameConflict when ``seen`` (a child's name) is not this TensorBoard's."""
        if (controller_ref(seen) or {}).get("uid") == tb.uid:
            return None
        label = f"{seen.get('kind', 'object')} {seen['metadata']['name']}"
        return Readiness(
            False,
            "NameConflict",
            f"{label} already exists and is not this TensorBoard's: delete it or rename "
            "the TensorBoard",
        )

    def _delete_pod(self, pod: Obj, why: str, rlog: Any) -> None:
        meta = pod["metadata"]
        try:
            self.client.delete(PODS, meta["name"], meta["namespace"], uid=meta["uid"])
            rlog.info("deleted pod", pod=meta["name"], why=why)
        except NotFound:
            pass

    def _report(
        self,
        stored: Obj,
        tb: TensorBoardObject | None,
        readiness: Readiness,
        now: datetime,
        rlog: Any,
    ) -> Result:
        """Write the status when it changed, and tell a change of reason in an Event."""
        status = render_status(tb, stored, readiness, now)
        if status == (stored.get("status") or {}):
            return Result()
        updated = copy.deepcopy(stored)
        updated["status"] = status
        self.client.replace_status(TENSORBOARDS, updated)
        rlog.info("status", ready=readiness.ready, reason=readiness.reason)
        event = transition_event(stored.get("status") or {}, readiness)
        if event is not None:
            type_, reason, message = event
            if type_ == "Warning":
                self.recorder.record(stored, "Warning", reason, message)
            else:
                self.recorder.record(stored, "Normal", reason, message)
        return Result()
