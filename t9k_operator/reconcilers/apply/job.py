"""The generic job reconciler: caches -> one plan -> idempotent apply.

One instance per job kind. A reconcile reads the job, its children and what
its integrations watch from the informers' caches (never from memory of
past events, never from the API server), asks for one plan
(:func:`t9k_operator.reconcilers.integrations.plan.plan`: the engine behind
the integrations' gates), and applies it in a crash-safe order:

0. what the integrations keep in every phase (the job's TensorBoard), so the
   status says what became of it;
1. the status, if it changed (status subresource, optimistic concurrency: a
   409 is a rate-limited retry). It goes first because it carries the
   restart count and the uids of the failed pods it was raised for;
2. deletes of pods (with a uid precondition, so a recreated pod of the same
   name is never hit), NotFound being success;
3. the kind's extras and the integrations' children (or, once the job has
   finished or is paused, what the integrations give back);
4. creates of the missing pods, decorated by the integrations.

A child that cannot be had is one more input: the job is planned once more
with it (failed, or held with a condition saying why and retried with
backoff), and that plan's status is written. Until the caches show this
process's own last status write and pods it created
(:mod:`~t9k_operator.reconcilers.apply.writes`), a reconcile waits a moment
rather than plan from the past.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import structlog

from t9k_operator.builders.common import JOB_KIND, REPLICA_INDEX, REPLICA_TYPE, ssh_secret_name
from t9k_operator.foundation import metrics_jobs
from t9k_operator.informers.informer import SharedInformer
from t9k_operator.kinds.contract import ChildNotReady, JobKind, PodMode, Read, read
from t9k_operator.kinds.pods import ReplicaState, node_trouble, replica_state
from t9k_operator.kinds.view import Gate, Hold, JobView
from t9k_operator.kube import NotFound
from t9k_operator.objects import Obj
from t9k_operator.reconcilers import engine
from t9k_operator.reconcilers.apply.children import (
    CREATE_PARALLEL,
    InformerCaches,
    Problem,
    Writer,
    unavailable,
)
from t9k_operator.reconcilers.apply.lifecycle import Lifecycle
from t9k_operator.reconcilers.apply.writes import CreatedPods, WrittenStatuses
from t9k_operator.reconcilers.integrations import plan as planning
from t9k_operator.reconcilers.integrations.contract import (
    Action,
    Integration,
    JobInput,
    Refusal,
    Unavailable,
    controller_of,
)
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
BUILD_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)
"""What a builder raises when a spec has a shape it cannot use (the models and
the template shape check stop these first; this is the last line)."""


@dataclass(frozen=True)
class _Pass:
    """One reconcile of one job: what it read, and what it planned from."""

    key: str
    stored: Obj  # as last written
    read: Read[Any]  # the parsed job and its view, as the integrations left it
    seen: tuple[planning.Seen, ...]
    states: dict[tuple[str, int], ReplicaState]
    now: datetime


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
        self.writer = Writer(self.client, self.caches, pool)
        self.lifecycle = Lifecycle(self.resource.kind)
        self._written = WrittenStatuses()
        self._created = CreatedPods()
        self.controller = Controller(
            self.resource.kind.lower(), self.reconcile, workers=ctx.workers, clock=ctx.clock
        )
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
                *(self.caches.informer(w.resource) for w in watches if w.owned),
            ],
            owner=(self.resource.group, self.resource.kind),
        )

        # The Nodes, when the operator may watch them: a replica on a node that
        # is not Ready makes its job Unknown. A node's readiness changing
        # reconciles the jobs with pods on it.
        self.nodes: SharedInformer | None = None
        if watch_nodes:
            self.nodes = ctx.informers.informer(NODES)
            if NODE_INDEX not in self.pods.indexer.indexer_names:
                self.pods.indexer.add_indexers({NODE_INDEX: _pod_node})
            self.nodes.add_event_handler(
                on_add=self._node_changed,
                on_update=lambda old, new: self._node_changed(new, old),
                on_delete=self._node_changed,
            )

    def _node_changed(self, node: Obj, old: Obj | None = None) -> None:
        name = str(node["metadata"]["name"])
        if old is not None and node_trouble(name, old) == node_trouble(name, node):
            return  # a heartbeat, not a change of readiness
        group, kind = self.resource.group, self.resource.kind
        for pod in self.pods.by_index(NODE_INDEX, name):
            key = controller_owner_key(pod, api_group=group, kind=kind)
            if key is not None:
                self.controller.enqueue(key)

    def _pod_gone(self, pod: Obj) -> None:
        """A pod deleted before the cache showed its creation: stop waiting for it."""
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == self.resource.kind:
                key = f"{pod['metadata']['namespace']}/{ref['name']}"
                self._created.gone(key, pod["metadata"]["name"])

    # -- reconcile ------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        job = self.jobs.get(namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            self._written.forget(key)
            self._created.forget(key)
            return Result()  # children go with it through their ownerReferences
        if self._written.awaited(key, job) or self._created.awaited(
            key, lambda pod: self.pods.get(namespace, pod) is not None
        ):
            return Result(requeue_after=CACHE_CATCH_UP)
        self.lifecycle.series_at_zero(namespace)
        rlog = log.bind(kind=self.resource.kind, namespace=namespace, name=name)
        parsed = read(self.kind, job)  # the spec, parsed once for this reconcile
        now: datetime = self.clock.now()
        seen: tuple[planning.Seen, ...] = ()
        view = parsed.view
        if parsed.job is not None:
            found = JobInput(self.kind, job, parsed.job, view, now)
            view, seen = planning.observe(self.integrations, found, self.caches)
        view = replace(
            view,
            disruption_limit=self.disruption_limit,
            start_timeout=(
                self.pod_start_timeout if view.start_timeout is None else view.start_timeout
            ),
        )
        seen, retry = self._prepare(seen, view, job["metadata"]["uid"], rlog)
        states = self._replicas(job["metadata"]["uid"])
        p = _Pass(key, job, replace(parsed, view=view), seen, states, now)
        plan = planning.plan(self.kind, view, seen, states, now)
        try:
            current = self._write(p, plan, first=not job.get("status"), rlog=rlog)
        except NotFound:
            # Deleted after the cache last saw it: its children go with it, and
            # the informer's delete event ends this key's records.
            rlog.info("the job is gone; nothing to do")
            return Result()
        p = replace(p, stored=current)
        for state in plan.delete:
            try:
                self.client.delete(PODS, state.name, namespace, uid=state.uid)
                rlog.info("deleted pod", pod=state.name)
            except NotFound:
                pass
        if plan.delete_job:
            # Its ttlSecondsAfterFinished has run out: the job goes, and its
            # children with it (garbage collection, through their owner references).
            try:
                self.client.delete(self.resource, name, namespace, uid=job["metadata"]["uid"])
                rlog.info("deleted the finished job: its ttlSecondsAfterFinished ran out")
            except NotFound:
                pass
            return Result()
        if parsed.job is None:
            return Result()  # a spec that does not parse has failed the job: nothing to build
        active = plan.status.get("phase") not in engine.TERMINAL and not view.paused
        try:
            problem, again = self._children(p, active, len(states), rlog)
            if problem is None and plan.create:
                problem = self._create_pods(p, plan, rlog)
        except ChildNotReady as exc:
            rlog.info("waiting", why=str(exc))
            return Result(requeue_after=CHILD_WAIT)
        if problem is not None:
            return self._replan(p, problem)
        if (retry or again) and plan.requeue_after is None:
            return Result(requeue=True)
        return Result(requeue_after=plan.requeue_after)

    def _prepare(
        self, seen: tuple[planning.Seen, ...], view: JobView, uid: str, rlog: Any
    ) -> tuple[tuple[planning.Seen, ...], bool]:
        """Apply what the integrations keep in every phase; a refusal goes back to
        its integration. Returns their states and whether to retry."""
        out, retry = [], False
        for s in seen:
            state = s.state
            for action in s.integration.prepare(state, view):
                result = self.writer.act(action, uid, rlog)
                if isinstance(result, Refusal):
                    retry = retry or result.conflict or not result.permanent
                    state = s.integration.refused(state, action, result)
            out.append(planning.Seen(s.integration, state))
        return tuple(out), retry

    def _write(self, p: _Pass, plan: engine.Plan, *, first: bool, rlog: Any) -> Obj:
        """The plan's status, Events and figures; the job as written."""
        job = p.stored
        current = self._write_status(job, self.kind.render_status(job, plan.status), p.key)
        if first:
            # Told once the first status is stored: a write that conflicts is
            # retried from a job still without status, and would tell it again.
            self.lifecycle.accepted(job, self.kind, self.recorder)
            view = p.read.view
            for s in p.seen:
                self._record(job, s.integration.accepted(s.state, view))
        if current is not job:
            rlog.info(
                "status", phase=plan.status.get("phase"), restarts=plan.status.get("restartCount")
            )
        self._record(job, plan.events)
        self.lifecycle.restarted(job["metadata"]["namespace"], plan.restarts)
        if plan.finished is not None:
            self.lifecycle.finished(job, plan)
        return current

    def _record(self, job: Obj, events: list[tuple[str, str, str]]) -> None:
        for type_, reason, message in events:
            self.recorder.record(
                job, "Warning" if type_ == "Warning" else "Normal", reason, message
            )

    def _children(
        self, p: _Pass, active: bool, pods: int, rlog: Any
    ) -> tuple[Problem | None, bool]:
        """The kind's extras and the integrations' children while the job is
        active; else what the integrations give back. Returns a child that
        cannot be had, and whether a write met a change and wants a retry."""
        job, view, uid = p.read.job, p.read.view, p.read.view.uid
        actions: list[Action] = []
        if active:
            problem = self.writer.extras(self._extras(job, uid), uid, rlog)
            if problem is not None:
                return problem, False
            services = self._services(uid)

            def template(type_: str) -> Obj:
                return self.kind.build_pod(job, type_, 0, PodMode(), services)

            for s in p.seen:
                try:
                    actions.extend(s.integration.children(s.state, view, template, pods))
                except Unavailable as exc:
                    return unavailable(exc), False
        else:
            for s in p.seen:
                actions.extend(s.integration.release(s.state, view))
        again = False
        for action in actions:
            result = self.writer.act(action, uid, rlog)
            if isinstance(result, Problem):
                return result, False
            again = again or isinstance(result, Refusal)
        return None, again

    def _extras(self, job: Any, uid: str) -> list[Obj]:
        wanted = list(self.kind.extras(job))
        secret = self.caches.get(SECRETS, job.namespace, ssh_secret_name(job.name))
        if self.kind.uses_ssh and (
            secret is None or (controller_of(secret) or {}).get("uid") != uid
        ):
            # A fresh key pair only when the Secret does not exist yet: never
            # shared between jobs, never rotated under running replicas.
            private, public = generate_keypair(f"t9k/{job.namespace}/{job.name}")
            made = self.kind.ssh_secret(job, private, public)
            if made is not None:
                wanted.append(made)
        return wanted

    def _create_pods(self, p: _Pass, plan: engine.Plan, rlog: Any) -> Problem | None:
        job, view = p.read.job, p.read.view
        services = self._services(view.uid)
        pods: list[Obj] = []
        for type_, index, mode in plan.create:
            try:
                pod = self.kind.build_pod(job, type_, index, mode, services)
                for s in p.seen:
                    s.integration.decorate(s.state, view, pod)
            except BUILD_ERRORS as exc:  # ChildNotReady passes: the caller waits for it
                message = (
                    f"the operator cannot build the pod of replica {type_}-{index} from this "
                    f"spec ({type(exc).__name__}: {exc}); fix the spec and resubmit"
                )
                return Problem("InvalidSpec", message, fail=True)
            pods.append(pod)
        created, problem = self.writer.pods(pods, p.key, view.uid, rlog)
        if created:
            self._created.remember(p.key, created)
        return problem

    def _replan(self, p: _Pass, problem: Problem) -> Result:
        """Plan once more with a child that cannot be had: fail the job (a refusal
        retrying cannot cure, a name clash), or hold it with a condition and a
        Warning Event saying what it waits for, and retry with backoff."""
        view = p.read.view
        if problem.fail:
            again = planning.plan(
                self.kind, view, p.seen, p.states, p.now, failed=(problem.reason, problem.message)
            )
        else:
            held = Gate(problem.reason, problem.message, Hold.NEW)
            again = planning.plan(self.kind, view, p.seen, p.states, p.now, blocked=(held,))
        job = p.stored
        self._write_status(job, self.kind.render_status(job, again.status), p.key)
        if problem.fail:
            self._record(job, again.events)
            if again.finished is not None:
                self.lifecycle.finished(job, again)
            return Result()
        self.recorder.record(job, "Warning", problem.reason, problem.message)
        return Result(requeue=True)

    def _write_status(self, job: Obj, status: Obj, key: str) -> Obj:
        """Write ``status`` when it differs from the job's (status subresource,
        optimistic concurrency); remember the write; return the job as written."""
        if status == (job.get("status") or {}):
            return job
        updated = copy.deepcopy(job)
        updated["status"] = status
        written = self.client.replace_status(self.resource, updated)
        self._written.remember(key, written)
        return written

    def _services(self, uid: str) -> dict[str, Obj]:
        return {s["metadata"]["name"]: s for s in self.caches.owned(SERVICES, uid)}

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
            if self.nodes is not None and state.node and not state.lost:
                trouble = node_trouble(state.node, self.nodes.get(None, state.node))
                if trouble:
                    state = replace(state, lost=trouble)
            out[key] = state
        return out


NODE_INDEX = "spec.nodeName"
"""The pods' index by the node they are placed on."""


def _pod_node(pod: Obj) -> list[str]:
    node = (pod.get("spec") or {}).get("nodeName")
    return [str(node)] if node else []
