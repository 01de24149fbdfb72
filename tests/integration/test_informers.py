"""Informers against the real API server: label filtering, events, 410 recovery."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from t9k_operator.informers import ResourceListerWatcher, SharedInformer, WatchEvents
from t9k_operator.kube import Gone, KubeClient
from t9k_operator.resources import CONFIGMAPS, PODS
from tests.integration.cluster import Cluster, wait_for

LABEL = "app.kubernetes.io/managed-by"
SELECTOR = f"{LABEL}=t9k-operator"


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str]] = []

    def handlers(self) -> dict[str, Any]:
        def add(obj: dict[str, Any]) -> None:
            self._put("add", obj)

        def update(old: dict[str, Any], new: dict[str, Any]) -> None:
            self._put("update", new)

        def delete(obj: dict[str, Any]) -> None:
            self._put("delete", obj)

        return {"on_add": add, "on_update": update, "on_delete": delete}

    def _put(self, what: str, obj: dict[str, Any]) -> None:
        with self.lock:
            self.events.append((what, obj["metadata"]["name"]))

    def seen(self, what: str, name: str) -> bool:
        with self.lock:
            return (what, name) in self.events

    def names(self) -> set[str]:
        with self.lock:
            return {name for _, name in self.events}


def pod(name: str, labelled: bool) -> dict[str, Any]:
    labels = {LABEL: "t9k-operator"} if labelled else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"kwok.t9k.dev/manual": "true"},
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def test_informer_sees_labelled_pods_only(admin: KubeClient, namespace: str) -> None:
    informer = SharedInformer(ResourceListerWatcher(admin, PODS, namespace, SELECTOR), name="pods")
    rec = Recorder()
    informer.add_event_handler(**rec.handlers())
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        admin.create(PODS, pod("mine", labelled=True), namespace)
        admin.create(PODS, pod("other", labelled=False), namespace)
        wait_for(lambda: rec.seen("add", "mine"), 10, "add of the labelled pod")
        admin.patch(PODS, "mine", {"metadata": {"annotations": {"touched": "yes"}}}, namespace)
        wait_for(lambda: rec.seen("update", "mine"), 10, "update of the labelled pod")

        def patched() -> bool:
            cached = informer.get(namespace, "mine") or {}
            return cached.get("metadata", {}).get("annotations", {}).get("touched") == "yes"

        wait_for(patched, 10, "the patched pod in the cache")
        cached = informer.get(namespace, "mine")
        assert cached is not None
        assert "managedFields" not in cached["metadata"]
        admin.delete(PODS, "mine", namespace, grace_period_seconds=0)
        wait_for(lambda: rec.seen("delete", "mine"), 10, "delete of the labelled pod")
        assert informer.get(namespace, "mine") is None
        # The unlabelled pod exists the whole time but never reaches the cache.
        admin.patch(PODS, "other", {"metadata": {"annotations": {"touched": "yes"}}}, namespace)
        assert "other" not in rec.names()
        assert informer.get(namespace, "other") is None
    finally:
        informer.stop()


class FaultyListerWatcher:
    """Fault injection at the kube/ boundary: break the live watch on demand and
    hold the next one back until released. Lists and watches themselves are real."""

    def __init__(self, inner: ResourceListerWatcher) -> None:
        self.inner = inner
        self.released = threading.Event()
        self.released.set()
        self.current: WatchEvents | None = None
        self.gone_seen = threading.Event()
        self.lists = 0

    def list(self) -> tuple[list[dict[str, Any]], str]:
        self.lists += 1
        return self.inner.list()

    def watch(self, resource_version: str, timeout_seconds: int) -> WatchEvents:
        self.released.wait()
        try:
            stream = self.inner.watch(resource_version, timeout_seconds)
        except Gone:
            self.gone_seen.set()
            raise
        self.current = stream
        return _Observed(stream, self.gone_seen)

    def break_and_hold(self) -> None:
        self.released.clear()
        if self.current is not None:
            self.current.close()


class _Observed:
    def __init__(self, stream: WatchEvents, gone: threading.Event) -> None:
        self.stream, self.gone = stream, gone

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            yield from self.stream
        except Gone:
            self.gone.set()
            raise

    def close(self) -> None:
        self.stream.close()


def test_watch_broken_by_410_relists_and_reports_the_missed_delete(
    admin: KubeClient, namespace: str, cluster: Cluster
) -> None:
    def cm(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {LABEL: "t9k-operator"}},
        }

    lw = FaultyListerWatcher(ResourceListerWatcher(admin, CONFIGMAPS, namespace, SELECTOR))
    informer = SharedInformer(lw, name="configmaps")
    rec = Recorder()
    informer.add_event_handler(**rec.handlers())
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        admin.create(CONFIGMAPS, cm("doomed"), namespace)
        admin.create(CONFIGMAPS, cm("kept"), namespace)
        wait_for(lambda: rec.seen("add", "kept") and rec.seen("add", "doomed"), 10, "adds")
        lists_before = lw.lists

        lw.break_and_hold()
        admin.delete(CONFIGMAPS, "doomed", namespace)
        admin.create(CONFIGMAPS, cm("born-while-away"), namespace)
        cluster.etcd_compact()
        lw.released.set()

        wait_for(lambda: rec.seen("delete", "doomed"), 20, "the synthesized delete")
        wait_for(lambda: rec.seen("add", "born-while-away"), 20, "the add seen on relist")
        assert lw.gone_seen.is_set(), "the watch resumed without a 410"
        assert lw.lists > lists_before
        assert informer.get(namespace, "doomed") is None
        assert informer.get(namespace, "kept") is not None
        # The informer keeps working after the relist.
        admin.create(CONFIGMAPS, cm("after"), namespace)
        wait_for(lambda: rec.seen("add", "after"), 10, "an add after recovery")
    finally:
        lw.released.set()
        informer.stop()
