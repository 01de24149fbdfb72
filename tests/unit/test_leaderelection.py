"""Unit tests for t9k_operator.runtime.leaderelection and .lease (fake clock, in-memory Leases)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from t9k_operator.foundation.clock import RealClock
from t9k_operator.objects import Obj
from t9k_operator.resources import Resource
from t9k_operator.runtime.lease import held_spec, holder_of, new_lease, released_spec
from tests.fakes import FakeClock
from tests.unit.fake_leases import NAME, NS, Callbacks, LeaseStore, Link, make, other_holder

MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


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
