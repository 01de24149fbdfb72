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

It writes as the jobs' reconciler does: what each child needs is planned as
the pipeline's actions (``plan.py``, pure) and carried out through the
pipeline's one writer (:class:`~t9k_operator.reconcilers.pipeline.children.Writer`:
deletes under a uid precondition, AlreadyExists of its own child being
success), and the status, at most once a pass, through its
:class:`~t9k_operator.reconcilers.pipeline.applier.StatusWriter`, which
remembers the write until the cache shows it.

Why a pod rather than a Deployment: the operator already watches the pods it
labels, reads a pod's own words for why it does not run (the scheduler's
Unschedulable message, the container's ImagePullBackOff) straight from it,
and has the RBAC for it; a Deployment would add a ReplicaSet between the
TensorBoard and that pod, two more watches and rules, and gives nothing a
single stateless server needs that these few lines do not (replacement when
the spec changes or the pod ends).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog

from t9k_operator.api import tensorboard as api
from t9k_operator.api.tensorboard import TensorBoardObject
from t9k_operator.integrations.tensorboard import build, plan
from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.integrations.tensorboard.status import Readiness, transition_event
from t9k_operator.kinds.contract import parse
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.applier import StatusWriter
from t9k_operator.reconcilers.pipeline.children import Gone, InformerCaches, Writer
from t9k_operator.reconcilers.pipeline.contract import Refusal, Watch
from t9k_operator.reconcilers.pipeline.queued_pods import QueuesPods
from t9k_operator.reconcilers.pipeline.writes import WrittenStatuses
from t9k_operator.resources import PODS, SERVICES
from t9k_operator.runtime.controller import Controller, ControllerContext, Result
from t9k_operator.runtime.wiring import watch

log = structlog.get_logger(__name__)

CACHE_CATCH_UP = 0.2
"""How long to wait for the cache to show the last status write."""
Children = tuple[Readiness, float | None, bool]
"""What the children leave: the readiness, when to look again, whether to retry."""


class Changed(Exception):
    """A pod changed meanwhile (its delete's uid precondition failed): the pass
    ends without a status, and the next one looks again."""


class TensorBoardReconciler:
    """Every TensorBoard's pass: read from the caches, planned by ``plan.py``,
    written through the pipeline's writers."""

    def __init__(self, ctx: ControllerContext, queuer: QueuesPods | None = None) -> None:
        self.queuer = queuer  # what queues the pod of a TensorBoard that names a queue
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.caches = InformerCaches(
            ctx.informers, (Watch(TENSORBOARDS),), children=(PODS, SERVICES)
        )
        self.tensorboards = self.caches.informer(TENSORBOARDS)
        self.writer = Writer(ctx.client, self.caches)
        self.written = WrittenStatuses()
        self.status = StatusWriter(ctx.client, self.written)
        self.controller = Controller(
            "tensorboard", self.reconcile, workers=ctx.workers, clock=ctx.clock
        )
        watch(
            self.controller,
            [self.tensorboards],
            owns=[self.caches.informer(PODS), self.caches.informer(SERVICES)],
            owner=(api.GROUP, api.KIND),
        )

    # -- reconcile ----------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        stored = self.tensorboards.get(namespace, name)
        if stored is None or stored["metadata"].get("deletionTimestamp"):
            self.written.forget(key)
            return Result()  # its pod and Service go with it (ownerReferences)
        if self.written.awaited(key, stored):
            return Result(requeue_after=CACHE_CATCH_UP)
        rlog = log.bind(kind=api.KIND, namespace=namespace, name=name)
        now: datetime = self.clock.now()
        tb, error = parse(TensorBoardObject, stored)
        if tb is None:
            assert error is not None
            why = Readiness(False, "InvalidSpec", f"{error}; fix the spec")
            self._report(key, stored, None, why, now, rlog)
            return Result()
        try:
            readiness, requeue_after, retry = self._children(key, tb, now, rlog)
        except Changed:
            return Result(requeue=True)
        if not self._report(key, stored, tb, readiness, now, rlog):
            return Result()
        if requeue_after is not None:
            return Result(requeue_after=requeue_after)
        return Result(requeue=retry)

    def _children(self, key: str, tb: TensorBoardObject, now: datetime, rlog: Any) -> Children:
        """The Service, then the pod: each planned and its write carried out."""
        name = build.service_name(tb.name)  # the Service's and the pod's
        service = plan.service_step(tb, self.caches.get(SERVICES, tb.namespace, name))
        problem, retry = self._carry_out(key, tb, service, rlog)
        if problem is not None:
            return problem, None, retry
        seen = self.caches.get(PODS, tb.namespace, name)
        pod = plan.pod_step(tb, seen, now, self.queuer)
        readiness, retry = self._carry_out(key, tb, pod, rlog)
        assert readiness is not None  # the pod always has its word
        return plan.queued(tb, seen, readiness, self.queuer), pod.requeue_after, retry

    def _carry_out(
        self, key: str, tb: TensorBoardObject, step: plan.Step, rlog: Any
    ) -> tuple[Readiness | None, bool]:
        """A step's write, through the pipeline's writer: (the readiness it
        leaves, whether to retry)."""
        if step.action is None:
            return step.readiness, False
        result = self.writer.act(step.action, key, tb.uid, rlog)
        if isinstance(result, Gone):
            return step.readiness, True  # deleted meanwhile: the next pass creates it
        if isinstance(result, Refusal):
            if result.conflict:
                raise Changed(result.message)
            return plan.refused(step.action, result)
        if result is not None:  # a Problem: only a hard action has one
            raise TypeError(f"{step.action.what}: a soft action has no problem: {result}")
        return step.readiness, False

    def _report(
        self,
        key: str,
        stored: Obj,
        tb: TensorBoardObject | None,
        readiness: Readiness,
        now: datetime,
        rlog: Any,
    ) -> bool:
        """Write the status when it changed, and tell a change of reason in an
        Event; False when the TensorBoard is gone meanwhile."""
        action = plan.status_write(stored, tb, readiness, now)
        if action is None:
            return True
        if not self.status.write(action, key):
            rlog.info("the TensorBoard is gone; nothing to do")
            return False
        rlog.info("status", ready=readiness.ready, reason=readiness.reason)
        event = transition_event(stored.get("status") or {}, readiness)
        if event is not None:
            type_, reason, message = event
            if type_ == "Warning":
                self.recorder.record(stored, "Warning", reason, message)
            else:
                self.recorder.record(stored, "Normal", reason, message)
        return True
