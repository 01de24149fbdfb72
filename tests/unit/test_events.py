"""Unit tests for t9k_operator.runtime.events (no cluster: an in-memory Event store)."""

from __future__ import annotations

import copy
import gc
import re
import time
import tracemalloc
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pytest_mock import MockerFixture

from t9k_operator.kube.errors import AlreadyExists, ApiError, Forbidden, NotFound, ServerError
from t9k_operator.objects import Obj
from t9k_operator.resources import EVENTS, Resource
from t9k_operator.runtime.event_correlation import COMBINED_PREFIX
from t9k_operator.runtime.events import EventRecorder
from tests.fakes import FakeClock, FakeRecorder, RecordedEvent


class FakeEventClient:
    """Just the create/patch verbs the recorder uses, over a dict of Events."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], Obj] = {}
        self.calls: list[tuple[str, str, str]] = []  # (verb, namespace, name)
        self.patches: list[tuple[str, Obj, str]] = []  # (name, patch, patch_type)

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        assert resource == EVENTS
        ns = namespace or body["metadata"]["namespace"]
        name = body["metadata"]["name"]
        self.calls.append(("create", ns, name))
        if (ns, name) in self.events:
            raise AlreadyExists("exists")
        stored = copy.deepcopy(body)
        self.events[(ns, name)] = stored
        return copy.deepcopy(stored)

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
    ) -> Obj:
        assert resource == EVENTS
        ns = namespace or ""
        self.calls.append(("patch", ns, name))
        self.patches.append((name, copy.deepcopy(patch), patch_type))
        if (ns, name) not in self.events:
            raise NotFound("gone")
        self.events[(ns, name)].update(patch)
        return copy.deepcopy(self.events[(ns, name)])

    def only(self) -> Obj:
        assert len(self.events) == 1, self.events
        return next(iter(self.events.values()))

    def verbs(self) -> list[str]:
        return [c[0] for c in self.calls]


def pod(name: str = "job-worker-0", namespace: str = "ns1") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": "uid-123",
            "resourceVersion": "42",
        },
    }


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client() -> FakeEventClient:
    return FakeEventClient()


@pytest.fixture
def recorder(client: FakeEventClient, clock: FakeClock) -> EventRecorder:
    return EventRecorder(client, "test-operator", clock=clock, host="host-a")


def test_event_posted_with_core_v1_fields(recorder: EventRecorder, client: FakeEventClient) -> None:
    recorder.record(pod(), "Warning", "FailedCreate", "could not create pod")
    assert recorder.flush() == 1

    event = client.only()
    assert re.fullmatch(r"job-worker-0\.[0-9a-f]{16}", event["metadata"]["name"])
    assert event["metadata"]["namespace"] == "ns1"
    assert event["apiVersion"] == "v1" and event["kind"] == "Event"
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns1",
        "name": "job-worker-0",
        "uid": "uid-123",
        "resourceVersion": "42",
    }
    assert event["type"] == "Warning"
    assert event["reason"] == "FailedCreate"
    assert event["message"] == "could not create pod"
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"
    assert "eventTime" not in event
    assert event["source"] == {"component": "test-operator", "host": "host-a"}
    assert event["reportingComponent"] == "test-operator"
    assert event["reportingInstance"] == "host-a"


def test_cluster_scoped_object_event_goes_to_default(
    recorder: EventRecorder, client: FakeEventClient
) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u"}}
    recorder.record(node, "Normal", "Seen", "hello")
    recorder.flush()
    event = client.only()
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
    assert event["involvedObject"]["name"] == "n1"


def test_event_names_are_unique(recorder: EventRecorder, client: FakeEventClient) -> None:
    # Same object, same instant on the fake clock, different reasons.
    for i in range(5):
        recorder.record(pod(), "Normal", f"Reason{i}", "m")
    recorder.flush()
    names = [name for (_, name) in client.events]
    assert len(names) == 5 == len(set(names))


def test_identical_repeats_fold_into_one_event(
    recorder: EventRecorder, client: FakeEventClient, clock: FakeClock
) -> None:
    for _ in range(3):
        recorder.record(pod(), "Warning", "BackOff", "restarting")
        clock.step(30)
    recorder.flush()

    assert client.verbs() == ["create", "patch", "patch"]
    event = client.only()
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-01-01T00:01:00Z"
    assert [p[2] for p in client.patches] == ["merge", "merge"]
    assert client.patches[-1][1]["count"] == 3


def test_different_objects_are_not_folded(recorder: EventRecorder, client: FakeEventClient) -> None:
    recorder.record(pod("a"), "Normal", "Created", "created")
    recorder.record(pod("b"), "Normal", "Created", "created")
    recorder.flush()
    assert client.verbs() == ["create", "create"]


def test_patch_not_found_creates_a_new_event(
    recorder: EventRecorder, client: FakeEventClient, clock: FakeClock
) -> None:
    recorder.record(pod(), "Normal", "Started", "started")
    recorder.flush()
    first_name = client.only()["metadata"]["name"]
    client.events.clear()  # the API server expired the Event

    clock.step(5)
    recorder.record(pod(), "Normal", "Started", "started")
    recorder.flush()

    assert client.verbs() == ["create", "patch", "create"]
    event = client.only()
    assert event["metadata"]["name"] != first_name
    assert event["count"] == 1

    # And it is the one folded into afterwards.
    recorder.record(pod(), "Normal", "Started", "started")
    recorder.flush()
    assert client.only()["count"] == 2


def inject(
    mocker: MockerFixture,
    client: FakeEventClient,
    error: Exception,
    times: int = 1,
    verbs: tuple[str, ...] = ("create", "patch"),
) -> None:
    """Make the client's next ``times`` calls of ``verbs`` (-1: every call)
    raise ``error``, as the API server would answer them."""
    left = times
    for verb in verbs:
        real = getattr(client, verb)

        def effect(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            nonlocal left
            if left != 0:
                left -= 1
                raise error
            return _real(*args, **kwargs)

        mocker.patch.object(client, verb, side_effect=effect)


def test_failed_patch_keeps_the_event_for_later_repeats(
    recorder: EventRecorder, client: FakeEventClient, mocker: MockerFixture
) -> None:
    recorder.record(pod(), "Normal", "Started", "started")
    recorder.flush()
    inject(mocker, client, Forbidden("no patch for you"))
    recorder.record(pod(), "Normal", "Started", "started")
    recorder.flush()
    recorder.record(pod(), "Normal", "Started", "started")
    recorder.flush()
    assert client.verbs() == ["create", "patch"]  # the failed patch raised before being logged
    assert client.only()["count"] == 2
    assert recorder.dropped == 1


def test_similar_events_are_combined_after_ten(
    recorder: EventRecorder, client: FakeEventClient, clock: FakeClock
) -> None:
    for i in range(10):
        recorder.record(pod(), "Warning", "Failed", f"failure {i}")
        clock.step(1)
    recorder.flush()
    assert client.verbs() == ["create"] * 10
    assert not any(e["message"].startswith(COMBINED_PREFIX) for e in client.events.values())

    recorder.record(pod(), "Warning", "Failed", "failure 10")
    recorder.record(pod(), "Warning", "Failed", "failure 11")
    recorder.flush()
    assert client.verbs()[10:] == ["create", "patch"]
    combined = [e for e in client.events.values() if e["message"].startswith(COMBINED_PREFIX)]
    assert len(combined) == 1
    assert combined[0]["count"] == 2
    assert combined[0]["message"] == COMBINED_PREFIX + "failure 11"

    # Another reason for the same object is not affected.
    recorder.record(pod(), "Warning", "Other", "x")
    recorder.flush()
    assert client.events[("ns1", client.calls[-1][2])]["message"] == "x"

    # After ten quiet minutes the group starts afresh.
    clock.step(601)
    recorder.record(pod(), "Warning", "Failed", "failure 12")
    recorder.flush()
    assert client.calls[-1][0] == "create"
    assert client.events[("ns1", client.calls[-1][2])]["message"] == "failure 12"


def _dropped_total() -> float:
    return REGISTRY.get_sample_value("t9k_events_dropped_total") or 0.0


def test_full_queue_drops_without_blocking(client: FakeEventClient, clock: FakeClock) -> None:
    recorder = EventRecorder(client, clock=clock, queue_size=2, host="h")
    before = _dropped_total()

    started = time.monotonic()
    for i in range(5):
        recorder.record(pod(), "Normal", "R", f"m{i}")
    assert time.monotonic() - started < 1.0

    assert recorder.dropped == 3
    assert _dropped_total() - before == 3
    assert recorder.flush() == 2
    assert len(client.events) == 2


def test_record_never_raises(
    recorder: EventRecorder, client: FakeEventClient, mocker: MockerFixture
) -> None:
    inject(mocker, client, RuntimeError("client bug"), times=-1)
    recorder.record(pod(), "Warning", "Failed", "boom")
    recorder.flush()
    assert client.events == {}

    mocker.stopall()
    inject(mocker, client, ApiError("forbidden", status=403), times=-1)
    recorder.record(pod(), "Warning", "Failed", "boom")
    recorder.flush()
    assert client.events == {}
    assert recorder.dropped == 2

    # Malformed involved objects are ignored, not raised.
    recorder.record({"metadata": None}, "Normal", "R", "m")
    recorder.record(42, "Normal", "R", "m")  # type: ignore[arg-type]
    assert recorder.flush() == 0


def test_transient_errors_are_retried(
    recorder: EventRecorder, client: FakeEventClient, clock: FakeClock, mocker: MockerFixture
) -> None:
    inject(mocker, client, ServerError("etcd busy"))
    before = clock.monotonic()
    recorder.record(pod(), "Normal", "Created", "ok")
    recorder.flush()
    assert client.only()["count"] == 1
    assert clock.monotonic() - before == pytest.approx(1.0)  # one retry delay, on the fake clock


def test_long_messages_are_truncated(recorder: EventRecorder, client: FakeEventClient) -> None:
    recorder.record(pod(), "Warning", "Failed", "x" * 5000)
    recorder.flush()
    assert len(client.only()["message"]) == 1024


def test_background_thread_posts_and_stop_flushes(client: FakeEventClient) -> None:
    recorder = EventRecorder(client, clock=FakeClock(), host="h")
    recorder.start()
    for i in range(20):
        recorder.record(pod(f"p{i}"), "Normal", "Created", "created")
    recorder.stop(timeout=5.0)
    assert len(client.events) == 20
    # Records after stop are ignored rather than queued forever.
    recorder.record(pod(), "Normal", "Created", "late")
    assert recorder.flush() == 0


def test_fake_recorder_keeps_tuples() -> None:
    fake = FakeRecorder()
    fake.record(pod(), "Warning", "Failed", "boom")
    assert fake.events == [RecordedEvent("Warning", "Failed", "boom", "Pod", "ns1", "job-worker-0")]
    assert fake.events[0][:3] == ("Warning", "Failed", "boom")
    assert fake.reasons() == ["Failed"]


def test_what_it_keeps_per_object_is_a_few_hundred_bytes() -> None:
    """The correlation caches hold an entry per object evented (up to 4096):
    digests, not the object's identity and the message's text. Kept as text
    they took 1,421 bytes per job's Event; now 556 (docs/benchmarks.md)."""

    class Answering(FakeEventClient):
        def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
            return {"metadata": {"name": body["metadata"]["name"]}}

    jobs = [
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "PyTorchTrainingJob",
            "metadata": {
                "name": f"job-{i}",
                "namespace": "bench",
                "uid": f"{i:08d}-1111-2222-3333-444455556666",
                "resourceVersion": str(1000 + i),
            },
        }
        for i in range(2000)
    ]
    recorder = EventRecorder(Answering(), "t9k-operator", clock=FakeClock(), host="h")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for job in jobs:
            name = job["metadata"]["name"]
            pods = ", ".join(f"{name}-worker-{i}" for i in range(4))
            recorder.record(job, "Normal", "SuccessfulCreate", f"Created pods: {pods}")
            recorder.flush()
        gc.collect()
        kept = (tracemalloc.get_traced_memory()[0] - before) / len(jobs)
    finally:
        tracemalloc.stop()
    assert kept < 800, f"{kept:.0f} bytes kept per object evented"
