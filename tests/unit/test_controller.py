"""Controller outcomes: how a reconcile's result or error requeues the key."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from t9k_operator.kube.errors import Conflict
from t9k_operator.objects import object_key
from t9k_operator.runtime.controller import Controller, Result, controller_owner_key
from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue
from tests.fakes import FakeClock


def make(reconcile: Callable[[str], Result]) -> tuple[Controller, RateLimitingQueue[str]]:
    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue("", clock=clock, metrics=False)
    return Controller("test", reconcile, clock=clock, queue=queue), queue


def boom(key: str) -> Result:
    raise RuntimeError("boom")


def conflict(key: str) -> Result:
    raise Conflict("stale")


@pytest.mark.parametrize(
    ("reconcile", "requeues_after"),
    [
        (lambda k: Result(), 0),
        (lambda k: Result(requeue=True), 3),
        (lambda k: Result(requeue_after=30), 0),
        (boom, 3),
        (conflict, 3),
    ],
    ids=["done", "requeue", "requeue-after", "error", "conflict"],
)
def test_outcomes(reconcile: Callable[[str], Result], requeues_after: int) -> None:
    """Success forgets the key's failure history; requeue and errors add to it."""
    controller, queue = make(reconcile)
    queue.add_rate_limited("ns/a")
    queue.add_rate_limited("ns/a")
    assert queue.num_requeues("ns/a") == 2
    controller.process("ns/a")
    assert queue.num_requeues("ns/a") == requeues_after
    queue.shut_down()


def test_requeue_after_becomes_ready_after_the_delay() -> None:
    controller, queue = make(lambda k: Result(requeue_after=30))
    clock = queue._clock  # type: ignore[attr-defined]
    controller.process("ns/a")
    assert queue.move_ready_items() == 0
    clock.step(30)
    assert queue.move_ready_items() == 1
    assert queue.get(timeout=1) == ("ns/a", False)
    queue.shut_down()


def test_keys() -> None:
    pod = {
        "metadata": {
            "name": "j-worker-0",
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "controller": False},
                {
                    "apiVersion": "batch.tensorstack.dev/v1beta1",
                    "kind": "DeepSpeedJob",
                    "name": "j",
                    "controller": True,
                },
            ],
        }
    }
    assert object_key(pod) == "ns/j-worker-0"
    assert object_key({"metadata": {"name": "node"}}) == "node"
    assert controller_owner_key(pod, api_group="batch.tensorstack.dev", kind="DeepSpeedJob") == (
        "ns/j"
    )
    assert controller_owner_key(pod, api_group="batch.tensorstack.dev", kind="MSJob") is None
    assert controller_owner_key(pod, api_group="other", kind="DeepSpeedJob") is None
