"""Unit tests for t9k_operator.informers.reflector (with fake ListerWatchers).

The fakes here are shared with test_informer.py.
"""

from __future__ import annotations

import json
import queue
import random
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import pytest
from prometheus_client import REGISTRY

from t9k_operator.informers.backoff import Backoff
from t9k_operator.informers.informer import SharedInformer
from t9k_operator.informers.listwatch import ResourceListerWatcher
from t9k_operator.informers.reflector import Reflector
from t9k_operator.informers.transform import strip_managed_fields
from t9k_operator.kube.errors import Gone, ServerError, TransportError
from t9k_operator.objects import Obj
from t9k_operator.resources import PODS
from tests.fakes import FakeClock

if TYPE_CHECKING:
    from t9k_operator.kube.client import KubeClient


# -- fakes -------------------------------------------------------------------------


def pod(
    name: str,
    rv: str = "1",
    namespace: str = "default",
    *,
    owner: str | None = None,
    managed_fields: bool = False,
    **labels: str,
) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "resourceVersion": rv, "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = dict(labels)
    if owner:
        meta["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": owner, "controller": True}]
    if managed_fields:
        meta["managedFields"] = [{"manager": "kubectl", "operation": "Update"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def event(kind: str, obj: Obj) -> Obj:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> Obj:
    return {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": rv}}}


class FakeStream:
    """A scripted watch: yields events, raises exceptions found in the script.

    With ``block=True`` it then blocks until closed, like an idle real watch.
    """

    def __init__(self, steps: list[Obj | BaseException], *, block: bool = False) -> None:
        self.steps = steps
        self.block = block
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[Obj]:
        for step in self.steps:
            if self.closed.is_set():
                return
            if isinstance(step, BaseException):
                raise step
            yield step
        if self.block:
            assert self.closed.wait(10), "blocking fake watch was never closed"

    def close(self) -> None:
        self.closed.set()


class QueueStream:
    """A watch fed one event at a time by the test (``put``); ``close()`` ends it."""

    def __init__(self) -> None:
        self.queue: queue.Queue[Obj | BaseException | None] = queue.Queue()
        self.closed = threading.Event()

    def put(self, item: Obj | BaseException) -> None:
        self.queue.put(item)

    def __iter__(self) -> Iterator[Obj]:
        while True:
            item = self.queue.get(timeout=10)
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self.closed.set()
        self.queue.put(None)


ListStep = tuple[list[Obj], str] | BaseException | Callable[[], tuple[list[Obj], str]]
WatchStep = list[Obj | BaseException] | BaseException | FakeStream | QueueStream


class FakeListerWatcher:
    """Plays back scripted list answers and watches, recording the calls.

    When a script runs out, ``on_exhausted`` is called (tests pass the
    reflector's or informer's ``stop``) and a harmless empty answer returned.
    """

    def __init__(
        self,
        lists: list[ListStep],
        watches: list[WatchStep],
        on_exhausted: Callable[[], None] | None = None,
    ) -> None:
        self.lists: deque[ListStep] = deque(lists)
        self.watches: deque[WatchStep] = deque(watches)
        self.on_exhausted = on_exhausted
        self.list_calls = 0
        self.watch_calls: list[tuple[str, int]] = []
        self.streams: list[FakeStream | QueueStream] = []
        self.watch_opened = threading.Event()

    def _exhausted(self) -> None:
        assert self.on_exhausted is not None, "script ran out and nobody stops the loop"
        self.on_exhausted()

    def list(self) -> tuple[list[Obj], str]:
        self.list_calls += 1
        if not self.lists:
            self._exhausted()
            return [], ""
        step = self.lists.popleft()
        if isinstance(step, BaseException):
            raise step
        if callable(step):
            return step()
        items, rv = step
        return list(items), rv

    def watch(self, resource_version: str, timeout_seconds: int) -> FakeStream | QueueStream:
        self.watch_calls.append((resource_version, timeout_seconds))
        stream: FakeStream | QueueStream
        if not self.watches:
            self._exhausted()
            stream = FakeStream([])
        else:
            step = self.watches.popleft()
            if isinstance(step, BaseException):
                raise step
            stream = FakeStream(step) if isinstance(step, list) else step
        self.streams.append(stream)
        self.watch_opened.set()
        return stream

    @property
    def watched_rvs(self) -> Sequence[str]:
        return [rv for rv, _ in self.watch_calls]


class RecordingHandler:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_replace(self, items: list[Obj], resource_version: str) -> None:
        self.events.append(("replace", ([i["metadata"]["name"] for i in items], resource_version)))
        self.items = items

    def on_add(self, obj: Obj) -> None:
        self.events.append(("add", obj))

    def on_update(self, obj: Obj) -> None:
        self.events.append(("update", obj))

    def on_delete(self, obj: Obj) -> None:
        self.events.append(("delete", obj))

    def names(self) -> list[tuple[str, Any]]:
        return [(k, v if k == "replace" else v["metadata"]["name"]) for k, v in self.events]


class RecordingClock(FakeClock):
    def __init__(self) -> None:
        super().__init__()
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        super().sleep(seconds)


def make_reflector(
    lists: list[ListStep],
    watches: list[WatchStep],
    **kwargs: Any,
) -> tuple[Reflector, FakeListerWatcher, RecordingHandler, RecordingClock]:
    lw = FakeListerWatcher(lists, watches)
    handler = RecordingHandler()
    clock = RecordingClock()
    kwargs.setdefault("rng", random.Random(7))
    reflector = Reflector(lw, handler, clock=clock, **kwargs)
    lw.on_exhausted = reflector.stop
    return reflector, lw, handler, clock


# -- list and watch -----------------------------------------------------------------


def test_list_then_watch_events_go_to_the_handler_in_order() -> None:
    reflector, lw, handler, clock = make_reflector(
        lists=[([pod("a"), pod("b")], "10")],
        watches=[
            [
                event("ADDED", pod("c", "11")),
                event("MODIFIED", pod("a", "12")),
                event("DELETED", pod("b", "13")),
            ]
        ],
    )
    assert not reflector.has_synced()

    reflector.run()

    assert handler.names() == [
        ("replace", (["a", "b"], "10")),
        ("add", "c"),
        ("update", "a"),
        ("delete", "b"),
    ]
    assert reflector.has_synced()
    assert reflector.last_sync_resource_version == "13"
    assert lw.watched_rvs == ["10", "13"]
    assert lw.list_calls == 1
    assert clock.sleeps == []


def test_bookmark_advances_resource_version_without_touching_the_handler() -> None:
    reflector, lw, handler, _ = make_reflector(
        lists=[([pod("a")], "10")],
        watches=[[bookmark("50")]],
    )
    reflector.run()

    assert handler.names() == [("replace", (["a"], "10"))]
    assert reflector.last_sync_resource_version == "50"
    assert lw.watched_rvs == ["10", "50"]


@pytest.mark.parametrize(
    ("second_watch", "backoff_sleeps"),
    [
        pytest.param([event("MODIFIED", pod("x", "12"))], 0, id="normal-end"),
        pytest.param(
            [event("MODIFIED", pod("x", "12")), TransportError("reset by peer")],
            1,
            id="transport-error-mid-stream",
        ),
        pytest.param(TransportError("connection refused"), 1, id="transport-error-on-open"),
    ],
)
def test_watch_end_rewatches_from_last_rv_without_relisting(
    second_watch: WatchStep, backoff_sleeps: int
) -> None:
    reflector, lw, handler, clock = make_reflector(
        lists=[([], "10")],
        watches=[[event("ADDED", pod("x", "11"))], second_watch],
    )
    reflector.run()

    assert lw.list_calls == 1
    expected_last = "11" if isinstance(second_watch, BaseException) else "12"
    assert lw.watched_rvs == ["10", "11", expected_last]
    assert len(clock.sleeps) == backoff_sleeps
    assert [k for k, _ in handler.events].count("replace") == 1


def test_watch_that_ends_at_once_and_empty_backs_off_but_does_not_relist() -> None:
    reflector, lw, _, clock = make_reflector(
        lists=[([], "10")],
        watches=[[], [], [bookmark("11")]],
    )
    reflector.run()

    assert lw.list_calls == 1
    assert lw.watched_rvs == ["10", "10", "10", "11"]
    assert len(clock.sleeps) == 2
    assert clock.sleeps[1] > clock.sleeps[0]


@pytest.mark.parametrize(
    "failing_watch",
    [
        pytest.param(Gone("too old"), id="gone-on-open"),
        pytest.param([event("ADDED", pod("x", "11")), Gone("too old")], id="gone-mid-stream"),
        pytest.param(
            [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}],
            id="gone-as-error-event",
        ),
        pytest.param(ServerError("etcd unhappy"), id="other-api-error"),
        pytest.param([event("ADDED", {"metadata": {}})], id="handler-raises"),
    ],
)
def test_gone_or_other_errors_relist(failing_watch: WatchStep) -> None:
    reflector, lw, handler, clock = make_reflector(
        lists=[([pod("a")], "10"), ([pod("b")], "20")],
        watches=[failing_watch, [bookmark("21")]],
    )
    real_on_add = handler.on_add

    def on_add(obj: Obj) -> None:
        if not obj["metadata"]:
            raise KeyError("metadata.name")  # a handler failure is "any other error" too
        real_on_add(obj)

    handler.on_add = on_add  # type: ignore[method-assign]

    reflector.run()

    assert lw.list_calls == 2
    assert lw.watched_rvs == ["10", "20", "21"]
    replaces = [v for k, v in handler.events if k == "replace"]
    assert replaces == [(["a"], "10"), (["b"], "20")]
    assert len(clock.sleeps) == 1
    assert reflector.last_sync_resource_version == "21"


def test_gone_relist_makes_the_informer_synthesize_delete_and_add() -> None:
    lw = FakeListerWatcher(
        lists=[([pod("a", "5"), pod("b", "6")], "10"), ([pod("a", "5"), pod("c", "15")], "20")],
        watches=[[event("MODIFIED", pod("b", "11", phase="Running")), Gone("too old")]],
    )
    informer = SharedInformer(lw, clock=RecordingClock(), rng=random.Random(1))
    lw.on_exhausted = informer.stop
    seen: list[tuple[str, str, str]] = []
    informer.add_event_handler(
        on_add=lambda o: seen.append(
            ("add", o["metadata"]["name"], o["metadata"]["resourceVersion"])
        ),
        on_update=lambda old, new: seen.append(
            ("update", new["metadata"]["name"], new["metadata"]["resourceVersion"])
        ),
        on_delete=lambda o: seen.append(
            ("delete", o["metadata"]["name"], o["metadata"]["resourceVersion"])
        ),
    )

    informer.run()

    assert lw.list_calls == 2
    assert seen == [
        ("add", "a", "5"),
        ("add", "b", "6"),
        ("update", "b", "11"),
        # Relist: b vanished while no watch was open -> delete with its last known state.
        ("delete", "b", "11"),
        ("update", "a", "5"),  # unchanged resourceVersion still fires update
        ("add", "c", "15"),
    ]
    assert sorted(informer.store.keys()) == ["default/a", "default/c"]


# -- backoff -----------------------------------------------------------------------


def test_backoff_grows_on_consecutive_failures_and_resets_after_success() -> None:
    reflector, lw, _, clock = make_reflector(
        lists=[
            ServerError("down"),
            TransportError("refused"),
            ServerError("down"),
            ([], "1"),
            ([], "2"),
        ],
        watches=[ServerError("watch refused")],
    )
    reflector.run()

    assert lw.list_calls == 5
    assert len(clock.sleeps) == 4
    for delay, base in zip(clock.sleeps, [0.8, 1.6, 3.2, 0.8], strict=True):
        assert base <= delay <= base * 1.2
    assert reflector.backoff.failures == 0  # reset by the last successful list


@pytest.mark.parametrize(
    ("backoff", "expected"),
    [
        (Backoff(jitter=0), [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]),
        (Backoff(initial=1, cap=4, factor=3, jitter=0), [1, 3, 4, 4]),
    ],
)
def test_backoff_sequence_is_capped(backoff: Backoff, expected: list[float]) -> None:
    assert [backoff.next() for _ in expected] == pytest.approx(expected)
    backoff.reset()
    assert backoff.next() == pytest.approx(expected[0])


def test_backoff_jitter_stays_within_bounds() -> None:
    backoff = Backoff(rng=random.Random(3))
    delays = [backoff.next() for _ in range(200)]
    assert all(0.8 <= d <= 30 * 1.2 for d in delays)
    assert len({round(d, 6) for d in delays[-50:]}) > 1  # jittered, not a fixed 30


@pytest.mark.parametrize(
    "kwargs", [{"initial": 0}, {"initial": 2, "cap": 1}, {"factor": 0.5}, {"jitter": -1}]
)
def test_backoff_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)


# -- watch timeout -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "expected_range"),
    [({}, (300, 600)), ({"min_watch_timeout": 5, "max_watch_timeout": 7}, (5, 7))],
)
def test_server_timeout_is_randomized_within_bounds(
    bounds: dict[str, int], expected_range: tuple[int, int]
) -> None:
    reflector, lw, _, _ = make_reflector(
        lists=[([], "1")],
        watches=[[bookmark(str(i))] for i in range(2, 80)],
        rng=random.Random(42),
        **bounds,
    )
    reflector.run()

    timeouts = [t for _, t in lw.watch_calls]
    low, high = expected_range
    assert len(timeouts) == 79
    assert all(low <= t <= high for t in timeouts)
    assert len(set(timeouts)) > 1


