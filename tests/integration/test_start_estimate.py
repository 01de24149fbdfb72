"""When will my job start, on the local cluster: ``status.startEstimate``.

Under Kueue (the real manager, its visibility API served through the API
server's aggregation layer as hack/cluster sets it up): a running job holds
the ClusterQueue's quota and reports its progress to the operator's real
endpoint (a pod-bound ServiceAccount token, as the reporter sends it); the
next job waits at position 1 with an estimated start at the running job's
ETA, and the one after it at position 2 with no estimate, saying why. Under
the default scheduler: a job asking for more GPUs per pod than any KWOK node
has is told, within seconds of its pods' wait and with the operator at its
default period, that it never fits, which resource it lacks and on which
nodes.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import ssl
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from t9k_operator.cli import main as t9k_main
from t9k_operator.kube import KubeClient
from t9k_operator.objects import parse_time
from t9k_operator.resources import NODES, WORKLOADS, Resource
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs, finish, in_phase, pytorch_job, settled
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess, free_port
from tests.integration.test_gang_jobs import bound, gpu_job
from tests.integration.test_gang_schedulers import gpus_in_use
from tests.integration.test_kueue_jobs import kueue_ready as kueue_ready  # the fixture
from tests.integration.test_kueue_jobs import make_queue
from tests.kinds import kind_resource

# Kueue's tests share one pytest-xdist worker, so that one cluster runs it.
pytestmark = pytest.mark.xdist_group("add-ons")

KIND = "PyTorchTrainingJob"
AUDIENCE = "t9k-operator-progress"
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
PERIOD = "5"


def pod_token(admin: KubeClient, pod: dict[str, Any]) -> str:
    """A token of the pod's ServiceAccount bound to the pod, for the endpoint's
    audience: what kubelet projects into the pod for the reporter."""
    meta = pod["metadata"]
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "audiences": [AUDIENCE],
            "expirationSeconds": 3600,
            "boundObjectRef": {
                "kind": "Pod",
                "apiVersion": "v1",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        },
    }
    account = pod["spec"].get("serviceAccountName") or "default"
    path = SERVICE_ACCOUNTS.path(meta["namespace"], account, "token")
    return str(admin.request("POST", path, body=body)["status"]["token"])


def report(port: int, jobs: Jobs, job: str, token: str, body: dict[str, Any]) -> float:
    """POST one report to the operator's endpoint, as report.py does; the
    seconds it says to wait before the next."""
    url = f"https://127.0.0.1:{port}/v1/namespaces/{jobs.namespace}/{jobs.resource.plural}/{job}/progress"
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "X-T9k-Rank": "0",
        },
    )
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen(request, context=insecure, timeout=10) as resp:
        assert resp.status == 202
        return float(json.loads(resp.read() or b"{}").get("next") or 1)


def seconds(text: str) -> int:
    """``12m05s``, ``3h02m``, ``45s`` (status.progress.eta) in seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([dhms])", text))


def workload_of(admin: KubeClient, namespace: str, job: str) -> dict[str, Any]:
    """The job's Kueue Workload (the operator names it ``<job>-<uid[:8]>``)."""
    items = admin.list(WORKLOADS, namespace)["items"]
    return next(w for w in items if w["metadata"]["name"].startswith(f"{job}-"))


def estimate_of(jobs: Jobs, name: str) -> dict[str, Any] | None:
    found = jobs.status(name).get("startEstimate")
    return dict(found) if found else None


def with_time(jobs: Jobs, name: str) -> dict[str, Any]:
    """The job's estimate once it has a time (else fails, saying what it has)."""
    found = estimate_of(jobs, name)
    assert found and found.get("estimatedStartTime"), found
    return found


def from_kueue(jobs: Jobs, name: str) -> dict[str, Any]:
    """The job's estimate once it has a time and its positions are Kueue's own
    (its visibility API's), not the operator's count (else fails, saying what
    it has)."""
    found = with_time(jobs, name)
    assert "positions count only" not in found["reason"], found
    return found


