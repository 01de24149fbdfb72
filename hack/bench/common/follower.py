"""Following a resource of the benchmarks' namespace as an informer does."""

from __future__ import annotations

import threading
import time
from typing import Any

from t9k_operator.kube import KubeClient
from t9k_operator.resources import Resource

from .jobs import NAMESPACE
from .log import log


class Follower:
    """Follows a resource in the bench's namespace as an informer does: lists,
    hands every object to ``handle`` (as an ``ADDED``), watches from the
    list's resourceVersion, and lists and watches again whenever the watch
    ends or breaks (the API server closes a watch that falls behind), so no
    object is missed. ``handle`` must be idempotent. ``restarts`` counts the
    watches that ended before ``stop``."""

    def __init__(self, client: KubeClient, resource: Resource, handle: Any) -> None:
        self.client, self.resource, self.handle = client, resource, handle
        self.restarts = 0
        self.ready = threading.Event()
        self._stopped = False
        self._stream: Any = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stopped:
            try:
                listed = self._list()
                for obj in listed["items"]:
                    self.handle("ADDED", obj)
                rv = listed["metadata"]["resourceVersion"]
                self._stream = self.client.watch(
                    self.resource, NAMESPACE, resource_version=rv, timeout_seconds=3600
                )
                self.ready.set()
                for event in self._stream:
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.handle(event["type"], event["object"])
            except Exception as exc:
                if self._stopped:
                    return
                log(f"{self.resource.plural} watch: {exc}; listing again")
            if not self._stopped:
                self.restarts += 1
                time.sleep(0.2)

    def _list(self) -> Any:
        """A list, retried while the API server's storage for a new CRD initializes."""
        deadline = time.monotonic() + 60
        while True:
            try:
                return self.client.request("GET", self.resource.path(NAMESPACE))
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        self._stopped = True
        if self._stream is not None:
            self._stream.close()
