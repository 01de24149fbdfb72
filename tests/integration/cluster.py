"""The tests' use of the local cluster: :class:`hack.cluster.Cluster`, which
never builds binaries unless asked (``T9K_NO_BUILD=1``: they are a make
prerequisite), and the helpers the tests share around it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hack.cluster import Cluster as Cluster
from hack.cluster import GangScheduler as GangScheduler
from hack.cluster import Kueue as Kueue
from hack.cluster import MissingBinariesError, cluster_command
from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.resources import CONFIGMAPS, NAMESPACES, SERVICEACCOUNTS

ROOT = Path(__file__).resolve().parents[2]
MissingBinaries = MissingBinariesError  # binaries never built: run `make binaries`


def admin(cluster: Cluster) -> KubeClient:
    """The operator's client, as the cluster's admin."""
    return KubeClient.from_config(str(cluster.kubeconfig))


def cluster_script(*args: str) -> subprocess.CompletedProcess[str]:
    """``python3 -m hack.cluster ARGS``, never building (binaries are a make
    prerequisite, never built under a test's timeout). Raises
    ``MissingBinaries`` when they were never built, ``RuntimeError`` when it
    fails otherwise."""
    return cluster_command(*args)


def create_namespace(client: KubeClient, prefix: str) -> str:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": f"{prefix}-"}}
    name = str(client.create(NAMESPACES, body)["metadata"]["name"])
    # What kube-controller-manager adds to every namespace, and every pod in
    # it needs before kubelet starts it: the default ServiceAccount and the
    # API server's CA (the ServiceAccount volume's projected ConfigMap).
    for resource, obj in ((SERVICEACCOUNTS, "default"), (CONFIGMAPS, "kube-root-ca.crt")):
        wait_for(lambda: _has(client, resource, obj, name), 30, f"{obj} in {name}")  # noqa: B023
    return name


def _has(client: KubeClient, resource: Any, name: str, namespace: str) -> bool:
    try:
        client.get(resource, name, namespace)
        return True
    except NotFound:
        return False


@contextlib.contextmanager
def in_background(run: Callable[[], None], stop: Callable[[], None]) -> Iterator[None]:
    """``run`` in a daemon thread for the block; then ``stop()`` and a join."""
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop()
        thread.join(5)


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what``."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except AssertionError as exc:
            last_exc = exc
        time.sleep(interval)
    detail = f": {last_exc}" if last_exc else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")


def request_token(client: KubeClient, namespace: str, name: str, seconds: int = 7200) -> str:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    resp = client.request("POST", SERVICEACCOUNTS.path(namespace, name, "token"), body=body)
    return str(resp["status"]["token"])


def delete_quietly(
    client: KubeClient, resource: Resource, name: str, namespace: str | None
) -> None:
    with contextlib.suppress(NotFound):
        client.delete(resource, name, namespace)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


def session_cluster_name() -> str:
    """The name of this test process's cluster: ``$T9K_TEST_CLUSTER`` (default
    ``t9k-test``), and under pytest-xdist the worker's id after it
    (``t9k-test-gw0``): each worker runs its share of the tests serially
    against a cluster of its own, so a test that counts on the whole cluster
    (its GPUs, its CRDs) still has it to itself."""
    name = os.environ.get("T9K_TEST_CLUSTER", "t9k-test")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"{name}-{worker}" if worker else name
