"""Unit tests for t9k_operator.informers.informer.SharedInformer (fake ListerWatchers)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from t9k_operator.informers import CONTROLLER_UID_INDEX, NAMESPACE_INDEX, SharedInformer
from t9k_operator.kube.errors import Gone, ServerError
from t9k_operator.objects import Obj

from .fakes import (
    FakeListerWatcher,
    FakeStream,
    ListStep,
    QueueStream,
    RecordingClock,
    WatchStep,
    bookmark,
    event,
    pod,
)


class Recorder:
    """Event handler callbacks that record ``(kind, name, rv)`` and can be waited on."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.olds: list[Obj] = []
        self._cond = threading.Condition()

    def _record(self, kind: str, obj: Obj) -> None:
        meta = obj["metadata"]
        with self._cond:
            self.seen.append((kind, meta["name"], meta["resourceVersion"]))
            self._cond.notify_all()

    def on_add(self, obj: Obj) -> None:
        self._record("add", obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self.olds.append(old)
        self._record("update", new)

    def on_delete(self, obj: Obj) -> None:
        self._record("delete", obj)

    def register(self, informer: SharedInformer) -> None:
        informer.add_event_handler(self.on_add, self.on_update, self.on_delete)

    def wait_for(self, count: int, timeout: float = 5.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.seen) >= count, timeout)


def make_informer(
    lists: list[ListStep], watches: list[WatchStep], **kwargs: Any
) -> tuple[SharedInformer, FakeListerWatcher]:
    lw = FakeListerWatcher(lists, watches)
    informer = SharedInformer(lw, clock=RecordingClock(), rng=random.Random(5), **kwargs)
    lw.on_exhausted = informer.stop
    return informer, lw


@pytest.fixture
def running() -> Iterator[list[SharedInformer]]:
    """Informers appended here are stopped after the test, pass or fail."""
    informers: list[SharedInformer] = []
    yield informers
    for informer in informers:
        informer.stop()


# -- event handlers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("watch", "expected", "final_keys"),
    [
        pytest.param(
            [
                event("ADDED", pod("b", "11")),
                event("MODIFIED", pod("a", "12")),
                event("DELETED", pod("a", "13")),
            ],
            [("add", "b", "11"), ("update", "a", "12"), ("delete", "a", "13")],
            ["default/b"],
            id="add-update-delete",
        ),
        pytest.param(
            [event("ADDED", pod("a", "12"))],
            [("update", "a", "12")],
            ["default/a"],
            id="added-for-cached-key-is-an-update",
        ),
        pytest.param(
            [event("MODIFIED", pod("z", "12"))],
            [("add", "z", "12")],
            ["default/a", "default/z"],
            id="modified-for-unknown-key-is-an-add",
        ),
        pytest.param(
            [event("DELETED", pod("ghost", "12"))],
            [("delete", "ghost", "12")],
            ["default/a"],
            id="delete-of-unknown-key-still-fires",
        ),
        pytest.param(
            [bookmark("30")],
            [],
            ["default/a"],
            id="bookmark-fires-nothing",
        ),
    ],
)
def test_watch_events_reach_store_and_handlers(
    watch: WatchStep, expected: list[tuple[str, str, str]], final_keys: list[str]
) -> None:
    informer, _ = make_informer([([pod("a", "5")], "10")], [watch])
    recorder = Recorder()
    recorder.register(informer)

    informer.run()

    assert recorder.seen == [("add", "a", "5"), *expected]
    assert sorted(informer.store.keys()) == final_keys


def test_update_handler_gets_old_and_new() -> None:
    informer, _ = make_informer(
        [([pod("a", "5", phase="Pending")], "10")],
        [[event("MODIFIED", pod("a", "6", phase="Running"))]],
    )
    recorder = Recorder()
    recorder.register(informer)
    informer.run()

    assert [o["metadata"]["labels"]["phase"] for o in recorder.olds] == ["Pending"]
    cached = informer.get("default", "a")
    assert cached is not None
    assert cached["metadata"]["labels"]["phase"] == "Running"


def test_relist_diffs_against_the_cache() -> None:
    informer, lw = make_informer(
        lists=[
            ([pod("keep", "1"), pod("gone", "2"), pod("changed", "3")], "10"),
            ([pod("keep", "1"), pod("changed", "4"), pod("new", "5")], "20"),
        ],
        watches=[
            [event("MODIFIED", pod("gone", "11", note="last-seen"))],
            Gone("resourceVersion too old"),
        ],
    )
    deleted: list[Obj] = []
    recorder = Recorder()
    recorder.register(informer)
    informer.add_event_handler(on_delete=deleted.append)

    informer.run()

    assert lw.list_calls == 2
    assert recorder.seen[4:] == [
        ("delete", "gone", "11"),
        ("update", "keep", "1"),  # resync: same resourceVersion, update still fires
        ("update", "changed", "4"),
        ("add", "new", "5"),
    ]
    # The synthesized delete hands over the last state the cache had.
    assert deleted == [pod("gone", "11", note="last-seen")]
    assert sorted(informer.store.keys()) == ["default/changed", "default/keep", "default/new"]
    assert informer.store.resource_version == "20"


def test_late_handler_gets_synthetic_adds_then_live_events(running: list[SharedInformer]) -> None:
    stream = QueueStream()
    informer, lw = make_informer([([pod("a", "1"), pod("b", "2")], "10")], [stream])
    early = Recorder()
    early.register(informer)
    running.append(informer)
    informer.start()
    assert informer.wait_for_sync(5)
    assert lw.watch_opened.wait(5)

    late = Recorder()
    late.register(informer)
    # Delivered synchronously, during add_event_handler.
    assert sorted(late.seen) == [("add", "a", "1"), ("add", "b", "2")]

    stream.put(event("MODIFIED", pod("a", "11")))
    assert late.wait_for(3)
    assert early.wait_for(3)
    assert late.seen[2] == ("update", "a", "11")
    assert early.seen == [("add", "a", "1"), ("add", "b", "2"), ("update", "a", "11")]