def t9k(cluster: Cluster, namespace: str, *args: str) -> str:
    out = io.StringIO()
    argv = ["--kubeconfig", str(cluster.kubeconfig), "-n", namespace, *args]
    with contextlib.redirect_stdout(out):
        assert t9k_main(argv) == 0, out.getvalue()
    return out.getvalue()


def run_with_eta(
    admin: KubeClient, kubelet: Kubelet, jobs: Jobs, job: str, port: int, total: int
) -> datetime:
    """Run the bound pods of ``job``, have one report two steps apart (a
    throughput, and so an ETA) and return when the job's progress says it ends."""
    pods = jobs.pods(job)
    for name in pods:
        kubelet.run(jobs.namespace, name)
    jobs.wait_phase(job, "Running")
    token = pod_token(admin, pods[min(pods)])
    wait = report(port, jobs, job, token, {"step": 100, "totalSteps": total})
    time.sleep(max(wait, 2.0))
    report(port, jobs, job, token, {"step": 110, "totalSteps": total})
    progress = wait_for(
        lambda: (p := jobs.status(job).get("progress") or {}).get("eta") and p,
        30,
        f"{job}'s progress with an ETA",
    )
    reported = parse_time(progress["lastReportTime"])
    assert reported is not None
    return reported + timedelta(seconds=seconds(progress["eta"]))


def reporting(*flags: str) -> tuple[int, list[str]]:
    """A port for the progress endpoint, and the operator's flags for it and
    for estimates every PERIOD."""
    port = free_port()
    endpoint = [f"--progress-bind-address=0.0.0.0:{port}", f"--progress-service-port={port}"]
    return port, [*flags, f"--start-estimate-period={PERIOD}", *endpoint]


@pytest.fixture
def free_gpus(admin: KubeClient) -> None:
    # Each test counts on the cluster's 32 GPUs: wait until an earlier test's pods are gone.
    wait_for(lambda: gpus_in_use(admin) == 0, 120, "the GPUs of earlier tests freed")