@pytest.mark.parametrize(("low", "high"), [(0, 10), (600, 300)])
def test_bad_watch_timeouts_are_rejected(low: int, high: int) -> None:
    with pytest.raises(ValueError):
        make_reflector([], [], min_watch_timeout=low, max_watch_timeout=high)


# -- transform -----------------------------------------------------------------------


def test_managed_fields_are_stripped_from_listed_and_watched_objects() -> None:
    reflector, _, handler, _ = make_reflector(
        lists=[([pod("a", managed_fields=True)], "10")],
        watches=[
            [
                event("ADDED", pod("b", "11", managed_fields=True)),
                event("DELETED", pod("a", "12", managed_fields=True)),
            ]
        ],
    )
    reflector.run()

    objects = [*handler.items, *(v for k, v in handler.events if k != "replace")]
    assert len(objects) == 3
    for obj in objects:
        assert "managedFields" not in obj["metadata"]
        assert obj["metadata"]["name"] in {"a", "b"}


def test_transform_none_keeps_objects_and_custom_transform_applies() -> None:
    reflector, _, handler, _ = make_reflector(
        lists=[([pod("a", managed_fields=True)], "10")], watches=[], transform=None
    )
    reflector.run()
    assert "managedFields" in handler.items[0]["metadata"]

    def tag(obj: Obj) -> Obj:
        obj = strip_managed_fields(obj)
        obj["metadata"]["tagged"] = True
        return obj

    reflector, _, handler, _ = make_reflector(
        lists=[([pod("a", managed_fields=True)], "10")],
        watches=[[event("ADDED", pod("b", "11"))]],
        transform=tag,
    )
    reflector.run()
    assert handler.items[0]["metadata"].get("tagged") is True
    assert handler.events[1][1]["metadata"].get("tagged") is True


