"""The controller of the pods that wait in a queue and are no job's
(``queued_pods.py``), for the integration that queues them.

Level-triggered, as every controller here: each pass reads a queued pod (its
label :data:`~.queued_pods.QUEUE`) and what it waits in (a Workload, a
PodGroup: the *companion*, owned by the pod, so it goes with it) from the
caches, asks the integration's pure :data:`Plan` what to write, and writes
it. A pod that is deleted takes its companion with it (garbage collection);
its owner's controller creates the next one, queued afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.kube.errors import AlreadyExists, Conflict, NotFound
from t9k_operator.objects import Obj, controller_ref
from t9k_operator.reconcilers.pipeline.queued_pods import QUEUE, Plan, Write
from t9k_operator.resources import PODS, Resource
from t9k_operator.runtime.controller import Controller, ControllerContext, Result
from t9k_operator.runtime.wiring import watch

log = structlog.get_logger(__name__)

WAIT_FOR_PREDECESSOR = 1.0
"""Seconds before a pod whose companion's name is still held by its
predecessor's (on its way out) looks again."""


def companion_of(pod: Obj, companion: Obj | None) -> Obj | None:
    """``companion`` if the pod owns it, else None (a predecessor's, by name)."""
    if companion is None:
        return None
    owner = controller_ref(companion) or {}
    return companion if owner.get("uid") == pod["metadata"].get("uid") else None


class PodQueue:
    """One integration's controller of the queued pods: ``companion`` is the
    resource of what each waits in, ``name_of`` its name for a pod, ``reads``
    what else the plan reads from caches."""

    def __init__(
        self,
        name: str,
        ctx: ControllerContext,
        companion: Resource,
        name_of: Callable[[Obj], str],
        plan: Plan,
        reads: tuple[Resource, ...] = (),
    ) -> None:
        self.client = ctx.client
        self.companion, self.name_of, self.plan = companion, name_of, plan
        self.pods = ctx.informers.informer(PODS, f"{CHILD_SELECTOR},{QUEUE}")
        self.companions = ctx.informers.informer(companion, CHILD_SELECTOR)
        self.reads = {r: ctx.informers.informer(r) for r in reads}
        self.controller = Controller(name, self.reconcile, workers=1, clock=ctx.clock)
        watch(self.controller, [self.pods], owns=[self.companions], owner=("", "Pod"))

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj | None:
        if resource == self.companion:
            return self.companions.get(namespace, name)
        return self.reads[resource].get(namespace, name)

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        pod = self.pods.get(namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return Result()
        held = self.companions.get(namespace, self.name_of(pod))
        mine = companion_of(pod, held)
        if held is not None and mine is None:
            return Result(requeue_after=WAIT_FOR_PREDECESSOR)
        plog = log.bind(pod=key)
        for write in self.plan(pod, mine, self.get):
            if not self._write(write, plog):
                return Result(requeue=True)
        return Result()

    def _write(self, write: Write, plog: Any) -> bool:
        """Carry out one write; False when the pass should look again."""
        meta = write.body["metadata"]
        try:
            if write.verb == "create":
                self.client.create(write.resource, write.body, answer=False)
            elif write.verb == "patch":
                self.client.patch(write.resource, meta["name"], write.body, meta["namespace"])
            elif write.verb == "delete":
                self.client.delete(
                    write.resource, meta["name"], meta["namespace"], uid=meta.get("uid")
                )
            else:
                raise ValueError(f"unknown write {write.verb!r}")
        except AlreadyExists:
            return True  # created meanwhile: the cache will show it
        except NotFound:
            return write.verb == "delete"
        except Conflict:
            plog.info("changed meanwhile; looking again", why=write.why)
            return False
        plog.info("queued pod", verb=write.verb, kind=write.resource.kind, why=write.why)
        return True