@pytest.mark.usefixtures("kueue_ready")
def test_under_kueue_a_waiting_job_has_its_place_and_the_running_jobs_eta(
    free_gpus: None,
    start_operator: Callable[..., OperatorProcess],
    admin: KubeClient,
    namespace: str,
    kubelet: Kubelet,
    cluster: Cluster,
) -> None:
    # The cluster's own record of Kueue: whether it serves the visibility API, or why not.
    record = json.loads((cluster.kubeconfig.parent / "cluster.json").read_text())["kueue"]
    assert record.get("visibility"), f"no visibility API: {record.get('visibilityOff')}"
    port, flags = reporting("--kueue")
    operator = start_operator(*flags)
    operator.wait_ready()
    queue = next(queues := make_queue(admin, namespace))
    try:
        jobs = Jobs(admin, namespace, kind_resource(KIND))
        jobs.create(gpu_job(KIND, "holder", manual=True, queue=queue))
        wait_for(lambda: bound(jobs, "holder") == 3, 60, "holder admitted and bound")
        ends = run_with_eta(admin, kubelet, jobs, "holder", port, 6100)

        jobs.create(gpu_job(KIND, "next", manual=True, queue=queue))
        # Until Kueue has queued next's Workload (a moment, or seconds on a busy
        # machine), its visibility API does not list it and the estimate's
        # positions are the operator's own count, which says so; a later estimate
        # (once Kueue says why it waits, or the next period's) has Kueue's own.
        estimate = wait_for(lambda: from_kueue(jobs, "next"), 60, "next's estimate from Kueue")
        assert estimate["where"] == "Kueue"
        assert (estimate["localQueue"], estimate["localQueuePosition"]) == (queue, 1)
        assert (estimate["clusterQueue"], estimate["clusterQueuePosition"]) == (
            f"cq-{namespace}"[:63],
            1,
        )
        assert estimate["waitingFor"][0]["name"] == f"{namespace}/holder"
        start = parse_time(estimate["estimatedStartTime"])
        assert start is not None and abs((start - ends).total_seconds()) <= 90, (start, ends)

        # The one after it waits for two jobs' quota, and next's end is unknown.
        # Kueue orders Workloads of one priority by creation time, in seconds,
        # then (v0.17) by uid: third's is created in a later second than next's.
        next_created = parse_time(
            workload_of(admin, namespace, "next")["metadata"]["creationTimestamp"]
        )
        assert next_created is not None
        while datetime.now(next_created.tzinfo) < next_created + timedelta(seconds=1):
            time.sleep(0.1)
        jobs.create(gpu_job(KIND, "third", manual=True, queue=queue))
        third = wait_for(
            lambda: (
                (e := estimate_of(jobs, "third"))
                and e.get("clusterQueuePosition") == 2
                and "positions count only" not in e["reason"]
                and e
            ),
            60,
            "third's start estimate",
        )
        assert third["localQueuePosition"] == 2
        assert "estimatedStartTime" not in third
        assert "lacks 24 nvidia.com/gpu" in third["reason"], third["reason"]

        listed = t9k(cluster, namespace, "list")
        row = next(line for line in listed.splitlines() if line.startswith("next "))
        assert f"~{start:%H:%M}Z (in " in row, listed
        third_row = next(line for line in listed.splitlines() if line.startswith("third "))
        assert "#2 in queue" in third_row, listed
        described = t9k(cluster, namespace, "describe", f"{jobs.resource.plural}/next")
        assert f"#1 in LocalQueue {queue}" in described, described
        assert f"waits for {namespace}/holder" in described, described

        # Once holder ends, next is admitted and runs: no estimate is left on it.
        finish(kubelet, jobs, "holder")
        wait_for(lambda: bound(jobs, "next") == 3, 60, "next admitted once holder ended")
        for name in jobs.pods("next"):
            kubelet.run(namespace, name)
        job = settled(jobs, "next", "Running", in_phase("Running"), operator=operator)
        assert "startEstimate" not in job["status"]
    finally:
        for name in ("holder", "next", "third"):
            with contextlib.suppress(Exception):
                admin.delete(kind_resource(KIND), name, namespace)
        wait_for(lambda: gpus_in_use(admin) == 0, 60, "the test's GPUs freed")
        next(queues, None)


def test_a_job_too_big_for_any_node_is_told_at_once_that_it_never_fits(
    free_gpus: None,
    start_operator: Callable[..., OperatorProcess],
    admin: KubeClient,
    namespace: str,
    cluster: Cluster,
) -> None:
    # The default period, 30 s: the poller's first periodic pass comes 30 s
    # after it starts, so an estimate sooner than that is the events' doing.
    begun = time.monotonic()
    operator = start_operator()
    operator.wait_ready()
    jobs = Jobs(admin, namespace)
    body = pytorch_job("huge", [("worker", 2, "Never")])
    container = body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": "16"}}
    jobs.create(body)
    pending = wait_for(
        lambda: jobs.status("huge").get("phase") == "Pending" and time.monotonic(),
        30,
        "huge Pending",
    )
    estimate = wait_for(lambda: estimate_of(jobs, "huge"), 30, "huge's start estimate")
    at = time.monotonic()
    assert at - pending <= 3.0, f"estimated {at - pending:.1f} s after it was seen Pending"
    assert at - begun < 30.0, f"estimated {at - begun:.1f} s after the operator started"
    nodes = sorted(n["metadata"]["name"] for n in admin.list(NODES)["items"])
    # The scheduler's own words, from a pod's PodScheduled condition.
    assert "Insufficient nvidia.com/gpu" in estimate.pop("message", ""), estimate
    assert estimate == {
        "where": "scheduler",
        "lacking": [
            {
                "resource": "nvidia.com/gpu",
                "requested": "16",
                "pods": 2,
                "free": "8",
                "nodes": nodes,
            }
        ],
        "waitingFor": [],
        "neverFits": True,
        "reason": "never fits: asks 32 nvidia.com/gpu in pods of 16; the largest node has 8",
    }
    listed = t9k(cluster, namespace, "list")
    row = next(line for line in listed.splitlines() if line.startswith("huge "))
    assert " never " in f"{row} ", listed
    described = t9k(cluster, namespace, "describe", f"{jobs.resource.plural}/huge")
    assert (
        "estimated start never, waiting for the scheduler: never fits: asks 32 nvidia.com/gpu "
        "in pods of 16; the largest node has 8" in described
    ), described
    # Its events do not estimate it again and again: nothing is written while it waits.
    settled(
        jobs,
        "huge",
        "its start estimate",
        lambda j: estimate_of(jobs, "huge"),
        operator=operator,
        quiet=5,
    )


