"""Writing a job's children: one planned
:class:`~t9k_operator.reconcilers.pipeline.contract.Action` at a time,
done idempotently, and what cannot be done said as a
:class:`~t9k_operator.reconcilers.pipeline.plan.Problem` (the job holds or
fails) or a :class:`~t9k_operator.reconcilers.pipeline.contract.Refusal`
(back to the integration whose soft action it was).

The plan's missing pods are created in slow-start batches of 1, 2, 4, ... in
parallel, as the Kubernetes Job controller creates a Job's pods: the first
refusal ends the run, so a namespace out of quota costs a request or two.

AlreadyExists is success when the object is the job's; when another owner
holds the name, the job cannot have it (two jobs whose children's names
collide). The reads are the informers' caches, except for that one case: an
object that is not the operator's is not in its label-selected caches.

Nothing here is particular to jobs but the words of a hard action's problem
and the pods' batches: an integration's own controller of other objects
writes its children through a :class:`Writer` too, as soft actions whose
refusals it reads itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from t9k_operator.builders.common import CHILD_SELECTOR, REPLICA_INDEX, REPLICA_TYPE
from t9k_operator.informers import CONTROLLER_UID_INDEX
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.informers.informer import SharedInformer
from t9k_operator.kube import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    KubeClient,
    NotFound,
)
from t9k_operator.objects import Obj, controller_ref
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Refusal,
    Watch,
    clash,
)
from t9k_operator.reconcilers.pipeline.plan import KIND_CHILDREN, Problem
from t9k_operator.resources import PODS, Resource
from t9k_operator.runtime.batch import slow_start

CREATE_PARALLEL = 16
"""At most this many pod creates of one job kind in flight at once (the
slow-start batches of all its workers share one pool of threads)."""


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


def cannot_have(what: str, child: str, problem: ApiError | str) -> Problem:
    """The problem of a child refused by the API server, or held by another owner
    (``problem`` is then the clash's message)."""
    if isinstance(problem, str):
        return Problem("NameConflict", problem, fail=True)
    quoted = f"{child}: {problem.message}"
    if refusal_is_permanent(problem):
        reason = "InvalidSpec" if isinstance(problem, (Invalid, BadRequest)) else "Forbidden"
        message = (
            f"the API server refused {what} ({quoted}); retrying cannot help: "
            "fix the spec (or the namespace's policy) and resubmit"
        )
        return Problem(reason, message, fail=True)
    message = f"waiting to create {what}, which the API server refused ({quoted}); retrying"
    return Problem("FailedCreate", message, fail=False)


JOB_CHILDREN = (PODS, *KIND_CHILDREN.values())
"""What a job's reconcile writes itself, read from the operator's labelled caches."""


class InformerCaches:
    """The informers a reconcile reads: its own ``children`` (by the operator's
    labels; a job's by default), what its integrations ask for, and what the
    integrations' servers provide them (``sources``, by name)."""

    def __init__(
        self,
        informers: InformerFactory,
        watches: Sequence[Watch],
        sources: Mapping[str, object] | None = None,
        children: Sequence[Resource] = JOB_CHILDREN,
    ) -> None:
        self._sources = sources if sources is not None else {}
        self._by_resource: dict[Resource, SharedInformer] = {}
        for resource in children:
            self._by_resource[resource] = informers.informer(resource, CHILD_SELECTOR)
        for w in watches:
            selector = CHILD_SELECTOR if w.owned else None
            self._by_resource[w.resource] = informers.informer(w.resource, selector)

    def informer(self, resource: Resource) -> SharedInformer:
        return self._by_resource[resource]

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj | None:
        return self._by_resource[resource].get(namespace, name)

    def owned(self, resource: Resource, uid: str) -> list[Obj]:
        return self._by_resource[resource].by_index(CONTROLLER_UID_INDEX, uid)

    def source(self, name: str) -> object | None:
        return self._sources.get(name)


@dataclass(frozen=True)
class Gone:
    """A create met AlreadyExists, and nothing of that name was there when it
    looked: deleted meanwhile. Nothing was written; the next pass creates it.
    The job's applier counts it done (as it counts the child's own delete);
    a controller that must look again at once reads it as a retry."""


class Writer:
    """Writes the children of one kind's objects (its jobs, or TensorBoards);
    only a job kind's writer creates pods in batches (``pool``)."""

    def __init__(
        self,
        client: KubeClient,
        caches: InformerCaches,
        pool: ThreadPoolExecutor | None = None,
        on_created: Callable[[str, list[str]], None] = lambda key, names: None,
    ) -> None:
        self.client, self.caches, self.pool = client, caches, pool
        self.on_created = on_created
        """Told the pods a batch created, by job key (the cache is to show them)."""

    def foreign_owner(
        self, resource: Resource, child: Obj, uid: str
    ) -> str | Gone | Problem | None:
        """A message naming the other owner when a child of this name exists
        but is not the owner ``uid``'s (two jobs of different kinds with one
        name); :class:`Gone` when nothing of that name is there any more; a
        hold when it is a previous job's of this kind and name (deleted, and
        its children not yet collected: a job recreated under the same name,
        as MultiKueue does on a worker when it dispatches a job again)."""
        meta = child["metadata"]
        existing = self.caches.get(resource, meta["namespace"], meta["name"])
        if existing is None:  # not in the cache yet (or not ours): ask the API server
            try:
                existing = self.client.get(resource, meta["name"], meta["namespace"])
            except NotFound:
                return Gone()
        owner = controller_ref(existing)
        if owner is not None and owner.get("uid") == uid:
            return None
        mine = controller_ref(child) or {}
        if owner is not None and (owner.get("kind"), owner.get("name")) == (
            mine.get("kind"),
            mine.get("name"),
        ):
            message = (
                f"waiting for {child['kind']} {meta['name']} of the previous {owner['kind']} "
                f"{owner['name']} (uid {owner.get('uid')}, deleted) to be collected; retrying"
            )
            return Problem("FailedCreate", message, fail=False)
        return clash(child["kind"], meta["name"], owner)

    def act(self, action: Action, key: str, uid: str, rlog: Any) -> Problem | Refusal | Gone | None:
        """Carry out one action of job ``key`` (its ``uid``). A hard one's trouble
        is a :class:`Problem`; a soft one's a :class:`Refusal` for its integration."""
        body, resource = action.body, action.resource
        if action.verb == "create_pods":
            return self.pods(body["items"], key, uid, rlog)
        meta = body["metadata"]
        name, namespace = meta["name"], meta.get("namespace")
        label = f"{resource.kind}/{name}"
        try:
            if action.verb == "create":
                strict = "Strict" if action.strict else None
                self.client.create(resource, body, namespace, field_validation=strict, answer=False)
                rlog.info("created", child=label)
            elif action.verb == "replace":
                self.client.replace(resource, body)
                rlog.info("updated", child=label)
            elif action.verb == "replace_status":
                self.client.replace_status(resource, body)
                rlog.info("updated the status of", child=label)
            elif action.verb == "delete":
                self.client.delete(resource, name, namespace, uid=meta.get("uid"))
                rlog.info("deleted", child=label)
            else:
                raise ValueError(f"unknown action {action.verb!r}")
        except AlreadyExists:
            found = self.foreign_owner(resource, body, uid)
            if isinstance(found, Problem) and action.soft:
                return Refusal(found.message, permanent=False)
            if not isinstance(found, str):
                return found
            if action.soft:
                return Refusal(found, clash=True, permanent=True)
            return cannot_have(action.what, action.label, found)
        except NotFound as exc:
            if action.verb != "create":
                return None  # gone meanwhile: nothing left to do
            return self._refused(action, exc)
        except Conflict as exc:
            if action.verb != "create":
                return Refusal("changed meanwhile", conflict=True)
            return self._refused(action, exc)
        except ApiError as exc:
            if action.verb not in ("create", "replace"):
                raise
            return self._refused(action, exc)
        return None

    @staticmethod
    def _refused(action: Action, exc: ApiError) -> Problem | Refusal:
        if action.soft:
            return Refusal(exc.message, permanent=refusal_is_permanent(exc))
        return cannot_have(action.what, action.label, exc)

    def pods(self, pods: list[Obj], key: str, uid: str, rlog: Any) -> Problem | None:
        """Create ``pods`` (exactly those: the plan's missing replicas) in slow-start
        batches (the names created go to ``on_created``); the problem of a pod
        that cannot be had."""
        namespace = key.partition("/")[0]
        if self.pool is None:
            raise ValueError("this writer creates no pods in batches: it has no pool")

        def create(pod: Obj) -> bool:
            try:
                # Strict: a field of the template the Pod API does not know (a
                # typo such as `comand`) is refused, never dropped in silence.
                self.client.create(PODS, pod, namespace, field_validation="Strict", answer=False)
            except AlreadyExists:
                return False
            return True

        outcome = slow_start(pods, create, self.pool, max_parallel=CREATE_PARALLEL)
        created = [p["metadata"]["name"] for p, new in outcome.done if new]
        if created:
            rlog.info("created pods", pods=created)
            self.on_created(key, created)
        for pod, new in outcome.done:
            if not new:
                found = self.foreign_owner(PODS, pod, uid)
                if isinstance(found, Problem):
                    return found
                if isinstance(found, str):
                    return cannot_have("a pod of the job", f"Pod {pod['metadata']['name']}", found)
        if outcome.failed is not None:
            pod, error = outcome.failed
            if not isinstance(error, ApiError):
                raise error
            labels = pod["metadata"].get("labels") or {}
            replica = f"the pod of replica {labels.get(REPLICA_TYPE)}-{labels.get(REPLICA_INDEX)}"
            return cannot_have(replica, f"Pod {pod['metadata']['name']}", error)
        return None
