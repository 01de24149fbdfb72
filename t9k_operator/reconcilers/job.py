"""The generic job reconciler: cache -> engine plan -> idempotent apply.

One instance per job kind. A reconcile reads the job and its pods and
services from the informers' caches (never from memory of past events),
asks the pure engine for a plan, and applies it in a crash-safe order:

1. the status, if it changed (status subresource, optimistic concurrency: a
   409 is a rate-limited retry). It goes first because it carries the
   restart count and the uids of the failed pods that count was raised for;
2. deletes (with a uid precondition, so a recreated pod of the same name is
   never hit), NotFound being success;
3. creates of missing children, AlreadyExists being success.

The one thing remembered between reconciles is our own last status write
per job (its resourceVersion and status, in a TTL cache): until the informer
shows that write, the reconcile waits a moment instead of planning from a
stale status, which would count a restart twice. resourceVersions are opaque:
no order is read into them (see :class:`Written`). That is client-go's
"expectations" idea, narrowed to the single write that matters.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import structlog
from cachetools import TTLCache
from pydantic import ValidationError

from t9k_operator.api import tensorboard as tensorboard_api
from t9k_operator.api.common import CrdInfo
from t9k_operator.api.tensorboard import TensorBoardSpec
from t9k_operator.builders import gang, kueue
from t9k_operator.builders.common import (
    CHILD_SELECTOR,
    JOB_KIND,
    REPLICA_INDEX,
    REPLICA_TYPE,
    Job,
    ssh_secret_name,
)
from t9k_operator.informers import CONTROLLER_UID_INDEX
from t9k_operator.kube import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    Resource,
)
from t9k_operator.kube.resources import CONFIGMAPS, PODS, SECRETS, SERVICES
from t9k_operator.objects import Obj, digest
from t9k_operator.reconcilers import engine
from t9k_operator.reconcilers.gang import (
    NO_GANG_SCHEDULER,
    QUEUE_NOT_SUPPORTED,
    UNAVAILABLE,
    GangConfig,
    group_state,
)
from t9k_operator.reconcilers.kind import (
    AdmissionState,
    ChildNotReady,
    JobKind,
    JobView,
    PodMode,
    read,
)
from t9k_operator.reconcilers.kueue import (
    NO_KUEUE,
    RESOURCE_FLAVORS,
    WORKLOADS,
    KueueConfig,
    admission_state,
    holds_quota,
    queue_of,
)
from t9k_operator.reconcilers.kueue import priority as workload_priority
from t9k_operator.reconcilers.pods import ReplicaState, replica_state
from t9k_operator.reconcilers.tensorboard_status import dependent_state
from t9k_operator.runtime import metrics
from t9k_operator.runtime.batch import slow_start
from t9k_operator.runtime.controller import (
    Controller,
    ControllerContext,
    Result,
    controller_owner_key,
    object_key,
)
from t9k_operator.runtime.sshkeys import generate_keypair

log = structlog.get_logger(__name__)

# How long to wait for the cache to show our own status write.
CACHE_CATCH_UP = 0.2
# How long to wait for a child whose value a pod needs (a Service's ClusterIP).
CHILD_WAIT = 0.5
# How long a pod's event waits before its job is reconciled: the events of the
# job's other pods arriving meanwhile are handled by the same reconcile.
POD_BATCH_PERIOD = 0.5
# How long a reconcile waits for the cache to show the pods it created before
# it plans again; a pod deleted before the cache showed it ends the wait early.
CREATED_TTL = 10.0
# At most this many pod creates of one job kind in flight at once (the
# slow-start batches of all its workers share one pool of threads).
CREATE_PARALLEL = 16


# What a builder raises when a spec has a shape it cannot use (the models and
# the template shape check stop these first; this is the last line).
BUILD_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


def refusal_is_permanent(exc: ApiError) -> bool:
    """Whether the API server's refusal to create a child is one that retrying
    cannot cure: the object itself is invalid (422) or malformed (400), Pod
    Security admission forbids it, or an admission webhook denied it. Quota
    exceeded, a missing ServiceAccount, a webhook timing out or an API server
    in trouble may cure themselves."""
    if isinstance(exc, (Invalid, BadRequest)):
        return True
    if isinstance(exc, Forbidden):
        return "violates PodSecurity" in exc.message or "denied the request" in exc.message
    return False


def _status_digest(obj: Obj) -> bytes:
    return digest(json.dumps(obj.get("status") or {}, sort_keys=True, separators=(",", ":")))


class Written:
    """Our own last status write of a job: its resourceVersion and a digest of
    the status (a few dozen bytes per job, not the status itself)."""

    __slots__ = ("resource_version", "status")

    def __init__(self, obj: Obj) -> None:
        self.resource_version = str(obj["metadata"]["resourceVersion"])
        self.status = _status_digest(obj)

    def seen_in(self, cached: Obj) -> bool:
        """Whether the cached job already shows this write. resourceVersions
        are opaque, so no order is read into them: the cache has caught up when
        it holds this very version, or a later one carrying the status we wrote
        (only the operator writes status)."""
        if str(cached["metadata"].get("resourceVersion")) == self.resource_version:
            return True
        return _status_digest(cached) == self.status


class WrittenStatuses:
    """The status writes of this process that the cache does not show yet, by
    job key. Shared by the controller's workers, so every use holds a lock (a
    cachetools cache is not safe for threads: a write racing another's expiry
    raised KeyError out of a reconcile under load). A write is forgotten as soon
    as the cache shows it, or after ``ttl`` seconds, so what is kept stays as
    small as the writes in flight rather than growing with the jobs."""

    def __init__(
        self, ttl: float = 30.0, maxsize: int = 65536, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self._lock = threading.Lock()
        self._written: TTLCache[str, Written] = TTLCache(maxsize=maxsize, ttl=ttl, timer=timer)

    def remember(self, key: str, obj: Obj) -> None:
        record = Written(obj)
        with self._lock:
            self._written[key] = record

    def forget(self, key: str) -> None:
        with self._lock:
            self._written.pop(key, None)

    def awaited(self, key: str, cached: Obj) -> bool:
        """Whether ``cached`` (the job as the cache has it) still lacks our last
        status write; once it shows it, the write is forgotten."""
        with self._lock:
            written = self._written.get(key)
            if written is None:
                return False
            if written.seen_in(cached):
                del self._written[key]
                return False
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._written)


def resource_of(crd: CrdInfo) -> Resource:
    """The API resource of a kind, from the identity its API module declares."""
    return Resource(crd.group, crd.version, crd.plural, crd.kind)


TENSORBOARDS = resource_of(tensorboard_api.CRD)
"""Every TensorBoard: a job's own (``spec.tensorboardSpec``) and those users create."""