def test_under_the_default_scheduler_a_waiting_job_waits_for_the_running_jobs_eta(
    free_gpus: None,
    start_operator: Callable[..., OperatorProcess],
    admin: KubeClient,
    namespace: str,
    kubelet: Kubelet,
) -> None:
    port, flags = reporting()
    operator = start_operator(*flags)
    operator.wait_ready()
    jobs = Jobs(admin, namespace)

    def gpus(name: str, workers: int) -> dict[str, Any]:
        body = pytorch_job(name, [("worker", workers, "Never")])
        template = body["spec"]["replicaSpecs"][0]["template"]["spec"]
        template["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
        return body

    # The holder takes every GPU of the four 8-GPU nodes, and reports an ETA.
    jobs.create(gpus("holder", 4))
    wait_for(lambda: bound(jobs, "holder") == 4, 60, "holder's pods bound")
    ends = run_with_eta(admin, kubelet, jobs, "holder", port, 3100)

    jobs.create(gpus("waiting", 1))
    estimate = wait_for(lambda: with_time(jobs, "waiting"), 60, "waiting's start estimate")
    nodes = sorted(n["metadata"]["name"] for n in admin.list(NODES)["items"])
    assert estimate["where"] == "scheduler"
    assert estimate["lacking"] == [
        {"resource": "nvidia.com/gpu", "requested": "8", "pods": 1, "free": "0", "nodes": nodes}
    ]
    assert [h["name"] for h in estimate["waitingFor"]] == [f"{namespace}/holder"]
    start = parse_time(estimate["estimatedStartTime"])
    assert start is not None and abs((start - ends).total_seconds()) <= 90, (start, ends)
    finish(kubelet, jobs, "holder")
    wait_for(lambda: bound(jobs, "waiting") == 1, 60, "waiting placed once holder ended")


@pytest.mark.usefixtures("volcano", "priority_classes")
def test_under_a_gang_scheduler_a_waiting_gang_waits_for_the_running_jobs_eta(
    free_gpus: None,
    start_operator: Callable[..., OperatorProcess],
    admin: KubeClient,
    namespace: str,
    kubelet: Kubelet,
) -> None:
    port, flags = reporting("--gang-scheduler=volcano")
    operator = start_operator(*flags)
    operator.wait_ready()
    jobs = Jobs(admin, namespace, kind_resource(KIND))
    # holder takes 24 of the 32 GPUs; a gang of three 8-GPU pods then waits.
    jobs.create(gpu_job(KIND, "holder", manual=True))
    wait_for(lambda: bound(jobs, "holder") == 3, 60, "holder's gang bound")
    ends = run_with_eta(admin, kubelet, jobs, "holder", port, 4100)
    jobs.create(gpu_job(KIND, "gang", manual=True))
    estimate = wait_for(lambda: with_time(jobs, "gang"), 60, "gang's start estimate")
    assert estimate["where"] == "gang"
    [lack] = estimate["lacking"]
    assert (lack["resource"], lack["requested"], lack["pods"], lack["free"]) == (
        "nvidia.com/gpu",
        "8",
        3,
        "8",
    )
    assert [h["name"] for h in estimate["waitingFor"]] == [f"{namespace}/holder"]
    start = parse_time(estimate["estimatedStartTime"])
    assert start is not None and abs((start - ends).total_seconds()) <= 90, (start, ends)
    finish(kubelet, jobs, "holder")
    wait_for(lambda: bound(jobs, "gang") == 3, 60, "the gang placed once holder ended")
