"""The API server's figures over a run, from its /metrics and its profiler:
the writes by verb and resource and its time on them, the watchers it
closed, and a CPU profile."""

from __future__ import annotations

import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from hack.cluster import Cluster

from ..common.metrics import samples

WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "APPLY")
# Resources only the operator writes in a run (the bench writes the jobs
# themselves and, as the stand-in kubelet, pods/status).
BUDGET = {
    ("POST", "pods", ""),
    ("DELETE", "pods", ""),
    ("POST", "services", ""),
    ("PUT", "pytorchtrainingjobs", "status"),
    ("PATCH", "pytorchtrainingjobs", "status"),
    ("POST", "workloads", ""),  # --kueue
    ("POST", "podgroups", ""),  # --gang
}


def metrics(cluster: Cluster) -> str:
    """The API server's /metrics."""
    return cluster.kubectl("get", "--raw", "/metrics").stdout


def writes(
    text: str,
) -> tuple[Counter[tuple[str, str, str]], dict[tuple[str, str, str], float]]:
    """apiserver_request_total of the write verbs, by (verb, resource,
    subresource); and the server's seconds spent on them (the sum of
    apiserver_request_duration_seconds), by the same key; from ``text``,
    the server's /metrics."""
    out: Counter[tuple[str, str, str]] = Counter()
    seconds: dict[tuple[str, str, str], float] = {}

    def written(name: str) -> Iterator[tuple[tuple[str, str, str], float]]:
        for labels, value in samples(text, name):
            if labels.get("verb") in WRITE_VERBS:
                key = (labels["verb"], labels.get("resource", ""), labels.get("subresource", ""))
                yield key, value

    for key, value in written("apiserver_request_total"):
        out[key] += int(value)
    for key, value in written("apiserver_request_duration_seconds_sum"):
        seconds[key] = seconds.get(key, 0.0) + value
    return out, seconds


def closed_watchers(text: str) -> Counter[str]:
    """The watchers the API server closed because they did not take its events
    in time (``apiserver_terminated_watchers_total``), by resource, from its
    /metrics text. A client then watches again: an informer's re-watch is a
    GET in its ``rest_client_requests_total``."""
    out: Counter[str] = Counter()
    for labels, value in samples(text, "apiserver_terminated_watchers_total"):
        out[labels.get("resource", "")] += int(value)
    return out


def profile(cluster: Cluster, seconds: int, out: Path) -> threading.Thread:
    """The API server's CPU profile over the next ``seconds`` (Go pprof, its
    /debug/pprof handler), written to ``out`` by a thread."""

    def take() -> None:
        got = subprocess.run(
            [
                str(cluster.bin_dir / "kubectl"),
                "--kubeconfig",
                str(cluster.kubeconfig),
                "get",
                "--raw",
                f"/debug/pprof/profile?seconds={seconds}",
            ],
            capture_output=True,
            check=False,
        )
        out.write_bytes(got.stdout)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread
