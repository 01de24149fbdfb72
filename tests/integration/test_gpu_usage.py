"""Idle GPUs for real: the operator, started with ``--prometheus-url``, asks a
real Prometheus (Debian's package, tests/integration/prometheus.py) that
scrapes two stand-ins of NVIDIA's DCGM exporter (tests/integration/dcgm_exporter.py:
the real one needs GPUs; the stand-in serves its metric names and labels).
One is scraped as a ServiceMonitor without ``honorLabels`` scrapes it (the
GPU's pod and namespace arrive as ``exported_pod``/``exported_namespace``),
the other keeping the exporter's labels. The jobs' pods ask for GPUs of the
local cluster's KWOK nodes and run as their kubelet would report them.

An idle Running job gets ``GPUsIdle=True`` and one Warning Event once its
window has passed (10 s here), keeps running, and is exported in
``t9k_job_gpus_idle`` (its alert pending in Prometheus's own evaluation); a
busy one gets ``GPUsIdle=False``; the condition clears when utilization
rises. ``t9k top jobs`` and ``t9k describe`` with ``--prometheus-url``, and
the SDK, show the figures. With Prometheus gone, the queries fail, are
counted, and change nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.integrations.gpu_usage.sdk import PrometheusUnavailable, gpu_usage
from t9k_operator.integrations.gpu_usage.usage import Usage
from t9k_operator.kube import KubeClient
from t9k_operator.objects import parse_time
from t9k_operator.resources import EVENTS
from t9k_operator.sdk import Client
from tests.integration.cluster import Cluster, wait_for
from tests.integration.dcgm_exporter import MEMORY_MIB, DCGMExporter
from tests.integration.jobs import Jobs, pytorch_job, run_all, settled
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess, free_port
from tests.integration.prometheus import Prometheus

T9K = Path(sys.executable).with_name("t9k")
WINDOW = 10
"""The test's --gpu-idle-window, seconds (the watch asks every second)."""
EXPORTER_TARGET = {
    # What a ServiceMonitor of the GPU operator's exporter Service adds.
    "namespace": "gpu-operator",
    "service": "nvidia-dcgm-exporter",
    "endpoint": "gpu-metrics",
    "container": "nvidia-dcgm-exporter",
}


@pytest.fixture
def exporters() -> Iterator[tuple[DCGMExporter, DCGMExporter]]:
    a, b = DCGMExporter("gpu-node-a"), DCGMExporter("gpu-node-b")
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def prometheus(
    tmp_path: Path, exporters: tuple[DCGMExporter, DCGMExporter]
) -> Iterator[tuple[Prometheus, int]]:
    """A Prometheus scraping both exporters, and the operator's metrics port
    (the operator is the test's to start there)."""
    a, b = exporters
    metrics_port = free_port()
    scrape = [
        {
            "job_name": "gpu-metrics",
            "honor_labels": False,
            "static_configs": [
                {"targets": [f"127.0.0.1:{a.port}"], "labels": {**EXPORTER_TARGET, "pod": "dcgm-a"}}
            ],
        },
        {
            "job_name": "gpu-metrics-honoured",
            "honor_labels": True,
            "static_configs": [
                {"targets": [f"127.0.0.1:{b.port}"], "labels": {**EXPORTER_TARGET, "pod": "dcgm-b"}}
            ],
        },
    ]
    (tmp_path / "prom").mkdir()
    prom = Prometheus(tmp_path / "prom", {"t9k-operator-0": metrics_port}, scrape)
    prom.wait_ready()
    yield prom, metrics_port
    prom.stop()


def gpu_job(name: str) -> dict[str, Any]:
    body = pytorch_job(name, [("master", 1, "Never")])
    container = body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    return body


def condition(jobs: Jobs, name: str) -> dict[str, Any] | None:
    return jobs.condition(name, "GPUsIdle")


def told(jobs: Jobs, name: str, reason: str) -> list[tuple[str, int]]:
    """The job's Events of ``reason``: type, and how many times each was told
    (the recorder counts a repeated Event on the first one)."""
    items, _ = jobs.client.list_all(EVENTS, jobs.namespace)
    return [
        (e["type"], int(e.get("count") or 1))
        for e in items
        if e["involvedObject"]["name"] == name and e["reason"] == reason
    ]


def t9k(cluster: Cluster, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(T9K), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "T9K_PROMETHEUS_URL"},
    )