def test_handler_added_before_start_gets_no_duplicates() -> None:
    informer, _ = make_informer([([pod("a", "1")], "10")], [])
    recorder = Recorder()
    recorder.register(informer)
    informer.run()
    assert recorder.seen == [("add", "a", "1")]


def test_removed_handler_stops_receiving() -> None:
    informer, _ = make_informer([([pod("a", "1")], "10")], [[event("MODIFIED", pod("a", "2"))]])
    kept, removed = Recorder(), Recorder()
    kept.register(informer)
    registration = informer.add_event_handler(on_add=removed.on_add, on_update=removed.on_update)
    informer.remove_event_handler(registration)
    informer.run()

    assert kept.seen == [("add", "a", "1"), ("update", "a", "2")]
    assert removed.seen == []


def test_handler_exception_is_logged_and_does_not_kill_the_loop(
    running: list[SharedInformer],
) -> None:
    stream = QueueStream()
    informer, lw = make_informer([([pod("a", "1")], "10")], [stream])
    calls: list[str] = []

    def broken(*args: Obj) -> None:
        calls.append(args[-1]["metadata"]["name"])
        raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=broken, on_update=broken, on_delete=broken)
    healthy = Recorder()
    healthy.register(informer)

    with structlog.testing.capture_logs() as logs:
        running.append(informer)
        informer.start()
        assert informer.wait_for_sync(5)
        stream.put(event("ADDED", pod("b", "11")))
        stream.put(event("DELETED", pod("a", "12")))
        assert healthy.wait_for(3)

    assert healthy.seen == [("add", "a", "1"), ("add", "b", "11"), ("delete", "a", "12")]
    assert calls == ["a", "b", "a"]
    assert informer.running
    assert lw.list_calls == 1  # a handler failure is not a list/watch failure
    failures = [e for e in logs if e["event"] == "event handler failed"]
    assert [f["name"] for f in failures] == ["a", "b", "a"]
    assert all(f["log_level"] == "error" for f in failures)
    assert sorted(informer.store.keys()) == ["default/b"]


# -- sync and lifecycle ---------------------------------------------------------------------


def test_has_synced_and_wait_for_sync(running: list[SharedInformer]) -> None:
    gate = threading.Event()

    def slow_list() -> tuple[list[Obj], str]:
        assert gate.wait(5)
        return [pod("a", "1")], "10"

    informer, _ = make_informer([slow_list], [FakeStream([], block=True)])
    assert not informer.has_synced()
    running.append(informer)
    informer.start()

    assert not informer.wait_for_sync(0.05)
    assert not informer.has_synced()
    gate.set()
    assert informer.wait_for_sync(5)
    assert informer.has_synced()
    assert informer.get("default", "a") is not None


def test_wait_for_sync_gives_up_when_stopped_before_sync(running: list[SharedInformer]) -> None:
    informer, _ = make_informer([ServerError("down")] * 1000, [])
    running.append(informer)
    informer.start()
    informer.stop()

    assert informer.wait_for_sync(5) is False
    assert not informer.running


def test_stop_ends_the_thread() -> None:
    informer, lw = make_informer([([pod("a", "1")], "10")], [FakeStream([], block=True)])
    informer.start()
    assert informer.wait_for_sync(5)
    assert lw.watch_opened.wait(5)
    assert informer.running

    informer.stop()

    assert not informer.running
    assert informer._thread is not None and not informer._thread.is_alive()
    assert lw.streams[0].closed.is_set()


def test_start_twice_is_an_error(running: list[SharedInformer]) -> None:
    informer, _ = make_informer([([], "1")], [FakeStream([], block=True)])
    running.append(informer)
    informer.start()
    with pytest.raises(RuntimeError, match="already started"):
        informer.start()
    with pytest.raises(RuntimeError, match="already started"):
        informer.run()


# -- cached reads ----------------------------------------------------------------------------


def test_cached_reads_and_indexes() -> None:
    informer, _ = make_informer(
        [([pod("p1", "1", owner="job-1", managed_fields=True), pod("p2", "2", "ns2")], "10")],
        [[event("ADDED", pod("p3", "11", owner="job-1")), event("DELETED", pod("p1", "12"))]],
    )
    informer.run()

    assert informer.indexer is informer.store
    assert informer.get("default", "p3") is informer.get_by_key("default/p3")
    assert informer.get("default", "p1") is None
    assert [o["metadata"]["name"] for o in informer.by_index(CONTROLLER_UID_INDEX, "job-1")] == [
        "p3"
    ]
    assert [o["metadata"]["name"] for o in informer.by_index(NAMESPACE_INDEX, "ns2")] == ["p2"]
    assert sorted(o["metadata"]["name"] for o in informer.list()) == ["p2", "p3"]
    assert all("managedFields" not in o["metadata"] for o in informer.list())
    assert informer.last_sync_resource_version == "12"


def test_custom_indexers_and_transform_none() -> None:
    informer, _ = make_informer(
        [([pod("a", "1", managed_fields=True, app="x")], "10")],
        [],
        indexers={"app": lambda o: [o["metadata"].get("labels", {}).get("app", "")]},
        transform=None,
    )
    informer.run()

    [obj] = informer.by_index("app", "x")
    assert "managedFields" in obj["metadata"]
    assert informer.store.indexer_names == ["app"]
