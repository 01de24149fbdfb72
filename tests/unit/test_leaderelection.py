"""Unit tests for t9k_operator.runtime.leaderelection and .lease (fake clock, in-memory Leases)."""

from __future__ import annotations

import copy
import random
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator.foundation.clock import RealClock
from t9k_operator.kube.errors import AlreadyExists, Conflict, NotFound, TransportError
from t9k_operator.objects import Obj
from t9k_operator.resources import LEASES, Resource
from t9k_operator.runtime.leaderelection import LeaderElectionOptions, LeaderElector
from t9k_operator.runtime.lease import held_spec, holder_of, new_lease, released_spec
from tests.fakes import FakeClock

NS, NAME = "t9k-system", "t9k-operator"
MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


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


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> LeaseStore:
    return LeaseStore()


def test_lease_records_are_built_without_touching_the_old_one() -> None:
    t0, t1 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 0, 2, tzinfo=UTC)
    body = new_lease(NS, NAME, "a", 15, t0)
    assert body["apiVersion"] == "coordination.k8s.io/v1" and body["kind"] == "Lease"
    assert body["metadata"] == {"name": NAME, "namespace": NS}
    created = body["spec"]
    assert holder_of(created) == "a" and created["leaseTransitions"] == 0
    assert created["acquireTime"] == created["renewTime"] == "2026-01-01T00:00:00.000000Z"

    renewed = held_spec(created, "a", 15, t1, keep_acquire=True)
    assert renewed["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    assert renewed["renewTime"] == "2026-01-01T00:00:02.000000Z"
    assert renewed["leaseTransitions"] == 0
    taken = held_spec(other_holder(transitions=3), "b", 15, t1, keep_acquire=False)
    assert holder_of(taken) == "b" and taken["leaseTransitions"] == 4
    assert taken["acquireTime"] == taken["renewTime"] == "2026-01-01T00:00:02.000000Z"

    released = released_spec(renewed, t1)
    assert holder_of(released) == "" and released["leaseDurationSeconds"] == 1
    assert released["leaseTransitions"] == 0
    assert holder_of(created) == "a" and created["renewTime"] == "2026-01-01T00:00:00.000000Z"
    assert holder_of(None) == ""


def test_rejects_unsafe_timings(store: LeaseStore, clock: FakeClock) -> None:
    with pytest.raises(ValueError):
        make(store, "a", clock, lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        make(store, "a", clock, renew_deadline=2, retry_period=2)
    with pytest.raises(ValueError):
        make(store, "", clock)


def test_acquires_an_absent_lease(store: LeaseStore, clock: FakeClock) -> None:
    elector, cb = make(store, "a", clock)
    assert not elector.is_leader()

    assert elector.step() == 2.0
    assert elector.is_leader()
    assert cb.log == ["started"]
    spec = store.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"] == "2026-01-01T00:00:00.000000Z"
    assert MICRO.fullmatch(spec["renewTime"])
    assert elector.leader() == "a"


def test_waits_for_local_expiry_before_taking_over(store: LeaseStore, clock: FakeClock) -> None:
    store.put(other_holder(transitions=3))
    elector, cb = make(store, "b", clock)

    elector.step()  # first sight of the record starts the local timer
    assert not elector.is_leader()
    assert elector.leader() == "other"

    clock.step(14.9)
    elector.step()
    assert not elector.is_leader()
    assert store.spec()["holderIdentity"] == "other"

    clock.step(0.2)  # 15.1 s since the record was last seen to change
    elector.step()
    assert elector.is_leader()
    assert cb.log == ["started"]
    spec = store.spec()
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 4
    assert spec["acquireTime"] == spec["renewTime"] == "2026-01-01T00:00:15.100000Z"


def test_a_renewal_by_the_holder_restarts_the_local_timer(
    store: LeaseStore, clock: FakeClock
) -> None:
    store.put(other_holder())
    elector, _ = make(store, "b", clock)
    elector.step()
    clock.step(10)
    store.put({**other_holder(), "renewTime": "2020-01-01T00:00:10.000000Z"})
    elector.step()  # sees the change at t=10
    clock.step(14)
    elector.step()  # t=24: 14 s since the change
    assert not elector.is_leader()
    clock.step(1.5)
    elector.step()  # t=25.5
    assert elector.is_leader()


def test_honours_the_holders_lease_duration(store: LeaseStore, clock: FakeClock) -> None:
    store.put(other_holder(duration=40))
    elector, _ = make(store, "b", clock)
    elector.step()
    clock.step(30)
    elector.step()
    assert not elector.is_leader()
    clock.step(10.5)
    elector.step()
    assert elector.is_leader()


def test_released_lease_is_taken_at_once(store: LeaseStore, clock: FakeClock) -> None:
    store.put({**other_holder(transitions=5), "holderIdentity": "", "leaseDurationSeconds": 1})
    elector, _ = make(store, "b", clock)
    elector.step()
    assert elector.is_leader()
    assert store.spec()["leaseTransitions"] == 6


def test_renews_while_leading(store: LeaseStore, clock: FakeClock) -> None:
    elector, cb = make(store, "a", clock)
    elector.step()
    rv = store.objects[(NS, NAME)]["metadata"]["resourceVersion"]
    clock.step(2)
    assert elector.step() == 2.0
    spec = store.spec()
    assert spec["renewTime"] == "2026-01-01T00:00:02.000000Z"
    assert spec["acquireTime"] == "2026-01-01T00:00:00.000000Z"
    assert spec["leaseTransitions"] == 0
    assert store.objects[(NS, NAME)]["metadata"]["resourceVersion"] != rv
    assert elector.is_leader()
    assert cb.log == ["started"]


def test_renew_recovers_from_a_stale_copy(store: LeaseStore, clock: FakeClock) -> None:
    elector, _ = make(store, "a", clock)
    elector.step()
    # Someone touches the Lease (e.g. adds a label) without taking it: the
    # optimistic PUT conflicts, the elector re-reads and renews anyway.
    store.put(store.spec())
    clock.step(2)
    elector.step()
    assert elector.is_leader()
    assert store.spec()["renewTime"] == "2026-01-01T00:00:02.000000Z"


def test_loses_leadership_when_renewal_fails_past_the_deadline(
    store: LeaseStore, clock: FakeClock
) -> None:
    link = Link(store)
    cb = Callbacks()
    elector, _ = make(link, "a", clock, cb)

    def started() -> None:
        cb.log.append("started")
        link.down = True  # partitioned right after acquiring

    elector._on_started = started
    t0 = clock.monotonic()
    elector.run()  # returns on loss: the fake clock makes the waits instant

    assert cb.log == ["started", "stopped"]
    assert not elector.is_leader()
    assert clock.monotonic() - t0 == pytest.approx(10.0)  # exactly the renew deadline
    assert store.spec()["holderIdentity"] == "a"  # no release after a loss


def test_loses_leadership_when_another_holds_the_lease(store: LeaseStore, clock: FakeClock) -> None:
    elector, cb = make(store, "a", clock)
    elector.step()
    store.put({**store.spec(), "holderIdentity": "usurper"})
    clock.step(2)
    elector.step()
    assert not elector.is_leader()
    assert cb.log == ["started", "stopped"]
    assert store.spec()["holderIdentity"] == "usurper"


def test_conflict_on_takeover_is_a_lost_race(store: LeaseStore, clock: FakeClock) -> None:
    store.put(other_holder())
    elector, cb = make(store, "b", clock)
    elector.step()
    clock.step(16)
    # Between our read and our write a third elector takes the lease.
    store.before_replace = lambda: store.put({**other_holder(), "holderIdentity": "c"})
    elector.step()
    assert not elector.is_leader()
    assert cb.log == []
    assert store.spec()["holderIdentity"] == "c"
    # The change restarted the local timer: not taken right away either.
    clock.step(2)
    elector.step()
    assert not elector.is_leader()


def test_create_race_is_a_lost_race(store: LeaseStore, clock: FakeClock) -> None:
    class RacingLink(Link):
        def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
            store.put({**other_holder(), "holderIdentity": "c"})
            return super().create(resource, body, namespace)

    elector, cb = make(RacingLink(store), "b", clock)
    elector.step()
    assert not elector.is_leader()
    assert cb.log == []


def test_stop_releases_the_lease(store: LeaseStore, clock: FakeClock) -> None:
    elector, cb = make(store, "a", clock)
    elector.step()
    clock.step(2)
    elector.step()
    transitions = store.spec()["leaseTransitions"]

    elector.stop()
    assert cb.log == ["started", "stopped"]
    assert not elector.is_leader()
    spec = store.spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == transitions

    peer, peer_cb = make(store, "b", clock)
    peer.step()
    assert peer.is_leader()  # no need to wait for expiry
    assert store.spec()["leaseTransitions"] == transitions + 1
    assert peer_cb.log == ["started"]


def test_stop_without_release(store: LeaseStore, clock: FakeClock) -> None:
    elector, cb = make(store, "a", clock, release_on_cancel=False)
    elector.step()
    elector.stop()
    assert cb.log == ["started", "stopped"]
    assert store.spec()["holderIdentity"] == "a"


def test_run_in_a_thread_then_stop(store: LeaseStore, clock: FakeClock) -> None:
    elector, cb = make(store, "a", clock)
    thread = threading.Thread(target=elector.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not elector.is_leader() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert elector.is_leader()

    elector.stop(timeout=5)
    thread.join(5)
    assert not thread.is_alive()
    assert cb.log == ["started", "stopped"]
    assert store.spec()["holderIdentity"] == ""


def test_hung_renewal_does_not_outlive_the_renew_deadline(store: LeaseStore) -> None:
    release = threading.Event()

    class HangingLink(Link):
        def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj:
            if self.down:
                release.wait(10)
            return super().replace(resource, body, subresource)

        def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
            if self.down:
                release.wait(10)
            return super().get(resource, name, namespace)

    link = HangingLink(store)
    cb = Callbacks()
    elector, _ = make(
        link, "a", RealClock(), cb, lease_duration=0.6, renew_deadline=0.3, retry_period=0.1
    )

    def started() -> None:
        cb.log.append("started")
        link.down = True

    elector._on_started = started
    try:
        began = time.monotonic()
        elector.run()
        assert time.monotonic() - began < 2.0
        assert cb.log == ["started", "stopped"]
    finally:
        release.set()


def test_two_electors_are_never_both_leaders(store: LeaseStore, clock: FakeClock) -> None:
    """A discrete-event simulation on one fake clock, with partitions and a stop."""
    links = {"a": Link(store), "b": Link(store)}
    electors = {i: make(links[i], i, clock)[0] for i in links}
    wake = {"a": clock.monotonic(), "b": clock.monotonic() + 0.5}
    leaders_seen: list[str] = []
    stopped: set[str] = set()

    def partition(ident: str, down: bool) -> None:
        links[ident].down = down

    def stop_a() -> None:
        electors["a"].stop()
        stopped.add("a")

    # (time, action) scripted disturbances, relative to the start.
    start = clock.monotonic()
    script: list[tuple[float, Callable[[], None]]] = [
        (30.0, lambda: partition("a", True)),
        (80.0, lambda: partition("a", False)),
        (120.0, lambda: partition("b", True)),
        (170.0, lambda: partition("b", False)),
        (200.0, stop_a),
    ]
    while clock.monotonic() - start < 260:
        while script and clock.monotonic() - start >= script[0][0]:
            script.pop(0)[1]()
        ident = min((i for i in wake if i not in stopped), key=lambda i: wake[i])
        nxt = min([wake[ident]] + [start + t for t, _ in script])
        if nxt > clock.monotonic():
            clock.step(nxt - clock.monotonic())
        if wake[ident] > clock.monotonic():
            continue
        delay = electors[ident].step()
        wake[ident] = clock.monotonic() + delay
        leading = [i for i, e in electors.items() if e.is_leader()]
        assert len(leading) <= 1, f"both lead at t={clock.monotonic() - start}"
        if leading and (not leaders_seen or leaders_seen[-1] != leading[0]):
            leaders_seen.append(leading[0])

    # a led first, b took over during a's partition, a came back during b's,
    # and b took over again once a stopped and released the lease.
    assert leaders_seen == ["a", "b", "a", "b"]
    assert store.spec()["holderIdentity"] == "b"
    assert store.spec()["leaseTransitions"] == 3
