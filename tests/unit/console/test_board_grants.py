"""Grants to an opened TensorBoard: unguessable, each its own, ended by
their session, by going unused, and by age; a bounded number kept."""

from __future__ import annotations

from typing import Any

from t9k_operator.console import board_grants
from t9k_operator.console.board_grants import IDLE_SECONDS, MAX_SECONDS, Grants

BASE = "/api/v1/namespaces/a/services/b-tensorboard:6006/proxy/"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def grants() -> tuple[Grants, Clock]:
    clock = Clock()
    return Grants(clock), clock


CLIENT: Any = object()


def test_a_grant_is_its_client_and_base_under_a_random_token() -> None:
    store, _ = grants()
    first, second = (store.mint(CLIENT, BASE, lambda: True) for _ in range(2))
    assert first != second and len(first) >= 43
    found = store.get(first)
    assert found is not None and found.kube is CLIENT and found.base == BASE
    assert store.get(first[:-1]) is None and store.get("") is None
    assert "kube" not in repr(found) and first not in repr(store)


def test_it_ends_when_unused_for_a_while_and_at_its_age_whatever_its_use() -> None:
    store, clock = grants()
    idle = store.mint(CLIENT, BASE, lambda: True)
    used = store.mint(CLIENT, BASE, lambda: True)
    for _ in range(int(MAX_SECONDS // (IDLE_SECONDS / 2)) - 1):
        clock.now += IDLE_SECONDS / 2
        assert store.get(used) is not None
    assert store.get(idle) is None
    clock.now += IDLE_SECONDS / 2 + 1
    assert store.get(used) is None


def test_it_ends_with_its_session() -> None:
    store, _ = grants()
    alive = [True]
    token = store.mint(CLIENT, BASE, lambda: alive[0])
    assert store.get(token) is not None
    alive[0] = False
    assert store.get(token) is None
    alive[0] = True
    assert store.get(token) is None  # gone for good


def test_the_oldest_go_past_the_most_kept(monkeypatch: Any) -> None:
    monkeypatch.setattr(board_grants, "MAX_GRANTS", 3)
    store, _ = grants()
    tokens = [store.mint(CLIENT, BASE, lambda: True) for _ in range(4)]
    assert store.get(tokens[0]) is None
    assert all(store.get(t) is not None for t in tokens[1:])


def test_ended_grants_are_swept_unasked_so_that_no_token_outlives_its_session() -> None:
    # A grant holds its person's client (their token): once the session ends
    # or the grant expires, the sweep (the in-cluster console's, every 30 s,
    # and each new grant's) drops it though nobody opens it again.
    store, clock = grants()
    alive = [True]
    store.mint(CLIENT, BASE, lambda: alive[0])
    idle = store.mint(CLIENT, BASE, lambda: True)
    store.sweep()
    assert len(store) == 2
    alive[0] = False
    store.sweep()
    assert len(store) == 1
    clock.now += IDLE_SECONDS + 1
    store.mint(CLIENT, BASE, lambda: True)
    assert len(store) == 1 and store.get(idle) is None
