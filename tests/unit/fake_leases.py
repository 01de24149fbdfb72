"""An in-memory Lease API for the leader election tests: a store with
resourceVersions and optimistic concurrency, a link to it that can go down,
callbacks that record leadership, and :func:`make`, an elector over them for
the Lease ``NS/NAME``."""

from __future__ import annotations

import copy
import random
import threading
from collections.abc import Callable
from typing import Any

from t9k_operator.kube.errors import AlreadyExists, Conflict, NotFound, TransportError
from t9k_operator.objects import Obj
from t9k_operator.resources import LEASES, Resource
from t9k_operator.runtime.leaderelection import LeaderElectionOptions, LeaderElector

NS, NAME = "t9k-system", "t9k-operator"


class LeaseStore:
    """An API server for Leases: resourceVersions and optimistic concurrency."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}
        self._rv = 0
        self._lock = threading.Lock()
        self.before_replace: Callable[[], None] | None = None

    def _bump(self, obj: Obj) -> Obj:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        return obj

    def put(self, spec: Obj) -> None:
        """Write a Lease directly (another holder's doing)."""
        with self._lock:
            key = (NS, NAME)
            obj = self.objects.get(key) or {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": NAME, "namespace": NS},
            }
            obj = copy.deepcopy(obj)
            obj["spec"] = dict(spec)
            self.objects[key] = self._bump(obj)

    def spec(self) -> Obj:
        return copy.deepcopy(self.objects[(NS, NAME)]["spec"])

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        assert resource == LEASES
        with self._lock:
            obj = self.objects.get((namespace or "", name))
            if obj is None:
                raise NotFound("lease not found")
            return copy.deepcopy(obj)

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        assert resource == LEASES
        with self._lock:
            key = (namespace or body["metadata"]["namespace"], body["metadata"]["name"])
            if key in self.objects:
                raise AlreadyExists("lease exists", reason="AlreadyExists")
            obj = self._bump(copy.deepcopy(body))
            self.objects[key] = obj
            return copy.deepcopy(obj)

    def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj:
        assert resource == LEASES
        if self.before_replace is not None:
            hook, self.before_replace = self.before_replace, None
            hook()
        with self._lock:
            key = (body["metadata"]["namespace"], body["metadata"]["name"])
            current = self.objects.get(key)
            if current is None:
                raise NotFound("lease not found")
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise Conflict("the object has been modified")
            obj = self._bump(copy.deepcopy(body))
            self.objects[key] = obj
            return copy.deepcopy(obj)


class Link:
    """One elector's connection to the store; ``down`` makes every call fail."""

    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.down = False
        self.calls = 0

    def _check(self) -> None:
        self.calls += 1
        if self.down:
            raise TransportError("connection refused")

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        self._check()
        return self.store.get(resource, name, namespace)

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self._check()
        return self.store.create(resource, body, namespace)

    def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj:
        self._check()
        return self.store.replace(resource, body, subresource)


class Callbacks:
    def __init__(self) -> None:
        self.log: list[str] = []

    def started(self) -> None:
        self.log.append("started")

    def stopped(self) -> None:
        self.log.append("stopped")


def make(
    client: Any,
    identity: str,
    clock: Any,
    callbacks: Callbacks | None = None,
    **kwargs: Any,
) -> tuple[LeaderElector, Callbacks]:
    """An elector for the Lease NS/NAME; timings among ``kwargs`` go to its options."""
    cb = callbacks or Callbacks()
    timings = {
        key: kwargs.pop(key)
        for key in ("lease_duration", "renew_deadline", "retry_period")
        if key in kwargs
    }
    elector = LeaderElector(
        client,
        LeaderElectionOptions(namespace=NS, lease_name=NAME, **timings),
        identity=identity,
        clock=clock,
        on_started_leading=cb.started,
        on_stopped_leading=cb.stopped,
        rng=random.Random(7),
        **kwargs,
    )
    return elector, cb


def other_holder(transitions: int = 3, duration: int = 15) -> Obj:
    # renewTime is far in the past on purpose: wall clocks must not be compared.
    return {
        "holderIdentity": "other",
        "leaseDurationSeconds": duration,
        "acquireTime": "2020-01-01T00:00:00.000000Z",
        "renewTime": "2020-01-01T00:00:00.000000Z",
        "leaseTransitions": transitions,
    }