def test_unknown_or_empty_events_are_ignored() -> None:
    reflector, lw, handler, _ = make_reflector(
        lists=[([], "10")],
        watches=[[{"type": "WEIRD", "object": pod("x", "11")}, {"type": "ADDED"}, bookmark("12")]],
    )
    reflector.run()

    assert handler.names() == [("replace", ([], "10"))]
    assert lw.list_calls == 1
    assert reflector.last_sync_resource_version == "12"


# -- stop ----------------------------------------------------------------------------


def test_stop_closes_the_watch_and_ends_the_thread() -> None:
    stream = FakeStream([event("ADDED", pod("a", "2"))], block=True)
    reflector, lw, handler, _ = make_reflector(lists=[([], "1")], watches=[stream])
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    assert lw.watch_opened.wait(5)

    reflector.stop()
    thread.join(5)

    assert not thread.is_alive()
    assert stream.closed.is_set()
    assert reflector.stopped
    assert lw.watch_calls == [("1", lw.watch_calls[0][1])]
    assert handler.names()[0] == ("replace", ([], "1"))


def test_stop_interrupts_a_real_clock_backoff() -> None:
    first_failure = threading.Event()

    def failing_list() -> tuple[list[Obj], str]:
        first_failure.set()
        raise ServerError("down")

    lw = FakeListerWatcher(lists=[failing_list] * 3, watches=[])
    reflector = Reflector(lw, RecordingHandler(), backoff=Backoff(initial=120, cap=120))
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    assert first_failure.wait(5)

    reflector.stop()
    thread.join(5)

    assert not thread.is_alive()
    assert lw.list_calls == 1
    assert not reflector.has_synced()


