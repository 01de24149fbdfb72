"""Unit tests for t9k_operator.informers.reflector (with the fake ListerWatchers
of fakes.py)."""

from __future__ import annotations

import random
import threading

import pytest

from t9k_operator.informers.backoff import Backoff
from t9k_operator.informers.informer import SharedInformer
from t9k_operator.informers.reflector import Reflector
from t9k_operator.informers.transform import strip_managed_fields
from t9k_operator.kube.errors import Gone, ServerError, TransportError
from t9k_operator.objects import Obj

from .fakes import (
    FakeListerWatcher,
    FakeStream,
    RecordingClock,
    RecordingHandler,
    WatchStep,
    bookmark,
    event,
    make_reflector,
    pod,
)

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
