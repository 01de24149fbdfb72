"""The generic job reconciler: caches -> one plan -> one applier.

One instance per job kind. A reconcile reads the job, its children and what
its integrations watch from the informers' caches (never from memory of
past events, never from the API server), plans (pure:
:func:`t9k_operator.reconcilers.pipeline.plan.assemble`, the engine
behind the integrations' gates, giving one ordered list of actions) and hands
the actions to the one :class:`~t9k_operator.reconcilers.pipeline.applier.Applier`.

What a pass could not do (a child refused, an integration's soft action
refused) is recorded for the job's next pass, which plans from it: the job
failed, or held with a condition saying why and retried with backoff, or the
integration told. A pass writes the job's status at most once. Until the
caches show this process's own last status write and pods it created
(:mod:`~t9k_operator.reconcilers.pipeline.writes`), a reconcile waits a moment
rather than plan from the past.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Any

import structlog

from t9k_operator.builders.common import JOB_KIND, JOB_NAME, REPLICA_INDEX, REPLICA_TYPE
from t9k_operator.foundation import metrics_jobs
from t9k_operator.informers.informer import SharedInformer
from t9k_operator.kinds.contract import JobKind, pod_start_timeout, read
from t9k_operator.kinds.pods import ReplicaState, node_draining, node_trouble, replica_state
from t9k_operator.objects import Obj, controller_ref, make_key
from t9k_operator.reconcilers import engine
from t9k_operator.reconcilers.pipeline import handed_over
from t9k_operator.reconcilers.pipeline import plan as planning
from t9k_operator.reconcilers.pipeline.applier import Applier
from t9k_operator.reconcilers.pipeline.children import CREATE_PARALLEL, InformerCaches, Writer
from t9k_operator.reconcilers.pipeline.contract import Integration, JobInput, Watch
from t9k_operator.reconcilers.pipeline.lifecycle import Lifecycle
from t9k_operator.reconcilers.pipeline.unserved import not_served
from t9k_operator.reconcilers.pipeline.writes import CreatedPods, Refusals, WrittenStatuses
from t9k_operator.resources import CONFIGMAPS, NODES, PODS, SECRETS, SERVICES
from t9k_operator.runtime.controller import (
    Controller,
    ControllerContext,
    Result,
    controller_owner_key,
)
from t9k_operator.runtime.sshkeys import generate_keypair
from t9k_operator.runtime.wiring import Owns, watch

log = structlog.get_logger(__name__)

CACHE_CATCH_UP = 0.2
"""How long to wait for the cache to show our own writes."""
CHILD_WAIT = 0.5
"""How long to wait for a child whose value a pod needs (a Service's ClusterIP)."""
POD_BATCH_PERIOD = 0.5
"""How long a pod's event waits before its job is reconciled: the events of the
job's other pods arriving meanwhile are handled by the same reconcile."""


class JobReconciler:
    def __init__(
        self,
        kind: JobKind[Any],
        ctx: ControllerContext,
        integrations: tuple[Integration[Any], ...] = (),
        pod_start_timeout: float = engine.DEFAULT_START_TIMEOUT,
        disruption_limit: int = engine.DEFAULT_DISRUPTION_LIMIT,
        watch_nodes: bool = False,
        sources: Mapping[str, object] | None = None,
    ) -> None:
        self.kind = kind
        # Derived from the status model once, here: the first passes of the
        # workers would each derive it at once (tens of milliseconds each).
        kind.crd.status_defaults  # noqa: B018
        self.integrations = integrations
        self.pod_start_timeout = pod_start_timeout  # for a job that sets none
        self.disruption_limit = disruption_limit
        self.resource = kind.resource
        self.client, self.recorder, self.clock = ctx.client, ctx.recorder, ctx.clock
        self.jobs = ctx.informers.informer(self.resource)
        metrics_jobs.JOBS.watch(self.resource.kind, self.jobs)  # t9k_jobs, counted at scrape time
        watches = [w for i in integrations for w in i.watches()]
        self.caches = InformerCaches(ctx.informers, watches, sources)
        self.pods = self.caches.informer(PODS)
        # Threads start on first use: a kind with no jobs costs none.
        pool = ThreadPoolExecutor(
            CREATE_PARALLEL, thread_name_prefix=f"{self.resource.kind.lower()}-create"
        )
        self._written = WrittenStatuses()
        self._created = CreatedPods()
        self._refused = Refusals(clock=ctx.clock.monotonic)
        writer = Writer(self.client, self.caches, pool, self._created.remember)
        self.lifecycle = Lifecycle(self.resource.kind)
        self.applier = Applier(
            kind, self.resource, self.client, self.recorder, writer, self.lifecycle, self._written
        )
        self.controller = Controller(
            self.resource.kind.lower(), self.reconcile, workers=ctx.workers, clock=ctx.clock
        )
        self._watch(watches)
        self.nodes: SharedInformer | None = None
        if watch_nodes:
            self.nodes = self._watch_nodes(ctx)

    def _watch(self, watches: list[Watch]) -> None:
        """Reconciles the job on its own events, its children's and those of
        what its integrations watch."""
        # A job's pods change together (created in a batch, then started by their
        # kubelets within moments): their events reach the job after a short batch
        # period, as in the Kubernetes Job controller, so one reconcile sees them all.
        owned = [self.caches.informer(r) for r in (SERVICES, CONFIGMAPS, SECRETS)]
        watch(
            self.controller,
            [self.jobs, *(self.caches.informer(w.resource) for w in watches if w.by_name)],
            owns=[
                Owns(self.pods, POD_BATCH_PERIOD, on_delete=self._pod_gone),
                *owned,
                *(
                    Owns(self.caches.informer(w.resource), unowned=self._named)
                    for w in watches
                    if w.owned
                ),
            ],
            owner=(self.resource.group, self.resource.kind),
        )

    def _watch_nodes(self, ctx: ControllerContext) -> SharedInformer:
        """The Nodes, when the operator may watch them: a replica on a node that
        is not Ready makes its job Unknown; one on a cordoned node asks a job
        that checkpoints to do so before the drain evicts it. A node's
        readiness or cordon changing reconciles the jobs with pods on it."""
        nodes = ctx.informers.informer(NODES)
        if NODE_INDEX not in self.pods.indexer.indexer_names:
            self.pods.indexer.add_indexers({NODE_INDEX: _pod_node})
        nodes.add_event_handler(
            on_add=self._node_changed,
            on_update=lambda old, new: self._node_changed(new, old),
            on_delete=self._node_changed,
        )
        return nodes

    def _node_changed(self, node: Obj, old: Obj | None = None) -> None:
        name = str(node["metadata"]["name"])
        if old is not None and all(
            seen(name, old) == seen(name, node) for seen in (node_trouble, node_draining)
        ):
            return  # a heartbeat, not a change of readiness or of the cordon
        group, kind = self.resource.group, self.resource.kind
        for pod in self.pods.by_index(NODE_INDEX, name):
            key = controller_owner_key(pod, api_group=group, kind=kind)
            if key is not None:
                self.controller.enqueue(key)

    def _named(self, child: Obj) -> str | None:
        """The job a child without an owner names by the operator's labels: a
        Workload MultiKueue made on a worker for the job it dispatches, which the
        job takes once it sees it."""
        meta = child.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(JOB_KIND) != self.resource.kind or not labels.get(JOB_NAME):
            return None
        return make_key(meta.get("namespace"), str(labels[JOB_NAME]))

    def _pod_gone(self, pod: Obj) -> None:
        """A pod deleted before the cache showed its creation: stop waiting for it."""
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == self.resource.kind:
            key = make_key(pod["metadata"]["namespace"], ref["name"])
            self._created.gone(key, pod["metadata"]["name"])

    # -- reconcile ------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        job = self.jobs.get(namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            self._written.forget(key)
            self._created.forget(key)
            self._refused.forget(key)
            return Result()  # children go with it through their ownerReferences
        if self._written.awaited(key, job) or self._created.awaited(
            key, lambda pod: self.pods.get(namespace, pod) is not None
        ):
            return Result(requeue_after=CACHE_CATCH_UP)
        self.lifecycle.series_at_zero(namespace)
        rlog = log.bind(kind=self.resource.kind, namespace=namespace, name=name)
        steps = handed_over.assemble(self._observe(job), self._refused.take(key), generate_keypair)
        applied = self.applier.apply(key, job, steps, rlog)
        recorded = applied.recorded()
        if recorded is not None and not applied.gone:
            self._refused.record(key, recorded)  # the next pass plans from it
            return Result(requeue=True)
        if applied.gone or steps.plan.delete_job:
            return Result()
        if steps.waiting:
            rlog.info("waiting", why=steps.waiting)
            return Result(requeue_after=CHILD_WAIT)
        if steps.held:  # retried once the refusal's backoff is due
            due = self._refused.due_in(key)
            return Result(requeue_after=due) if due else Result(requeue=True)
        if (steps.retry or applied.again) and steps.plan.requeue_after is None:
            return Result(requeue=True)
        return Result(requeue_after=steps.plan.requeue_after)

    def _observe(self, job: Obj) -> planning.Observed:
        """The job as this pass reads it from the caches (parsed once)."""
        parsed = read(self.kind, job)
        now: datetime = self.clock.now()
        seen: tuple[planning.Seen, ...] = ()
        view = parsed.view
        # Told once, with the first status: no pass after it reads them.
        unserved = () if job.get("status") else not_served(self.integrations, view)
        if parsed.job is not None:
            found = JobInput(self.kind, job, parsed.job, view, now)
            view, seen = planning.observe(self.integrations, found, self.caches)
        view = replace(
            view,
            disruption_limit=self.disruption_limit,
            start_timeout=pod_start_timeout(view.start_timeout, self.pod_start_timeout),
        )
        pods = self._replicas(job["metadata"]["uid"])
        return planning.Observed(
            self.kind, self.resource, job, parsed.job, view, seen, pods, self.caches, now, unserved
        )

    def _replicas(self, uid: str) -> dict[tuple[str, int], ReplicaState]:
        out: dict[tuple[str, int], ReplicaState] = {}
        for pod in self.caches.owned(PODS, uid):
            labels = pod["metadata"].get("labels") or {}
            if labels.get(JOB_KIND) != self.resource.kind:
                continue
            try:
                key = (str(labels[REPLICA_TYPE]), int(labels[REPLICA_INDEX]))
            except (KeyError, ValueError):
                continue
            state = replica_state(pod, self.kind.training_containers)
            if self.nodes is not None and state.node:
                node = self.nodes.get(None, state.node)
                trouble = "" if state.lost else node_trouble(state.node, node)
                draining = node_draining(state.node, node)
                if trouble or draining:
                    state = replace(state, lost=state.lost or trouble, draining=draining)
            out[key] = state
        return out


NODE_INDEX = "spec.nodeName"
"""The pods' index by the node they are placed on."""


def _pod_node(pod: Obj) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []
