"""Queueing and quota with the real Kueue manager (built from the Go module
proxy and run beside the control plane by hack/cluster), for every kind.

Each test gets its own ClusterQueue of 24 GPUs (the cluster has 32), a
LocalQueue ``team`` in its namespace, and an operator running with
``--kueue``. A job of 3 pods of 8 GPUs fills the quota, so two such jobs
exceed it: one runs, the other waits for admission without pods.

What Kueue does with a Workload does not depend on the kind (the kinds'
Workloads are unit-tested): the quota scenario runs every kind, the others
one kind each, the next in turn, so that together they meet every kind.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from t9k_operator.builders import scheduling
from t9k_operator.cli import main as t9k_main
from t9k_operator.integrations.gang import build as gang
from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.resources import WORKLOADS
from tests.integration.cluster import ROOT, Cluster, delete_quietly, wait_for
from tests.integration.jobs import Jobs, finish, settled
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_gang_jobs import bound, engine_condition, gpu_job
from tests.integration.test_gang_schedulers import gpus_in_use
from tests.integration.test_graceful_deletion import (
    STOP,
    hold,
    killed_by_sigterm,
    release,
    wait_terminating,
)
from tests.kinds import KIND_NAMES, in_turn, kind_resource, spec_fields

# Run on one pytest-xdist worker, so that only its cluster starts the gang
# schedulers and Kueue (session fixtures), once.
pytestmark = pytest.mark.xdist_group("add-ons")

KUEUE = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"  # the operator's (t9k_operator/integrations/kueue/build.py)


def one_kind(offset: int) -> list[str]:
    """The kind a Kueue scenario runs with: the next in turn (tests/kinds/ ``in_turn``)."""
    return [kind for kind, _ in in_turn(["kueue"], offset)]


FLAVORS = Resource(KUEUE, KUEUE_VERSION, "resourceflavors", "ResourceFlavor", namespaced=False)
CLUSTER_QUEUES = Resource(KUEUE, KUEUE_VERSION, "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUES = Resource(KUEUE, KUEUE_VERSION, "localqueues", "LocalQueue")
QUOTA_GPUS = 24


@pytest.fixture(scope="session")
def kueue_ready(kueue: Any, cluster: Cluster, admin: KubeClient) -> None:
    """Kueue running, its flavor and the T9k WorkloadPriorityClasses installed."""
    cluster.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "kueue"))
    cluster.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "scheduling"))
    try:
        admin.get(FLAVORS, "default-flavor")
    except NotFound:
        admin.create(
            FLAVORS,
            {
                "apiVersion": f"{KUEUE}/{KUEUE_VERSION}",
                "kind": "ResourceFlavor",
                "metadata": {"name": "default-flavor"},
            },
        )


def cluster_queue_body(
    name: str, preemption: str, flavor: str = "default-flavor", gpus: int = QUOTA_GPUS
) -> dict[str, Any]:
    quota = [
        {"name": "cpu", "nominalQuota": "1000"},
        {"name": "memory", "nominalQuota": "10000Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)},
    ]
    return {
        "apiVersion": f"{KUEUE}/{KUEUE_VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "StrictFIFO",
            "preemption": {"withinClusterQueue": preemption},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [{"name": flavor, "resources": quota}],
                }
            ],
        },
    }


def make_queue(
    admin: KubeClient,
    namespace: str,
    preemption: str = "Never",
    flavor: str = "default-flavor",
    gpus: int = QUOTA_GPUS,
) -> Iterator[str]:
    """A ClusterQueue of its own for the test (``gpus`` of ``flavor``) and the
    LocalQueue ``team`` in it."""
    name = f"cq-{namespace}"[:63]
    admin.create(CLUSTER_QUEUES, cluster_queue_body(name, preemption, flavor, gpus))
    admin.create(
        LOCAL_QUEUES,
        {
            "apiVersion": f"{KUEUE}/{KUEUE_VERSION}",
            "kind": "LocalQueue",
            "metadata": {"name": "team"},
            "spec": {"clusterQueue": name},
        },
        namespace,
    )
    yield "team"
    delete_quietly(admin, LOCAL_QUEUES, "team", namespace)
    delete_quietly(admin, CLUSTER_QUEUES, name, None)


@pytest.fixture
def queue(kueue_ready: None, admin: KubeClient, namespace: str) -> Iterator[str]:
    yield from make_queue(admin, namespace)


@pytest.fixture
def preempting_queue(kueue_ready: None, admin: KubeClient, namespace: str) -> Iterator[str]:
    yield from make_queue(admin, namespace, preemption="LowerPriority")


@pytest.fixture
def kueue_operator(
    kueue_ready: None, start_operator: Callable[..., OperatorProcess], admin: KubeClient
) -> OperatorProcess:
    # Every test counts on the cluster's 32 GPUs: wait until an earlier test's pods are gone.
    wait_for(lambda: gpus_in_use(admin) == 0, 120, "the GPUs of earlier tests freed")
    proc = start_operator("--kueue")
    proc.wait_ready()
    return proc


@pytest.fixture
def jobs_of(admin: KubeClient, namespace: str) -> Callable[[str], Jobs]:
    return lambda kind: Jobs(admin, namespace, kind_resource(kind))


def pods_of(jobs: Jobs, name: str) -> int:
    return len(jobs.pods(name))


def waiting_for_admission(jobs: Jobs, name: str) -> dict[str, Any] | None:
    c = engine_condition(jobs, name, "Running")
    return c if c and c.get("reason") == "WaitingForAdmission" else None


def workloads(jobs: Jobs) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = jobs.client.list(WORKLOADS, jobs.namespace)["items"]
    return items


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.usefixtures("kueue_operator")
def test_two_jobs_over_the_quota_run_one_after_the_other(
    kind: str, queue: str, jobs_of: Callable[[str], Jobs], kubelet: Kubelet, cluster: Cluster
) -> None:
    jobs = jobs_of(kind)
    jobs.create(gpu_job(kind, "job-a", manual=True, queue=queue))
    wait_for(lambda: bound(jobs, "job-a") == 3, 60, "job-a admitted and bound")
    jobs.create(gpu_job(kind, "job-b", manual=True, queue=queue))
    waiting = wait_for(
        lambda: (
            (c := waiting_for_admission(jobs, "job-b"))
            and "insufficient unused quota" in c["message"]
            and c
        ),
        30,
        "job-b waiting, with Kueue's reason",
    )
    assert "job-b" in waiting["message"] and queue in waiting["message"]
    status = jobs.status("job-b")
    assert status["phase"] == "Pending" and pods_of(jobs, "job-b") == 0
    assert status["workload"]["queue"] == queue and status["workload"]["admitted"] is False
    assert "WaitingForAdmission" in [reason for _, reason, _ in jobs.events("job-b")]
    # `t9k describe` shows the Workload as Kueue reports it.
    out = io.StringIO()
    argv = ["--kubeconfig", str(cluster.kubeconfig), "-n", jobs.namespace, "describe"]
    with contextlib.redirect_stdout(out):
        assert t9k_main([*argv, f"{jobs.resource.plural}/job-b"]) == 0, out.getvalue()
    line = next(x for x in out.getvalue().splitlines() if x.strip().startswith("Workload "))
    assert f"in {queue}: not admitted" in line and "insufficient unused quota" in line, line
    # job-a does its work and ends; only then is its quota returned and job-b admitted.
    finish(kubelet, jobs, "job-a")
    jobs.wait_phase("job-a", "Succeeded", 30)
    wait_for(lambda: bound(jobs, "job-b") == 3, 60, "job-b admitted once job-a ended")
    assert jobs.status("job-b")["workload"]["admitted"] is True
    finish(kubelet, jobs, "job-b")
    jobs.wait_phase("job-b", "Succeeded", 30)
    wait_for(lambda: workloads(jobs) == [], 30, "the finished jobs' Workloads deleted")


@pytest.mark.parametrize("kind", one_kind(1))
@pytest.mark.usefixtures("kueue_operator")
def test_the_higher_priority_is_admitted_first(
    kind: str, queue: str, jobs_of: Callable[[str], Jobs], kubelet: Kubelet
) -> None:
    jobs = jobs_of(kind)
    jobs.create(gpu_job(kind, "blocker", manual=True, queue=queue))
    wait_for(lambda: bound(jobs, "blocker") == 3, 60, "the blocker admitted")
    jobs.create(gpu_job(kind, "low", manual=True, queue=queue, priority=10))
    wait_for(lambda: waiting_for_admission(jobs, "low"), 30, "low waiting")
    jobs.create(gpu_job(kind, "high", manual=True, queue=queue, priority=90))
    wait_for(lambda: waiting_for_admission(jobs, "high"), 30, "high waiting")
    by_name = wait_for(
        lambda: (
            (w := {w["metadata"]["ownerReferences"][0]["name"]: w for w in workloads(jobs)})
            and "high" in w
            and w
        ),
        30,
        "high's Workload",
    )
    assert by_name["high"]["spec"]["priority"] == 90
    assert by_name["high"]["spec"]["priorityClassRef"] == {
        "group": KUEUE,
        "kind": "WorkloadPriorityClass",
        "name": scheduling.priority_class(90),
    }
    finish(kubelet, jobs, "blocker")
    first = wait_for(
        lambda: next((n for n in ("high", "low") if pods_of(jobs, n)), None),
        60,
        "a waiting job admitted",
    )
    assert first == "high" and pods_of(jobs, "low") == 0
    wait_for(lambda: bound(jobs, "high") == 3, 60, "high bound")
    finish(kubelet, jobs, "high")
    wait_for(lambda: bound(jobs, "low") == 3, 60, "low admitted once high ended")
    finish(kubelet, jobs, "low")
    jobs.wait_phase("low", "Succeeded", 30)


@pytest.mark.parametrize("kind", one_kind(2))
@pytest.mark.usefixtures("kueue_operator")
def test_pausing_and_deleting_a_job_give_its_quota_back(
    kind: str, queue: str, jobs_of: Callable[[str], Jobs]
) -> None:
    jobs = jobs_of(kind)
    jobs.create(gpu_job(kind, "first", run="600s", queue=queue))
    wait_for(lambda: bound(jobs, "first") == 3, 60, "first admitted")
    jobs.create(gpu_job(kind, "second", run="600s", queue=queue))
    wait_for(lambda: waiting_for_admission(jobs, "second"), 30, "second waiting")
    if "runMode" not in spec_fields(kind):  # no pause in its API (MSJob's): deletion only
        jobs.client.delete(jobs.resource, "first", jobs.namespace)
        wait_for(lambda: bound(jobs, "second") == 3, 60, "second admitted once first deleted")
        return
    jobs.patch_spec("first", {"runMode": {"pause": {"enabled": True}}})
    wait_for(lambda: bound(jobs, "second") == 3, 60, "second admitted once first paused")
    assert jobs.status("first")["phase"] == "Paused"
    jobs.patch_spec("first", {"runMode": {"pause": {"enabled": False}}})
    wait_for(lambda: waiting_for_admission(jobs, "first"), 30, "first waiting again")
    jobs.client.delete(jobs.resource, "second", jobs.namespace)
    wait_for(lambda: bound(jobs, "first") == 3, 60, "first admitted once second deleted")


@pytest.mark.parametrize("kind", one_kind(3))
@pytest.mark.usefixtures("kueue_operator")
def test_a_preempted_job_stops_resumes_and_finishes(
    kind: str, preempting_queue: str, jobs_of: Callable[[str], Jobs], kubelet: Kubelet
) -> None:
    jobs = jobs_of(kind)
    jobs.create(gpu_job(kind, "low", manual=True, queue=preempting_queue, priority=10))
    wait_for(lambda: bound(jobs, "low") == 3, 60, "low admitted")
    for name in jobs.pods("low"):
        kubelet.run(jobs.namespace, name)
    wait_for(lambda: jobs.status("low").get("phase") == "Running", 30, "low running")
    jobs.create(gpu_job(kind, "high", manual=True, queue=preempting_queue, priority=90))
    evicted = wait_for(
        lambda: (
            (c := engine_condition(jobs, "low", "Running"))
            and c.get("reason") == "EvictedByKueue"
            and c
        ),
        60,
        "low evicted by Kueue",
    )
    assert "Preempted" in evicted["message"]
    wait_for(lambda: bound(jobs, "high") == 3, 60, "high admitted and bound")
    status = jobs.status("low")
    assert status["phase"] == "Pending" and status["restartCount"] == 0
    assert pods_of(jobs, "low") == 0 or all(
        p["metadata"].get("deletionTimestamp") for p in jobs.pods("low").values()
    )
    finish(kubelet, jobs, "high")
    jobs.wait_phase("high", "Succeeded", 30)
    # low is admitted again once high's quota is back, with new pods.
    wait_for(
        lambda: (
            bound(jobs, "low") == 3
            and not any(p["metadata"].get("deletionTimestamp") for p in jobs.pods("low").values())
        ),
        60,
        "low admitted again",
    )
    finish(kubelet, jobs, "low")
    jobs.wait_phase("low", "Succeeded", 30)
    assert jobs.status("low")["restartCount"] == 0, "an eviction is not a failure"


def test_pods_killed_by_sigterm_in_a_preemption_are_not_charged(
    preempting_queue: str,
    jobs_of: Callable[[str], Jobs],
    kubelet: Kubelet,
    kueue_operator: OperatorProcess,
) -> None:
    """Kueue's preemption deletes the low job's pods, whose training exits 143 on
    the SIGTERM while they are Terminating, each held there by the test (as a
    slow kubelet would) until the job has settled: an eviction, not a failure."""
    jobs = jobs_of("PyTorchTrainingJob")
    body = gpu_job("PyTorchTrainingJob", "low", manual=True, queue=preempting_queue, priority=10)
    (rs,) = body["spec"]["replicaSpecs"]
    rs["restartPolicy"] = "OnFailure"  # a 143 charged would be a restart
    rs["template"]["metadata"]["annotations"].update(STOP)
    jobs.create(body)
    wait_for(lambda: bound(jobs, "low") == 3, 60, "low admitted")
    for name in jobs.pods("low"):
        kubelet.run(jobs.namespace, name)
    jobs.wait_phase("low", "Running", 30)
    hold(jobs, "low")
    try:
        high = gpu_job(
            "PyTorchTrainingJob", "high", manual=True, queue=preempting_queue, priority=90, pods=1
        )
        jobs.create(high)
        wait_terminating(jobs, "low")
        assert len(killed_by_sigterm(kubelet, jobs, "low")) == 3

        def unharmed(status: dict[str, Any]) -> None:
            assert status["restartCount"] == 0, status
            assert not [r for r in status.get("restarts") or [] if r["counted"]], status
            assert "Restarting" not in [reason for _, reason, _ in jobs.events("low")]
            assert (engine_condition(jobs, "low", "Failed") or {}).get("status") != "True", status

        evicted = settled(
            jobs,
            "low",
            "evicted by Kueue",
            lambda _: (
                (engine_condition(jobs, "low", "Running") or {}).get("reason") == "EvictedByKueue"
            ),
            operator=kueue_operator,
        )["status"]
        assert evicted["phase"] == "Pending", evicted
        unharmed(evicted)
        # Kueue takes the quota back only once the pods are gone.
    finally:
        release(jobs, "low")
    wait_for(lambda: bound(jobs, "high") == 1, 60, "high admitted and bound")
    finish(kubelet, jobs, "high")
    jobs.wait_phase("high", "Succeeded", 30)
    wait_for(lambda: bound(jobs, "low") == 3, 60, "low admitted again, with new pods")
    finish(kubelet, jobs, "low")
    done = settled(jobs, "low", "phase Succeeded", lambda j: j["status"]["phase"] == "Succeeded")
    unharmed(done["status"])


@pytest.mark.usefixtures("volcano")
def test_kueue_admits_and_volcano_places_the_whole_gang(
    queue: str,
    jobs_of: Callable[[str], Jobs],
    kueue_ready: None,
    start_operator: Callable[..., OperatorProcess],
    admin: KubeClient,
    kubelet: Kubelet,
) -> None:
    wait_for(lambda: gpus_in_use(admin) == 0, 120, "the GPUs of earlier tests freed")
    start_operator("--kueue", "--gang-scheduler=volcano").wait_ready()
    kind = "PyTorchTrainingJob"
    jobs = jobs_of(kind)
    jobs.create(gpu_job(kind, "job-a", manual=True, queue=queue))
    jobs.create(gpu_job(kind, "job-b", manual=True, queue=queue))
    first = wait_for(
        lambda: (
            {bound(jobs, "job-a"), bound(jobs, "job-b")} == {0, 3}
            and ("job-a" if bound(jobs, "job-a") else "job-b")
        ),
        60,
        "one job admitted and placed whole",
    )
    second = "job-b" if first == "job-a" else "job-a"
    finish(kubelet, jobs, first)
    wait_for(lambda: bound(jobs, second) == 3, 60, f"{second} admitted and placed whole")
    for name in ("job-a", "job-b"):
        pods = jobs.pods(name)
        assert all(p["spec"]["schedulerName"] == "volcano" for p in pods.values())
    finish(kubelet, jobs, second)
    for name in ("job-a", "job-b"):
        jobs.wait_phase(name, "Succeeded", 30)
        assert jobs.status(name)["podGroup"]["queue"] == gang.DEFAULT_QUEUE
