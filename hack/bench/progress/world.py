"""The progress endpoint as the operator builds it, over stand-ins for its
caches and the API server's TokenReview, and served on TLS as the operator
serves it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from t9k_operator.integrations.progress.endpoint import ProgressEndpoint
from t9k_operator.integrations.progress.server import ProgressServer
from t9k_operator.integrations.progress.store import Coalescer, ProgressStore
from t9k_operator.reconcilers.serving import Route
from t9k_operator.resources import Resource
from t9k_operator.runtime import certs, tls

KIND = Resource("batch.tensorstack.dev", "v1beta1", "pytorchtrainingjobs", "PyTorchTrainingJob")
AUDIENCE = "t9k-operator-progress"
HANG = 60


class FakeClock:
    """Time that moves only when the simulation says."""

    def __init__(self) -> None:
        self.mono = 1000.0
        self.wall = datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.mono

    def now(self) -> datetime:
        return self.wall + timedelta(seconds=self.mono - 1000.0)

    def sleep(self, seconds: float) -> None:
        self.mono += seconds


class Cache:
    def __init__(self, objs: dict[tuple[str, str], Any]) -> None:
        self.objs = objs

    def get(self, namespace: str, name: str) -> Any:
        return self.objs.get((namespace, name))

    def add_event_handler(self, **_: Any) -> None:
        return None


class Reviews:
    """The API server's TokenReview: token ``t:<job>:<pod>`` is pod ``<job>-<pod>``'s."""

    def __init__(self) -> None:
        self.asked = 0

    def create(self, resource: Resource, body: Any) -> Any:
        self.asked += 1
        _, job, pod = body["spec"]["token"].split(":")
        return {
            "status": {
                "authenticated": True,
                "audiences": [AUDIENCE],
                "user": {
                    "username": "system:serviceaccount:ns:default",
                    "extra": {
                        "authentication.kubernetes.io/pod-name": [f"{job}-{pod}"],
                        "authentication.kubernetes.io/pod-uid": [f"uid-{job}-{pod}"],
                    },
                },
            }
        }


def world(
    jobs: dict[str, int], hang: int | None = None, **kw: Any
) -> tuple[ProgressEndpoint, ProgressStore, Reviews]:
    """An endpoint for ``jobs`` (name -> pods), as the operator builds it."""
    objs: dict[tuple[str, str], Any] = {}
    pods: dict[tuple[str, str], Any] = {}
    for name, count in jobs.items():
        spec = {"runPolicy": {"progress": {"hangTimeoutSeconds": hang}}} if hang else {}
        meta = {"namespace": "ns", "name": name, "uid": f"uid-{name}"}
        objs[("ns", name)] = {"metadata": meta, "spec": spec}
        owner = {"kind": KIND.kind, "name": name, "uid": f"uid-{name}", "controller": True}
        for i in range(count):
            pod = {"name": f"{name}-{i}", "uid": f"uid-{name}-{i}", "ownerReferences": [owner]}
            pods[("ns", f"{name}-{i}")] = {"metadata": pod}
    store, reviews = ProgressStore(), Reviews()
    endpoint = ProgressEndpoint(
        reviews,  # type: ignore[arg-type]
        {KIND.plural: Route(KIND, Cache(objs), lambda key, delay: None)},  # type: ignore[arg-type]
        Cache(pods),  # type: ignore[arg-type]
        store,
        Coalescer(),
        AUDIENCE,
        **kw,
    )
    return endpoint, store, reviews


@contextmanager
def served(endpoint: ProgressEndpoint, workdir: Path) -> Iterator[tuple[int, Path, ProgressServer]]:
    """``endpoint`` on TLS at 127.0.0.1: its port, its CA file and its server."""
    where = workdir / "certs"
    where.mkdir(exist_ok=True)
    ca, ca_key = certs.new_ca("bench CA")
    cert, key = certs.new_serving(ca, ca_key, ["127.0.0.1"])
    for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
        (where / name).write_bytes(data)
    server = ProgressServer(("127.0.0.1", 0), endpoint, tls.DirSource(where))
    server.start()
    try:
        yield server.port, where / "ca.crt", server
    finally:
        server.stop()