def test_idle_gpus_get_a_condition_and_one_warning_and_clear_when_they_work(
    start_operator: Callable[..., OperatorProcess],
    prometheus: tuple[Prometheus, int],
    exporters: tuple[DCGMExporter, DCGMExporter],
    admin: KubeClient,
    kubelet: Kubelet,
    cluster: Cluster,
    namespace: str,
) -> None:
    prom, metrics_port = prometheus
    url = f"http://127.0.0.1:{prom.port}"
    operator = start_operator(
        "--prometheus-url",
        url,
        "--gpu-idle-window",
        f"{WINDOW}s",
        "--metrics-bind-address",
        f"127.0.0.1:{metrics_port}",
    )
    operator.metrics_port = metrics_port
    operator.wait_ready()
    a, b = exporters
    # The idle job's GPU on node a (exported_* labels), the busy one's on node
    # b; GPUs no pod holds beside them, busy or not, count for no job.
    a.set(0, 1.0, used_mib=1024, pod=(namespace, "idle-master-0", "pytorch"))
    a.set(1, 97.0, used_mib=40000)
    b.set(3, 85.0, used_mib=30720, pod=(namespace, "busy-master-0", "pytorch"))
    jobs = Jobs(admin, namespace)
    for name in ("idle", "busy"):
        jobs.create(gpu_job(name))
    jobs.wait_pods("idle", ["idle-master-0"])
    jobs.wait_pods("busy", ["busy-master-0"])
    run_all(kubelet, jobs, "idle", ["idle-master-0"])
    run_all(kubelet, jobs, "busy", ["busy-master-0"])

    # -- idle: the condition, once the window has passed, and one Warning ------------
    idle = wait_for(
        lambda: (c := condition(jobs, "idle")) and c["status"] == "True" and c, 90, "GPUsIdle"
    )
    pod = jobs.pods("idle")["idle-master-0"]
    ran = parse_time(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
    judged = parse_time(idle["lastTransitionTime"])
    assert ran and judged and (judged - ran).total_seconds() >= WINDOW - 1, (ran, judged)
    assert idle["reason"] == "GPUsIdle"
    assert "1 GPU(s) stayed under 5.0% utilization for 10s" in idle["message"], idle
    assert "peak 1.0%" in idle["message"], idle
    busy = wait_for(lambda: condition(jobs, "busy"), 30, "busy judged")
    assert (busy["status"], busy["reason"]) == ("False", "GPUsInUse"), busy
    # A few more periods idle: the job stays as it is, warned once.
    time.sleep(3)
    settled(jobs, "idle", "GPUsIdle True", lambda j: condition(jobs, "idle"), operator=operator)
    settled(jobs, "busy", "GPUsIdle False", lambda j: condition(jobs, "busy"), operator=operator)
    assert jobs.status("idle")["phase"] == "Running"
    assert told(jobs, "idle", "GPUsIdle") == [("Warning", 1)]
    assert told(jobs, "busy", "GPUsIdle") == []
    assert condition(jobs, "idle") == idle  # its message kept as first said
    assert operator.metric("t9k_job_gpus_idle", {"namespace": namespace, "name": "idle"}) == 1
    assert operator.metric("t9k_job_gpus_idle", {"namespace": namespace, "name": "busy"}) == 0
    pending = prom.wait_query(
        f'ALERTS{{alertname="T9kJobGPUsIdle", namespace="{namespace}"}}',
        30,
        "T9kJobGPUsIdle pending in Prometheus's evaluation",
    )
    assert {(s["metric"]["name"], s["metric"]["alertstate"]) for s in pending} == {
        ("idle", "pending")
    }

    # -- the figures, in the CLI and the SDK ------------------------------------------
    top = t9k(cluster, namespace, "top", "jobs", "--prometheus-url", url)
    assert top.returncode == 0, top.stderr
    rows = {line.split()[0]: line for line in top.stdout.splitlines()[1:]}
    assert "GPU UTIL" in top.stdout.splitlines()[0] and "GPU MEMORY" in top.stdout
    assert "1.0% (max 1.0%)" in rows["idle"] and "1.0/80.0 GiB" in rows["idle"], top.stdout
    assert "85% (max 85%)" in rows["busy"] and "30.0/80.0 GiB" in rows["busy"], top.stdout
    plain = t9k(cluster, namespace, "top", "jobs")
    assert "--prometheus-url" in plain.stderr and "GPU UTIL" not in plain.stdout
    described = t9k(cluster, namespace, "describe", "idle", "--prometheus-url", url)
    assert described.returncode == 0, described.stderr
    assert "GPU usage:   1 GPU: 1.0% (max 1.0%), memory 1.0/80.0 GiB" in described.stdout
    assert "GPUsIdle" in described.stdout
    with Client(str(cluster.kubeconfig), namespace=namespace) as client:
        assert gpu_usage(client, "busy", prometheus_url=url) == Usage(
            1, 85.0, 85.0, 30720.0, float(MEMORY_MIB)
        )
        with pytest.raises(PrometheusUnavailable):
            gpu_usage(client, "busy", prometheus_url=f"http://127.0.0.1:{free_port()}")

    # -- they work again: the condition clears, with a Normal Event -------------------
    a.set(0, 60.0)
    cleared = wait_for(
        lambda: (c := condition(jobs, "idle")) and c["status"] == "False" and c, 30, "cleared"
    )
    assert cleared["reason"] == "GPUsInUse"
    jobs.wait_event("idle", "GPUsInUse")
    assert told(jobs, "idle", "GPUsInUse") == [("Normal", 1)]
    wait_for(
        lambda: operator.metric("t9k_job_gpus_idle", {"namespace": namespace, "name": "idle"}) == 0,
        10,
        "the gauge at 0",
    )

    # -- Prometheus gone: counted, logged, nothing changes, no hot loop ---------------
    errors = operator.metric("t9k_gpu_usage_queries_total", {"result": "error"}) or 0.0
    prom.stop()
    wait_for(
        lambda: (operator.metric("t9k_gpu_usage_queries_total", {"result": "error"}) or 0) > errors,
        15,
        "a failed query counted",
    )
    first = operator.metric("t9k_gpu_usage_queries_total", {"result": "error"}) or 0.0
    time.sleep(4)
    later = operator.metric("t9k_gpu_usage_queries_total", {"result": "error"}) or 0.0
    assert 1 <= later - first <= 6, (first, later)  # about one a second: the period
    assert operator.proc.poll() is None and operator.get("/readyz")[0] == 200
    assert condition(jobs, "idle") == cleared
    assert "the query to Prometheus failed" in operator.logs()