def controller_uid(obj: Obj) -> str | None:
    """The uid of the object's controller owner, if it has one."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _same_spec(a: Any, b: Any) -> bool:
    """Whether two TensorBoard specs mean the same (as the model reads them)."""
    try:
        return TensorBoardSpec.model_validate(a) == TensorBoardSpec.model_validate(b)
    except ValidationError:
        return False


@dataclass(frozen=True)
class _Attempt:
    """One reconcile of one job, as written so far: what a failure or a wait is
    planned from."""

    job: Obj  # as last written
    view: JobView
    states: dict[tuple[str, int], ReplicaState]
    now: datetime
    key: str


class JobReconciler:
    def __init__(
        self,
        kind: JobKind[Any],
        ctx: ControllerContext,
        gang: GangConfig = NO_GANG_SCHEDULER,
        kueue: KueueConfig = NO_KUEUE,
    ) -> None:
        self.kind = kind
        self.gang_config = gang
        self.kueue_config = kueue
        self.resource = resource_of(kind.crd)
        self.ctx = ctx
        self.client = ctx.client
        self.recorder = ctx.recorder
        self.clock = ctx.clock
        self.jobs = ctx.informers.informer(self.resource)
        metrics.JOBS.watch(self.resource.kind, self.jobs)  # t9k_jobs, counted at scrape time
        self.pods = ctx.informers.informer(PODS, CHILD_SELECTOR)
        self.services = ctx.informers.informer(SERVICES, CHILD_SELECTOR)
        self.configmaps = ctx.informers.informer(CONFIGMAPS, CHILD_SELECTOR)
        self.secrets = ctx.informers.informer(SECRETS, CHILD_SELECTOR)
        # The children besides pods, by kind: their resource and informer.
        self.children: dict[str, tuple[Resource, Any]] = {
            "Service": (SERVICES, self.services),
            "ConfigMap": (CONFIGMAPS, self.configmaps),
            "Secret": (SECRETS, self.secrets),
        }
        self.podgroups = None
        if gang.resource is not None:
            self.podgroups = ctx.informers.informer(gang.resource, CHILD_SELECTOR)
            self.children["PodGroup"] = (gang.resource, self.podgroups)
        if kueue.enabled:
            self.children["Workload"] = (
                WORKLOADS,
                ctx.informers.informer(WORKLOADS, CHILD_SELECTOR),
            )
        self._written = WrittenStatuses()
        self._namespaces_seen: set[str] = set()  # whose lifecycle series exist (at 0 or more)
        # The pods created per job whose creation the cache has not shown yet.
        self._created: TTLCache[str, set[str]] = TTLCache(maxsize=65536, ttl=CREATED_TTL)
        self._created_lock = threading.Lock()
        # Threads start on first use: a kind with no jobs costs none.
        self._create_pool = ThreadPoolExecutor(
            CREATE_PARALLEL, thread_name_prefix=f"{self.resource.kind.lower()}-create"
        )
        self.controller = Controller(
            self.resource.kind.lower(), self.reconcile, workers=ctx.workers, clock=ctx.clock
        )
        self.jobs.add_event_handler(
            on_add=self._enqueue_job,
            on_update=lambda old, new: self._enqueue_job(new),
            on_delete=self._enqueue_job,
        )
        # A job's pods change together (created in a batch, then started by
        # their kubelets within moments): their events reach the job after a
        # short batch period, as in the Kubernetes Job controller, so that one
        # reconcile and one status write see them all.
        self.pods.add_event_handler(
            on_add=self._enqueue_owner_soon,
            on_update=lambda old, new: self._enqueue_owner_soon(new),
            on_delete=self._pod_deleted,
        )
        for informer in (i for _, i in self.children.values()):
            informer.add_event_handler(
                on_add=self._enqueue_owner,
                on_update=lambda old, new: self._enqueue_owner(new),
                on_delete=self._enqueue_owner,
            )
        # Every TensorBoard (shared with their controller): a job's carries the job's
        # name, so a change to it, or the deletion of another holding that name, is
        # the business of the job of that name.
        self.tensorboards = ctx.informers.informer(TENSORBOARDS)
        self.tensorboards.add_event_handler(
            on_add=self._enqueue_job,
            on_update=lambda old, new: self._enqueue_job(new),
            on_delete=self._enqueue_job,
        )
        self.children["TensorBoard"] = (TENSORBOARDS, self.tensorboards)

    # -- handlers (enqueue keys only) ---------------------------------------------------

    def _enqueue_job(self, obj: Obj) -> None:
        self.controller.enqueue(object_key(obj))

    def _pod_gone(self, obj: Obj) -> None:
        """A pod deleted before the cache showed its creation: stop waiting for it."""
        key = controller_owner_key(obj, api_group=self.resource.group, kind=self.resource.kind)
        if key is None:
            return
        with self._created_lock:
            names = self._created.get(key)
            if names:
                names.discard(obj["metadata"]["name"])

    def _awaiting_pods(self, key: str, namespace: str) -> bool:
        """Whether pods this process created for the job are still missing from
        the cache: a plan made now would list them again (their creates would
        only meet AlreadyExists) and write a status that forgets them."""
        with self._created_lock:
            names = self._created.get(key)
            if not names:
                return False
            names.difference_update([n for n in names if self.pods.get(namespace, n) is not None])
            if names:
                return True
            self._created.pop(key, None)
            return False

    def _pod_deleted(self, obj: Obj) -> None:
        self._pod_gone(obj)
        self._enqueue_owner_soon(obj)

    def _enqueue_owner_soon(self, obj: Obj) -> None:
        key = controller_owner_key(obj, api_group=self.resource.group, kind=self.resource.kind)
        if key is not None:
            self.controller.enqueue_after(key, POD_BATCH_PERIOD)

    def _enqueue_owner(self, obj: Obj) -> None:
        key = controller_owner_key(obj, api_group=self.resource.group, kind=self.resource.kind)
        if key is not None:
            self.controller.enqueue(key)

    # -- reconcile ------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        namespace, _, name = key.partition("/")
        job = self.jobs.get(namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            self._written.forget(key)
            with self._created_lock:
                self._created.pop(key, None)
            return Result()  # children go with it through their ownerReferences
        if self._written.awaited(key, job):
            return Result(requeue_after=CACHE_CATCH_UP)
        if self._awaiting_pods(key, namespace):
            return Result(requeue_after=CACHE_CATCH_UP)
        uid = job["metadata"]["uid"]
        self._series_at_zero(namespace)
        rlog = log.bind(kind=self.resource.kind, namespace=namespace, name=name)
        parsed = read(self.kind, job)  # the spec, parsed once for this reconcile
        group = gang.group_name(name, uid)  # also the Workload's name
        view = self._with_gang(self._with_admission(job, parsed.view, group), namespace, group)
        # The TensorBoard before the plan, so that the status written says what
        # became of it (it holds no restart count: the status-first order is for those).
        view, tensorboard_retry = self._with_tensorboard(parsed.job, view, rlog)
        states = self._replicas(uid)
        now: datetime = self.clock.now()
        plan = engine.plan(self.kind, view, states, now)

        new_status = self.kind.render_status(job, plan.status)
        current = self._write_status(job, new_status, key)  # further writes start here
        here = _Attempt(current, view, states, now, key)
        if not job.get("status"):
            # Told once the first status is stored: a write that conflicts is
            # retried from a job still without status, and would tell it again.
            self._accepted(job)
            self._gang_warnings(job, view)
        if current is not job:
            rlog.info(
                "status", phase=plan.status.get("phase"), restarts=plan.status.get("restartCount")
            )
        for type_, reason, message in plan.events:
            self.recorder.record(
                job, "Warning" if type_ == "Warning" else "Normal", reason, message
            )
        if plan.restarts:
            metrics.JOBS_RESTARTED.labels(self.resource.kind, namespace).inc(plan.restarts)
        if plan.finished is not None:
            self._count_finish(job, plan)
        for state in plan.delete:
            try:
                self.client.delete(PODS, state.name, namespace, uid=state.uid)
                rlog.info("deleted pod", pod=state.name)
            except NotFound:
                pass
        if parsed.job is None:
            return Result()  # a spec that does not parse has failed the job: nothing to build
        if plan.status.get("phase") in engine.TERMINAL or view.paused:
            # A finished or paused job holds no quota.
            for child in ("PodGroup", "Workload"):
                self._release(child, namespace, group, rlog)
        else:
            problem = self._ensure_extras(parsed.job, view, rlog)
            if problem is None and view.admission is not None:
                problem = self._ensure_workload(parsed.job, view, states, rlog)
            if problem is not None:
                return self._cannot_have(here, *problem)
        services = self._services(uid) if plan.create else {}
        placements = self._placements(namespace, view) if plan.create else {}
        pods: list[Obj] = []
        for type_, index, mode in plan.create:
            try:
                pod = self.kind.build_pod(parsed.job, type_, index, mode, services)
                if self.gang_config.backend is not None:
                    be = self.gang_config.backend
                    gang.join(pod, be, group, view.gang)
                placement = placements.get(kueue.pod_set_name(type_))
                if placement is not None:
                    kueue.place(pod, placement)
            except ChildNotReady as exc:
                rlog.info("waiting", why=str(exc))
                return Result(requeue_after=CHILD_WAIT)
            except BUILD_ERRORS as exc:
                message = (
                    f"the operator cannot build the pod of replica {type_}-{index} from this "
                    f"spec ({type(exc).__name__}: {exc}); fix the spec and resubmit"
                )
                return self._fail(here, "InvalidSpec", message)
            pods.append(pod)
        problem = self._create_pods(pods, key, uid, rlog)
        if problem is not None:
            return self._cannot_have(here, *problem)
        if tensorboard_retry and plan.requeue_after is None:
            return Result(requeue=True)
        return Result(requeue_after=plan.requeue_after)

    def _create_pods(
        self, pods: list[Obj], key: str, uid: str, rlog: Any
    ) -> tuple[str, str, ApiError | str] | None:
        """Create ``pods`` (exactly those: the plan's missing replicas) in
        slow-start batches of 1, 2, 4, ... in parallel, as the Kubernetes Job
        controller does; the first refusal ends the run, so a namespace out of
        quota costs a request or two, not one per replica. AlreadyExists is
        success unless another owner holds the name. The pods created are
        awaited in the cache before the job is planned again. Returns (what,
        child, problem) for a pod that cannot be had."""
        namespace = key.partition("/")[0]

        def create(pod: Obj) -> bool:
            try:
                # Strict: a field of the template the Pod API does not know (a
                # typo such as `comand`) is refused, never dropped in silence.
                self.client.create(PODS, pod, namespace, field_validation="Strict")
            except AlreadyExists:
                return False
            return True

        outcome = slow_start(pods, create, self._create_pool, max_parallel=CREATE_PARALLEL)
        created = [p["metadata"]["name"] for p, new in outcome.done if new]
        if created:
            rlog.info("created pods", pods=created)
            with self._created_lock:
                self._created[key] = set(created)
        for pod, new in outcome.done:
            if not new:
                clash = self._foreign_owner(PODS, pod, uid)
                if clash:
                    return ("a pod of the job", f"Pod {pod['metadata']['name']}", clash)
        if outcome.failed is not None:
            pod, error = outcome.failed
            if not isinstance(error, ApiError):
                raise error
            labels = pod["metadata"].get("labels") or {}
            replica = f"the pod of replica {labels.get(REPLICA_TYPE)}-{labels.get(REPLICA_INDEX)}"
            return (replica, f"Pod {pod['metadata']['name']}", error)
        return None

    def _with_tensorboard(self, job: Job | None, view: JobView, rlog: Any) -> tuple[JobView, bool]:
        """Make the job's TensorBoard match ``spec.tensorboardSpec`` in every phase of
        the job (paused and finished too: it reads logs already written and holds no
        GPU): create it, keep its spec equal, delete it when the field goes. The view
        gets it as seen; a TensorBoard that cannot be had is reported there, never
        failing the job. Returns the view and whether retrying may cure a refusal."""
        if job is None:
            return view, False  # a spec that does not parse: nothing is built from it
        want = self.kind.tensorboard(job)
        if want is None:
            for owned in self.tensorboards.by_index(CONTROLLER_UID_INDEX, job.uid):
                meta = owned["metadata"]
                if meta.get("deletionTimestamp"):
                    continue
                try:
                    self.client.delete(TENSORBOARDS, meta["name"], job.namespace, uid=meta["uid"])
                    rlog.info("deleted", child=f"TensorBoard/{meta['name']}")
                except NotFound:
                    pass
            return view, False
        name = want["metadata"]["name"]
        seen = self.tensorboards.get(job.namespace, name)
        action, refused, retry = "NOP", "", False
        try:
            if seen is None:
                action = "Create"
                try:
                    self.client.create(TENSORBOARDS, want, job.namespace)
                    rlog.info("created", child=f"TensorBoard/{name}")
                except AlreadyExists:
                    refused = self._foreign_owner(TENSORBOARDS, want, job.uid) or ""
            elif controller_uid(seen) != job.uid:
                refused = self._foreign_owner(TENSORBOARDS, want, job.uid) or ""
            elif not _same_spec(seen.get("spec"), want["spec"]):
                action = "Update"
                updated = copy.deepcopy(seen)
                updated["spec"] = want["spec"]
                self.client.replace(TENSORBOARDS, updated)
                rlog.info("updated", child=f"TensorBoard/{name}")
        except Conflict:
            retry = True  # changed meanwhile: the next pass looks again
        except ApiError as exc:
            retry = not refusal_is_permanent(exc)
            then = "retrying" if retry else "fix spec.tensorboardSpec"
            refused = f"the API server refused TensorBoard {name} ({exc.message}); {then}"
        state = dependent_state(name, job.namespace, seen, action, refused)
        return replace(view, tensorboard=state), retry

    def _with_gang(self, view: JobView, namespace: str, group: str) -> JobView:
        """The view with its PodGroup ``group`` as last seen (with a gang scheduler),
        or held (without one, when the job asks for one and --gang-unavailable=hold)."""
        be = self.gang_config.backend
        if be is not None and self.podgroups is not None:
            seen = self.podgroups.get(namespace, group)
            return replace(view, group=group_state(be, group, seen))
        if self.gang_config.hold and view.gang.asked_by:
            message = (
                f"{view.gang.asked_by} asks for gang scheduling, but the operator runs "
                "without a gang scheduler (--gang-scheduler=none, --gang-unavailable=hold): "
                "the job waits until it runs with one"
            )
            return replace(view, waiting=message, waiting_reason=UNAVAILABLE)
        return view

    def _gang_warnings(self, job: Obj, view: JobView) -> None:
        """Never silently: a job whose gang request this operator cannot serve is told."""
        asked, queue, be = view.gang.asked_by, view.gang.queue, self.gang_config.backend
        if not asked:
            return
        if be is None:
            then = (
                "the job waits (Pending) until the operator runs with one"
                if self.gang_config.hold
                else "the job runs with the default scheduler, its pods placed one by one"
            )
            message = (
                f"{asked} asks for gang scheduling (queue {queue}), but the operator runs "
                f"without a gang scheduler (--gang-scheduler=none): {then}"
            )
            self.recorder.record(job, "Warning", UNAVAILABLE, message)
        elif queue and not be.queues:
            message = (
                f"{asked} names queue {queue}, but the gang scheduler ({be.name}) has no "
                "queues: the job is gang-scheduled without one"
            )
            self.recorder.record(job, "Warning", QUEUE_NOT_SUPPORTED, message)

    def _release(self, kind: str, namespace: str, name: str, rlog: Any) -> None:
        """Delete the job's PodGroup or Workload ``name``, if it has one."""
        if kind not in self.children:
            return
        resource, informer = self.children[kind]
        seen = informer.get(namespace, name)
        if seen is None or seen["metadata"].get("deletionTimestamp"):
            return
        try:
            self.client.delete(resource, name, namespace, uid=seen["metadata"]["uid"])
            rlog.info("deleted", child=f"{kind}/{name}")
        except NotFound:
            pass

    def _with_admission(self, job: Obj, view: JobView, name: str) -> JobView:
        """The view with its Kueue Workload as last seen, when the operator runs
        with Kueue and the job names a queue. Kueue then serves the job's queue:
        a gang scheduler places the admitted pods without one of its own, and
        without a gang scheduler the job is neither warned nor held for one."""
        if not self.kueue_config.enabled:
            return view
        queue = queue_of(job, view.gang.queue)
        if not queue:
            return view
        seen = self.children["Workload"][1].get(view.namespace, name)
        if seen is not None and seen["metadata"].get("deletionTimestamp"):
            seen = None  # on its way out: the next one waits afresh
        return replace(
            view,
            admission=admission_state(name, queue, seen),
            gang=replace(view.gang, queue=None, asked_by=None),
        )

    def _ensure_workload(
        self, job: Job, view: JobView, states: Mapping[tuple[str, int], ReplicaState], rlog: Any
    ) -> tuple[str, str, ApiError | str] | None:
        """Create the job's Workload when it has none; when the job's size no
        longer matches it, delete it (the job queues again at its new size); once
        an evicted job's pods are gone, give its quota reservation back so Kueue
        queues it again."""
        admission = view.admission
        assert admission is not None
        resource, informer = self.children["Workload"]
        name, label = admission.workload, f"Workload {admission.workload}"
        seen = informer.get(job.namespace, name)
        roles = [r for r in view.roles if r.replicas]
        if seen is not None:
            if seen["metadata"].get("deletionTimestamp"):
                return None
            if kueue.counts(seen) != {kueue.pod_set_name(r.type): r.replicas for r in roles}:
                self._release("Workload", job.namespace, name, rlog)
            elif admission.evicted and not states and holds_quota(seen):
                self._give_back(seen, admission, rlog)
            return None
        try:
            named = view.gang.priority_class
            priority = workload_priority(self.client, named) if named else None
            services = self._services(job.uid)
            sets = [
                kueue.PodSet(
                    kueue.pod_set_name(r.type),
                    r.replicas,
                    self.kind.build_pod(job, r.type, 0, PodMode(), services),
                )
                for r in roles
            ]
            body = kueue.workload(job, name, admission.queue, sets, priority)
            self.client.create(resource, body, job.namespace)
            rlog.info("created", child=f"Workload/{name}", queue=admission.queue)
        except ChildNotReady:
            return None  # the Services first; the reconcile comes back for it
        except AlreadyExists:
            clash = self._foreign_owner(resource, body, job.uid)
            if clash:
                return ("the job's Workload", label, clash)
        except ApiError as exc:
            return ("the job's Workload", label, exc)
        return None

    def _placements(self, namespace: str, view: JobView) -> dict[str, kueue.Placement]:
        """Where the admitted Workload's flavors put each pod set (none without Kueue)."""
        if view.admission is None or not view.admission.admitted:
            return {}
        seen = self.children["Workload"][1].get(namespace, view.admission.workload)
        if seen is None:
            return {}
        out: dict[str, kueue.Placement] = {}
        for pod_set, names in kueue.assigned_flavors(seen).items():
            labels: dict[str, str] = {}
            tolerations: list[Obj] = []
            for name in sorted(names):
                try:
                    flavor = self.client.get(RESOURCE_FLAVORS, name)
                except NotFound:
                    continue  # deleted since the admission: Kueue will evict it
                spec = flavor.get("spec") or {}
                labels.update(spec.get("nodeLabels") or {})
                tolerations.extend(spec.get("tolerations") or [])
            out[pod_set] = kueue.Placement(labels, tuple(tolerations))
        return out

    def _give_back(self, workload: Obj, admission: AdmissionState, rlog: Any) -> None:
        """An evicted Workload whose job has stopped gives its quota reservation back."""
        updated = copy.deepcopy(workload)
        status = updated.setdefault("status", {})
        status.pop("admission", None)
        now = engine.fmt_time(self.clock.now())
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "QuotaReserved"]
        conditions.append(
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": admission.message or "evicted",
                "lastTransitionTime": now,
            }
        )
        for c in conditions:
            if c.get("type") == "Admitted" and c.get("status") == "True":
                c.update(status="False", reason="NoReservation", lastTransitionTime=now)
        status["conditions"] = conditions
        try:
            self.client.replace_status(WORKLOADS, updated)
            rlog.info("gave back the quota of", child=f"Workload/{workload['metadata']['name']}")
        except (NotFound, Conflict):
            pass  # gone, or changed meanwhile: the next reconcile looks again

    def _accepted(self, job: Obj) -> None:
        """The Created Event and counter, and a Warning for fields stored but not acted on."""
        kind, meta = self.resource.kind, job["metadata"]
        metrics.JOBS_CREATED.labels(kind, meta["namespace"]).inc()
        self.recorder.record(job, "Normal", "Created", f"{kind} {meta['name']} accepted")
        ignored = self.kind.fields_not_acted_on(job)
        if ignored:
            message = (
                f"{', '.join(ignored)}: stored as written, but this operator does not "
                "act on it yet; the job runs as if it were not set"
            )
            self.recorder.record(job, "Warning", "FieldNotActedOn", message)

    def _cannot_have(self, p: _Attempt, what: str, child: str, problem: ApiError | str) -> Result:
        """A child that cannot be had: fail the job (a refusal retrying cannot
        cure, a name clash) or keep it Pending with a condition and a Warning
        Event saying what it waits for, and retry with backoff."""
        if isinstance(problem, str):
            return self._fail(p, "NameConflict", problem)
        quoted = f"{child}: {problem.message}"
        if refusal_is_permanent(problem):
            reason = "InvalidSpec" if isinstance(problem, (Invalid, BadRequest)) else "Forbidden"
            message = (
                f"the API server refused {what} ({quoted}); retrying cannot help: "
                "fix the spec (or the namespace's policy) and resubmit"
            )
            return self._fail(p, reason, message)
        message = f"waiting to create {what}, which the API server refused ({quoted}); retrying"
        waiting = engine.plan(self.kind, replace(p.view, waiting=message), p.states, p.now)
        self._write_status(p.job, self.kind.render_status(p.job, waiting.status), p.key)
        self.recorder.record(p.job, "Warning", "FailedCreate", message)
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

    def _fail(self, p: _Attempt, reason: str, message: str) -> Result:
        """Fail the job now with ``reason`` and ``message`` (status and Event)."""
        failing = replace(p.view, spec_error=message, spec_error_reason=reason)
        failed = engine.plan(self.kind, failing, p.states, p.now)
        job = p.job
        self._write_status(job, self.kind.render_status(job, failed.status), p.key)
        for type_, why, text in failed.events:
            self.recorder.record(job, "Warning" if type_ == "Warning" else "Normal", why, text)
        if failed.finished is not None:
            self._count_finish(job, failed)
        return Result()

    def _foreign_owner(self, resource: Resource, child: Obj, uid: str) -> str | None:
        """A message naming the other owner when a child of this name exists
        but is not this job's (two jobs of different kinds with one name)."""
        meta = child["metadata"]
        informer = self.pods if child["kind"] == "Pod" else self.children[child["kind"]][1]
        existing = informer.get(meta["namespace"], meta["name"])
        if existing is None:  # not in the cache yet (or not ours): ask the API server
            try:
                existing = self.client.get(resource, meta["name"], meta["namespace"])
            except NotFound:
                return None
        owners = existing["metadata"].get("ownerReferences") or []
        owner = next((o for o in owners if o.get("controller")), None)
        if owner is not None and owner.get("uid") == uid:
            return None
        held = f"{owner['kind']} {owner['name']}" if owner else "nothing (it has no controller)"
        return (
            f"{child['kind']} {meta['name']} already exists and belongs to {held}: two jobs "
            "whose children's names collide cannot share a namespace; rename this job"
        )

    def _services(self, uid: str) -> dict[str, Obj]:
        return {s["metadata"]["name"]: s for s in self.services.by_index(CONTROLLER_UID_INDEX, uid)}

    def _replicas(self, uid: str) -> dict[tuple[str, int], ReplicaState]:
        out: dict[tuple[str, int], ReplicaState] = {}
        for pod in self.pods.by_index(CONTROLLER_UID_INDEX, uid):
            labels = pod["metadata"].get("labels") or {}
            if labels.get(JOB_KIND) != self.resource.kind:
                continue
            try:
                key = (str(labels[REPLICA_TYPE]), int(labels[REPLICA_INDEX]))
            except (KeyError, ValueError):
                continue
            out[key] = replica_state(pod, self._training_container(pod))
        return out

    def _training_container(self, pod: Obj) -> str | None:
        names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        for wanted in self.kind.training_containers:
            if wanted in names:
                return wanted
        return None

    def _ensure_extras(
        self, job: Job, view: JobView, rlog: Any
    ) -> tuple[str, str, ApiError | str] | None:
        """Create missing Services, ConfigMaps, the ssh Secret and the PodGroup, and
        keep ConfigMaps and the PodGroup's spec equal to what is built. Returns
        (what, child, problem) for a child that cannot be had: the API server's
        refusal, or a name clash."""
        uid, namespace = job.uid, job.namespace
        caches = self.children
        have = {
            (kind, o["metadata"]["name"]): o
            for kind, (_, informer) in caches.items()
            for o in informer.by_index(CONTROLLER_UID_INDEX, uid)
        }
        wanted = list(self.kind.extras(job))
        if self.gang_config.backend is not None:
            wanted.append(gang.pod_group(job, self.gang_config.backend, view.gang))
        if self.kind.uses_ssh and ("Secret", ssh_secret_name(job.name)) not in have:
            # A fresh key pair only when the Secret does not exist yet: never
            # shared between jobs, never rotated under running replicas.
            private, public = generate_keypair(f"t9k/{namespace}/{job.name}")
            secret = self.kind.ssh_secret(job, private, public)
            if secret is not None:
                wanted.append(secret)
        for child in wanted:
            resource = caches[child["kind"]][0]
            existing = have.get((child["kind"], child["metadata"]["name"]))
            label = f"{child['kind']} {child['metadata']['name']}"
            if existing is None:
                try:
                    self.client.create(resource, child, namespace)
                    rlog.info("created", child=f"{child['kind']}/{child['metadata']['name']}")
                except AlreadyExists:
                    clash = self._foreign_owner(resource, child, uid)
                    if clash:
                        return (f"the job's {child['kind']}", label, clash)
                except ApiError as exc:
                    return (f"the job's {child['kind']}", label, exc)
            elif child["kind"] == "ConfigMap" and existing.get("data") != child.get("data"):
                updated = copy.deepcopy(existing)
                updated["data"] = child.get("data")
                self.client.replace(resource, updated)
                rlog.info("updated", child=f"ConfigMap/{child['metadata']['name']}")
            elif child["kind"] == "PodGroup" and any(
                existing["spec"].get(k) != v for k, v in child["spec"].items()
            ):
                # Elastic scaling moves minMember; the scheduler's own spec fields stay.
                updated = copy.deepcopy(existing)
                updated["spec"] = {**existing["spec"], **child["spec"]}
                self.client.replace(resource, updated)
                rlog.info("updated", child=f"PodGroup/{child['metadata']['name']}")
        return None

    def _series_at_zero(self, namespace: str) -> None:
        """Export this kind's lifecycle series of ``namespace`` at 0 once a job of
        it is seen, so that a job's success, restart or duration is an increase
        rate() and increase() see, not the birth of a series they cannot.
        (Failures carry a reason, which is not known beforehand: rules.yaml
        counts the birth of such a series as its whole value.)"""
        if namespace in self._namespaces_seen:
            return
        kind = self.resource.kind
        metrics.JOBS_SUCCEEDED.labels(kind, namespace)
        metrics.JOBS_RESTARTED.labels(kind, namespace)
        for phase in engine.TERMINAL:
            metrics.JOB_DURATION.labels(kind, namespace, phase)
        self._namespaces_seen.add(namespace)

    def _count_finish(self, job: Obj, plan: engine.Plan) -> None:
        """Count a job that has just finished, and log it (a failure with its reason)."""
        assert plan.finished is not None
        kind, ns = self.resource.kind, job["metadata"]["namespace"]
        flog = log.bind(kind=kind, namespace=ns, name=job["metadata"]["name"])
        if plan.finished.phase == "Succeeded":
            metrics.JOBS_SUCCEEDED.labels(kind, ns).inc()
            flog.info("job succeeded", phase="Succeeded")
        else:
            metrics.JOBS_FAILED.labels(kind, ns, plan.finished.reason).inc()
            flog.warning(
                "job failed",
                phase=plan.finished.phase,
                reason=str(plan.finished.reason),
                message=plan.finished.message,
            )
        start = engine.parse_time(plan.status.get("startTime"))
        end = engine.parse_time(plan.status.get("completionTime"))
        if start and end:
            metrics.JOB_DURATION.labels(kind, ns, plan.finished.phase).observe(
                (end - start).total_seconds()
            )
