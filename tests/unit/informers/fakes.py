"""Fakes for the informer tests: objects and watch events, scripted streams and
ListerWatchers, a handler and a clock that record what they are given, and
:func:`make_reflector`, which wires them to a :class:`Reflector`."""

from __future__ import annotations

import queue
import random
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from t9k_operator.informers.reflector import Reflector
from t9k_operator.objects import Obj
from tests.fakes import FakeClock


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
