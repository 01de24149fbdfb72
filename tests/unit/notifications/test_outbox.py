"""The deliverer on its own: endpoints' queues apart, Retry-After waited
out, backoff until it gives up, a bounded queue. The HTTP sends are stand-ins
given to it (the integration tests send over TCP to a real receiver); the
clock is fake, so its waits are recorded, not slept."""

from __future__ import annotations

import base64
import threading
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

from t9k_operator.integrations.notifications.formats import HttpRequest
from t9k_operator.integrations.notifications.integration import Options
from t9k_operator.integrations.notifications.outbox import WORKERS, Outbox
from t9k_operator.integrations.notifications.record import Outcome
from t9k_operator.integrations.notifications.send import Answer
from t9k_operator.reconcilers.serving import Host, Route
from tests.fakes import FakeClock

NOW = datetime(2026, 1, 1, 0, 0, 0, tzinfo=UTC)


class Store:
    """An informer's cache, as the deliverer reads it."""

    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.objs = objs

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        for o in self.objs:
            if o["metadata"]["namespace"] == namespace and o["metadata"]["name"] == name:
                return o
        return None

    def list(self) -> list[dict[str, Any]]:
        return list(self.objs)


def hook(name: str, url: str) -> dict[str, Any]:
    data = {"type": "webhook", "url": url, "secret": "k"}
    return {
        "metadata": {"name": name, "namespace": "team", "labels": {}},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def job(name: str, to: list[str], n: int = 1) -> dict[str, Any]:
    messages = [
        {
            "id": f"{name}-m{i}",
            "event": "failed",
            "time": "2026-01-01T00:00:00Z",
            "reason": "ReplicaFailed",
            "message": "exit code 3",
            "queuedTime": "2026-01-01T00:00:00Z",
            "to": to,
            "deliveries": [],
            "state": "Pending",
        }
        for i in range(n)
    ]
    return {
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
        "status": {"phase": "Failed", "notifications": {"messages": messages}},
    }


def outbox(
    jobs: list[dict[str, Any]], post: Any, clock: FakeClock, **options: Any
) -> tuple[Outbox, list[str]]:
    queued: list[str] = []
    route = Route(
        cast(Any, SimpleNamespace(kind="PyTorchTrainingJob")),
        cast(Any, Store(jobs)),
        lambda key, _: queued.append(key),
    )
    ctx = SimpleNamespace(clock=clock, is_leader=lambda: True)
    host = Host(cast(Any, ctx), {"pytorchtrainingjobs": route}, cast(Any, None), "t9k-system")
    secrets = Store([hook("fast", "http://fast.example/x"), hook("slow", "http://slow.example/x")])
    box = Outbox(host, cast(Any, secrets), Options(**options), post=post, rand=lambda: 0.0)
    return box, queued


def wait_for(check: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.01)
    raise AssertionError("timed out")


def test_a_slow_endpoint_holds_only_its_own_queue() -> None:
    release = threading.Event()

    def post(req: HttpRequest) -> Answer:
        if "slow" in req.url:
            release.wait(10)
        return Answer(ok=True)

    box, queued = outbox([job("a", ["team/slow", "team/fast"])], post, FakeClock(NOW))
    try:
        box.sweep()
        fast = wait_for(lambda: box.outcomes("uid-a").get("a-m0", {}).get("team/fast"))
        assert fast == Outcome("team/fast", "Delivered", 1, "2026-01-01T00:00:00Z")
        assert "team/slow" not in box.outcomes("uid-a")["a-m0"]  # still in hand
        assert queued == ["team/a"]
        release.set()
        wait_for(lambda: "team/slow" in box.outcomes("uid-a")["a-m0"])
    finally:
        release.set()
        box.stop()


def test_a_429_s_retry_after_is_waited_out_before_the_next_try() -> None:
    answers = [Answer(ok=False, retry=True, asked=7.0, error="HTTP 429 Too Many Requests")]
    tries: list[datetime] = []
    clock = FakeClock(NOW)

    def post(req: HttpRequest) -> Answer:
        tries.append(clock.now())
        return answers.pop(0) if answers else Answer(ok=True)

    box, _ = outbox([job("a", ["team/fast"])], post, clock)
    try:
        box.sweep()
        got = wait_for(lambda: box.outcomes("uid-a").get("a-m0", {}).get("team/fast"))
        assert got == Outcome("team/fast", "Delivered", 2, "2026-01-01T00:00:07Z")
        assert [(t - NOW).total_seconds() for t in tries] == [0.0, 7.0]
    finally:
        box.stop()


def test_failures_back_off_and_give_up_after_the_bounded_time() -> None:
    tries: list[float] = []
    clock = FakeClock(NOW)

    def post(req: HttpRequest) -> Answer:
        tries.append((clock.now() - NOW).total_seconds())
        return Answer(ok=False, retry=True, error="HTTP 503 Service Unavailable")

    box, queued = outbox([job("a", ["team/fast"])], post, clock, give_up=10)
    try:
        box.sweep()
        got = wait_for(lambda: box.outcomes("uid-a").get("a-m0", {}).get("team/fast"))
        # Tries at 0, 1, 3, 7 s (waits of 1, 2, 4); the next would wait 8, past 10 s.
        assert tries == [0.0, 1.0, 3.0, 7.0]
        assert got == Outcome(
            "team/fast", "GaveUp", 4, "2026-01-01T00:00:07Z", "HTTP 503 Service Unavailable"
        )
        assert queued == ["team/a"]
    finally:
        box.stop()


def test_a_refusal_is_not_tried_again() -> None:
    def post(req: HttpRequest) -> Answer:
        return Answer(ok=False, retry=False, error="HTTP 404 Not Found")

    box, _ = outbox([job("a", ["team/fast"])], post, FakeClock(NOW))
    try:
        box.sweep()
        got = wait_for(lambda: box.outcomes("uid-a").get("a-m0", {}).get("team/fast"))
        assert (got.state, got.attempts, got.error) == (
            "GaveUp",
            1,
            "HTTP 404 Not Found, not retried",
        )
    finally:
        box.stop()


def test_the_queue_is_bounded_and_what_it_turned_away_is_queued_later() -> None:
    release = threading.Event()
    sent: list[str] = []
    entered: list[str] = []

    def post(req: HttpRequest) -> Answer:
        entered.append(req.headers["X-T9k-Delivery"])
        release.wait(10)
        sent.append(req.headers["X-T9k-Delivery"])
        return Answer(ok=True)

    jobs = [job("a", ["team/slow"], n=9)]
    box, _ = outbox(jobs, post, FakeClock(NOW), queue=2)
    try:
        # Passes until four are in hand, each on a thread of the endpoint.
        wait_for(lambda: box.sweep() or len(entered) == WORKERS)
        time.sleep(0.1)
        assert len(entered) == WORKERS
        box.sweep()  # two more are queued; the other three wait in the record
        assert len(box._lanes["team/slow"].items) == 2
        assert len(box._known) == WORKERS + 2 == 6
        release.set()
        wait_for(lambda: len(sent) == 6)
        # The record now holds the six outcomes (the job's next reconcile wrote them).
        for m in jobs[0]["status"]["notifications"]["messages"]:
            got = box.outcomes("uid-a").get(m["id"], {}).get("team/slow")
            if got is not None:
                m["deliveries"] = [{"endpoint": "team/slow", "state": got.state, "attempts": 1}]
                m["state"] = "Delivered"
        box.sweep()
        wait_for(lambda: box.sweep() or len(sent) == 9)  # a pass queues what the bound left
        assert sorted(sent) == [f"a-m{i}" for i in range(9)]
    finally:
        release.set()
        box.stop()
