"""One shared informer per (resource, namespace, label selector).

Controllers that need the same cache get the same informer, so every object is
listed, watched and stored once per process however many controllers read it.
"""

from __future__ import annotations

import threading

from t9k_operator.informers.informer import SharedInformer
from t9k_operator.informers.listwatch import ResourceListerWatcher
from t9k_operator.informers.transform import transform_for
from t9k_operator.kube import KubeClient, Resource


class InformerFactory:
    def __init__(self, client: KubeClient, namespace: str | None = None) -> None:
        self._client = client
        self._namespace = namespace
        self._lock = threading.Lock()
        self._informers: dict[tuple[Resource, str | None], SharedInformer] = {}
        self._started = False

    def informer(self, resource: Resource, label_selector: str | None = None) -> SharedInformer:
        key = (resource, label_selector)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                namespace = self._namespace if resource.namespaced else None
                lw = ResourceListerWatcher(self._client, resource, namespace, label_selector)
                informer = SharedInformer(
                    lw, name=resource.plural, transform=transform_for(resource)
                )
                self._informers[key] = informer
                if self._started:
                    informer.start()
            return informer

    def start(self) -> None:
        with self._lock:
            self._started = True
            for informer in self._informers.values():
                if not informer.running:
                    informer.start()

    def has_synced(self) -> bool:
        with self._lock:
            informers = list(self._informers.values())
        return all(i.has_synced() for i in informers)

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        with self._lock:
            informers = list(self._informers.values())
        return all(i.wait_for_sync(timeout) for i in informers)

    def stop(self) -> None:
        with self._lock:
            informers = list(self._informers.values())
        for informer in informers:
            informer.stop()
