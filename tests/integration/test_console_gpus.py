"""The console's GPUs page against the local cluster: a GPU job's pod, bound by
the scheduler to one of the KWOK nodes (8 GPUs each), shows under its node
with the GPUs it holds, and the job among the jobs holding GPUs, over
``GET /api/gpus`` and its event stream, as ``t9k console`` serves them with
the admin kubeconfig. No operator runs: the test makes the job's pod itself,
labelled as the operator labels them."""

from __future__ import annotations

import queue
import threading
from typing import Any

import httpx2
import pytest

from t9k_operator.kinds.gpus import GPU
from t9k_operator.kube import KubeClient
from t9k_operator.resources import NODES, PODS
from tests.integration import test_console
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs, pytorch_job

pytestmark = pytest.mark.usefixtures("crds_installed")
console_url = test_console.console_url

GPUS = 2


def _gpu_pod(job: dict[str, Any]) -> dict[str, Any]:
    pod = test_console._pod_of(job, "worker", 0)
    pod["spec"]["containers"][0]["resources"] = {"limits": {GPU: str(GPUS)}}
    return pod


def test_a_gpu_jobs_pod_shows_under_its_node_with_its_gpus(
    console_url: tuple[str, str], admin: KubeClient, namespace: str
) -> None:
    base, token = console_url
    nodes, _ = admin.list_all(NODES)
    with_gpus = {n["metadata"]["name"] for n in nodes if n["status"]["allocatable"].get(GPU)}
    assert with_gpus, "the local cluster has no node with GPUs"
    with httpx2.Client(base_url=base, follow_redirects=False) as client:
        assert client.get(f"/?token={token}").status_code == 303
        page = client.get("/gpus")
        assert page.status_code == 200 and '<script src="/static/gpus.js" defer>' in page.text
        assert '<a href="/gpus">' in client.get("/").text
        first = client.get("/api/gpus").json()
        assert first["reason"] == ""
        assert {r["key"] for r in first["nodes"]["rows"]} == with_gpus

        events: queue.Queue[Any] = queue.Queue()
        reader = threading.Thread(
            target=test_console._read_events,
            args=(client, "/api/gpus/events", events),
            daemon=True,
        )
        reader.start()
        test_console._next(events, lambda n, d: n == "snapshot", 10)

        job = pytorch_job("console-gpus", [("worker", 1, "Never")])
        container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
        container["resources"] = {"limits": {GPU: str(GPUS)}}
        created = Jobs(admin, namespace).create(job)
        admin.create(PODS, _gpu_pod(created), namespace)
        held = f"{namespace}/console-gpus"
        key = f"{namespace}/PyTorchTrainingJob/console-gpus"

        def holding(name: str, data: dict[str, Any]) -> bool:
            return name == "snapshot" and any(
                j["text"] == held for r in data["nodes"]["rows"] for j in r["jobs"]
            )

        _, view = test_console._next(events, holding, 60)
        node = next(r for r in view["nodes"]["rows"] if held in [j["text"] for j in r["jobs"]])
        assert node["key"] in with_gpus
        assert {"text": held, "key": key} in node["jobs"]
        name, gpus, allocated, free, _jobs = node["cells"]
        assert name == node["key"] and int(allocated) >= GPUS
        assert int(gpus) - int(allocated) == int(free)

        def job_row() -> list[str] | None:
            rows = {r["key"]: r["cells"] for r in client.get("/api/gpus").json()["jobs"]["rows"]}
            return rows.get(key)

        cells = wait_for(job_row, 10, "the job among the jobs holding GPUs")
        assert cells[:4] == [namespace, "console-gpus", "PyTorchTrainingJob", cells[3]]
        assert cells[4:] == [str(GPUS), str(GPUS), node["key"]]
