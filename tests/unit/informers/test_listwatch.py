"""Unit tests for t9k_operator.informers.listwatch: the adapter over KubeClient."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from prometheus_client import REGISTRY

from t9k_operator.informers.listwatch import ResourceListerWatcher
from t9k_operator.objects import Obj
from t9k_operator.resources import PODS

from .fakes import FakeStream, pod

if TYPE_CHECKING:
    from t9k_operator.kube.client import KubeClient


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
