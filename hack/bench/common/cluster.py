"""The benchmarks' use of the local cluster (:class:`hack.cluster.Cluster`):
a fresh one a run, their client of it, the CRDs, and waits."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from hack.cluster import Cluster
from t9k_operator.kube import AlreadyExists, ClientOptions, KubeClient
from t9k_operator.resources import NAMESPACES

from .jobs import NAMESPACE


def bench_cluster(name: str) -> Cluster:
    """The cluster ``name``, not started yet; its binaries built when missing
    (the build's log on stderr)."""
    return Cluster(name, build=True, echo=True)


def start_fresh(cluster: Cluster, *flags: str) -> None:
    """``cluster`` started anew with ``hack.cluster up``'s ``flags``; taken
    down again if that fails (an add-on that did not start)."""
    try:
        cluster.up(*flags, fresh=True)
    except BaseException:
        with contextlib.suppress(Exception):
            cluster.down()
        raise


def bench_client(cluster: Cluster) -> KubeClient:
    """The benchmark's own client: no client-side limit, a wide pool."""
    return KubeClient.from_config(
        str(cluster.kubeconfig),
        options=ClientOptions(qps=1e6, burst=1_000_000, pool_size=64, user_agent="t9k-bench"),
    )


def install_crds(cluster: Cluster, client: KubeClient, source: Path) -> None:
    """The CRDs of the source tree ``source``, Established, and the namespace."""
    crds = str(source / "manifests" / "crds")
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", crds)
    cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    with contextlib.suppress(AlreadyExists):
        client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})


def wait_until(what: str, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)