def test_stop_before_run_returns_at_once() -> None:
    reflector, lw, _, _ = make_reflector(lists=[([], "1")], watches=[])
    reflector.stop()
    reflector.run()
    assert lw.list_calls == 0
    assert not reflector.has_synced()


# -- adapter over KubeClient -----------------------------------------------------------


class FakeKubeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.stream = FakeStream([])

    def list_pages(self, *args: Any, **kwargs: Any) -> Iterator[Obj]:
        """Two pages: a list of more objects than one page holds."""
        self.calls.append(("list_pages", args, kwargs))
        yield {"metadata": {"continue": "more"}, "items": [pod("a")]}
        yield {"metadata": {"resourceVersion": "7"}, "items": [pod("b")]}

    def watch(self, *args: Any, **kwargs: Any) -> FakeStream:
        self.calls.append(("watch", args, kwargs))
        return self.stream


def test_resource_lister_watcher_adapts_kube_client() -> None:
    client = FakeKubeClient()
    lw = ResourceListerWatcher(
        cast("KubeClient", client), PODS, namespace="ns1", label_selector="app=x"
    )

    def requests(verb: str) -> float:
        value = REGISTRY.get_sample_value(
            "t9k_informer_requests_total", {"resource": "pods", "verb": verb}
        )
        return value or 0.0

    before = requests("list"), requests("watch")
    assert lw.list() == ([pod("a"), pod("b")], "7")
    assert lw.watch("7", 321) is client.stream
    # Each page and each watch is a request of the informers', counted.
    assert (requests("list"), requests("watch")) == (before[0] + 2, before[1] + 1)
    assert client.calls == [
        ("list_pages", (PODS, "ns1"), {"label_selector": "app=x"}),
        (
            "watch",
            (PODS, "ns1"),
            {
                "resource_version": "7",
                "timeout_seconds": 321,
                "label_selector": "app=x",
                "allow_bookmarks": True,
            },
        ),
    ]
    assert "pods" in repr(lw)


def test_the_default_transform_shares_repeated_strings_between_cached_objects() -> None:
    """Each watch event is decoded on its own, so two pods arrive with their own
    copies of every field name and of values such as the image; the cache must
    hold one copy, or it costs a third to a half more (docs/benchmarks.md)."""

    def decoded(name: str, rv: str) -> Obj:
        # a fresh decode per event, as the watch stream does
        return cast(Obj, json.loads(json.dumps(event("ADDED", pod(name, rv, managed_fields=True)))))

    first, second = decoded("a", "11"), decoded("b", "12")
    reflector, _, handler, _ = make_reflector(lists=[([], "10")], watches=[[first, second]])
    reflector.run()
    a, b = (obj for kind, obj in handler.events if kind != "replace")
    assert a["metadata"]["name"] == "a" and b["metadata"]["name"] == "b"
    assert "managedFields" not in a["metadata"]
    key_a = next(k for k in a if k == "metadata")
    key_b = next(k for k in b if k == "metadata")
    assert key_a is key_b
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    # nothing else changes: the cached object equals the decoded one
    expected = json.loads(json.dumps(event("ADDED", pod("a", "11"))))["object"]
    assert a == expected
