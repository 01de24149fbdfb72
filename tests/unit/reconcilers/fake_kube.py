"""A fake at the ``kube/`` boundary for unit tests of the reconciler.

:class:`FakeKube` stands in for :class:`~t9k_operator.kube.KubeClient`: an
in-memory object store with the API server's rules that the reconciler relies
on (a new uid and a resourceVersion on every create, AlreadyExists, optimistic concurrency on
updates, NotFound), a log of every write, and failures the test injects. The
informers are the real ones, never started: :meth:`FakeKube.sync` copies the
fake's objects into their caches, which is what a watch would do.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from t9k_operator.informers.factory import InformerFactory
from t9k_operator.kube import AlreadyExists, ApiError, Conflict, NotFound, Resource
from t9k_operator.objects import Obj


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}  # (kind, namespace, name)
        self.resources: dict[str, Resource] = {}
        self.writes: list[tuple[str, str, str]] = []  # (verb, kind, name), in order
        self.reads: list[tuple[str, str]] = []  # (kind, name) of every get, in order
        self.fail: dict[tuple[str, str], list[ApiError]] = {}  # (verb, kind) -> errors to raise
        self._rv = itertools.count(100)
        self._uid = itertools.count(1)

    # -- set-up ------------------------------------------------------------------------

    def put(self, resource: Resource, obj: Obj) -> Obj:
        """Store ``obj`` as if a user had created it."""
        stored = copy.deepcopy(obj)
        meta = stored.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uid)}")
        meta["resourceVersion"] = str(next(self._rv))
        self.resources[resource.kind] = resource
        self.objects[(resource.kind, meta.get("namespace", ""), meta["name"])] = stored
        return copy.deepcopy(stored)

    def fail_next(self, verb: str, kind: str, error: ApiError) -> None:
        self.fail.setdefault((verb, kind), []).append(error)

    def sync(self, informers: InformerFactory, *caches: tuple[Resource, str | None]) -> None:
        """Make the informers' caches hold exactly the fake's objects."""
        for resource, selector in caches:
            store = informers.informer(resource, selector).store
            objs = [copy.deepcopy(o) for (k, _, _), o in self.objects.items() if k == resource.kind]
            store.replace(objs, str(next(self._rv)))

    def of_kind(self, kind: str) -> list[Obj]:
        return [copy.deepcopy(o) for (k, _, _), o in sorted(self.objects.items()) if k == kind]

    # -- the KubeClient methods the reconciler calls ----------------------------------

    def _raise_injected(self, verb: str, kind: str) -> None:
        errors = self.fail.get((verb, kind))
        if errors:
            raise errors.pop(0)

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        self.reads.append((resource.kind, name))
        obj = self.objects.get((resource.kind, namespace or "", name))
        if obj is None:
            raise NotFound(f"{resource.plural} {name!r} not found")
        return copy.deepcopy(obj)

    def create(
        self,
        resource: Resource,
        body: Obj,
        namespace: str | None = None,
        *,
        field_validation: str | None = None,
        answer: bool = True,
    ) -> Obj:
        kind = body.get("kind") or resource.kind
        self._raise_injected("create", kind)
        name = body["metadata"]["name"]
        if (kind, namespace or "", name) in self.objects:
            raise AlreadyExists(f"{resource.plural} {name!r} already exists")
        body = copy.deepcopy(body)
        body["metadata"]["namespace"] = namespace or ""
        # The API server gives every object it creates a new uid, whatever the
        # body says: a pod recreated under its predecessor's name is not it.
        body["metadata"].pop("uid", None)
        if kind == "Service" and not body.get("spec", {}).get("clusterIP"):
            # The API server allocates a ClusterIP (a headless Service asks for "None").
            body.setdefault("spec", {})["clusterIP"] = f"10.96.0.{len(self.objects) + 10}"
        self.writes.append(("create", kind, name))
        created = self.put(resource, body)
        return created if answer else {}

    def _update(
        self, verb: str, resource: Resource, body: Obj, apply: Callable[[Obj], None]
    ) -> Obj:
        meta = body["metadata"]
        self._raise_injected(verb, resource.kind)
        key = (resource.kind, meta.get("namespace", ""), meta["name"])
        current = self.objects.get(key)
        if current is None:
            raise NotFound(f"{resource.plural} {meta['name']!r} not found")
        if meta.get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict(
                "the object has been modified; please apply your changes to the latest version"
            )
        apply(current)
        current["metadata"]["resourceVersion"] = str(next(self._rv))
        self.writes.append((verb, resource.kind, meta["name"]))
        return copy.deepcopy(current)

    def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj:
        def whole(current: Obj) -> None:
            status = current.get("status")
            current.clear()
            current.update(copy.deepcopy(body))
            if status is not None:
                current["status"] = status

        return self._update("replace", resource, body, whole)

    def replace_status(self, resource: Resource, body: Obj) -> Obj:
        def status(current: Obj) -> None:
            current["status"] = copy.deepcopy(body.get("status"))

        return self._update("replace_status", resource, body, status)

    def delete(
        self, resource: Resource, name: str, namespace: str | None = None, *, uid: str | None = None
    ) -> None:
        self._raise_injected("delete", resource.kind)
        key = (resource.kind, namespace or "", name)
        if key not in self.objects:
            raise NotFound(f"{resource.plural} {name!r} not found")
        del self.objects[key]
        self.writes.append(("delete", resource.kind, name))
