"""Leadership timing read from the Lease itself.

A hand-over's timing is measured between the times the electors wrote into
the Lease (``renewTime``, ``acquireTime``: micro-seconds, from the operator
processes' own clocks), not by the test's polling, which a loaded 2-core
machine delays by seconds. :class:`LeaseRecord` watches one Lease and keeps
every version of its spec the API server stored, in order; when the block
ends, it waits until its watch has brought the version a GET reads then (a
GET answers a write before the watch delivers it), so a hand-over the test
saw by GETs is in the record too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from t9k_operator.kube import ApiError, KubeClient, TransportError
from t9k_operator.resources import LEASES
from tests.integration.cluster import in_background

CATCH_UP = 10.0
"""Seconds the record waits, when its block ends, for its watch to bring the
Lease's version a GET reads then."""


def micro_time(stamp: str) -> datetime:
    """A Lease's MicroTime (``2026-01-02T03:04:05.123456Z``)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class LeaseRecord:
    def __init__(self) -> None:
        self.specs: list[dict[str, Any]] = []
        self._seen: set[str] = set()  # the resourceVersions of the Lease recorded
        self._cond = threading.Condition()

    def add(self, spec: dict[str, Any], resource_version: str) -> None:
        """Keep ``spec`` (unless it is the last one kept), the Lease's spec at
        ``resource_version``."""
        with self._cond:
            if not self.specs or self.specs[-1] != spec:
                self.specs.append(dict(spec))
            self._seen.add(resource_version)
            self._cond.notify_all()

    def wait_seen(self, resource_version: str, timeout: float) -> bool:
        """Wait, at most ``timeout`` seconds, until the version
        ``resource_version`` of the Lease is recorded; whether it is."""
        with self._cond:
            return self._cond.wait_for(lambda: resource_version in self._seen, timeout)

    def versions(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self.specs)

    def last_by(self, holder: str) -> dict[str, Any]:
        """The last version written while ``holder`` held the Lease."""
        held = [s for s in self.versions() if s.get("holderIdentity") == holder]
        assert held, f"{holder} never held the Lease: {self.versions()}"
        return held[-1]

    def first_after(self, spec: dict[str, Any], holder: str) -> dict[str, Any]:
        """The first version after ``spec`` that ``holder`` wrote as holder."""
        versions = self.versions()
        later = versions[versions.index(spec) + 1 :]
        found = next((s for s in later if s.get("holderIdentity") == holder), None)
        assert found is not None, f"{holder} never took the Lease after {spec}: {versions}"
        return found

    def released(self) -> dict[str, Any]:
        """The version that gave the Lease up (no holder)."""
        found = [s for s in self.versions() if not s.get("holderIdentity")]
        assert found, f"the Lease was never released: {self.versions()}"
        return found[-1]

    @staticmethod
    def gap(earlier: dict[str, Any], later: dict[str, Any]) -> float:
        """Seconds from ``earlier``'s renewal to ``later``'s acquisition."""
        return (micro_time(later["acquireTime"]) - micro_time(earlier["renewTime"])).total_seconds()


@contextmanager
def recording(client: KubeClient, namespace: str, name: str) -> Iterator[LeaseRecord]:
    """Record the Lease ``namespace/name`` from now until the block ends (a
    watch from its current version; the version then is the first one), and
    until the watch has brought the version the Lease has then."""
    record = LeaseRecord()
    listed = client.list(LEASES, namespace)
    for lease in listed["items"]:
        if lease["metadata"]["name"] == name:
            record.add(lease.get("spec") or {}, lease["metadata"]["resourceVersion"])
    stream = client.watch(
        LEASES,
        namespace,
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=600,
        allow_bookmarks=False,
    )

    def follow() -> None:
        try:
            for event in stream:
                obj = event.get("object") or {}
                meta = obj.get("metadata") or {}
                if meta.get("name") == name and event["type"] != "DELETED":
                    record.add(obj.get("spec") or {}, str(meta.get("resourceVersion") or ""))
        except TransportError:
            pass  # closed at the end of the block

    def caught_up() -> None:
        try:
            current = client.get(LEASES, name, namespace)["metadata"]["resourceVersion"]
        except ApiError:  # gone, or the cluster is: nothing more to wait for
            current = None
        if current is not None:
            record.wait_seen(current, CATCH_UP)  # else its readers fail, showing what it holds
        stream.close()

    with in_background(follow, caught_up):
        yield record
