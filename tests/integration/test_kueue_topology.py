"""Topology-aware placement with the real Kueue manager (v0.17, its TAS on by
default): a job whose replica template requires a rack lands in one rack; one
that no rack can hold waits, and its Running condition, ``t9k describe`` and
start estimate say why in Kueue's words.

The cluster gets eight more KWOK nodes for the test, labelled into 2 blocks x 2
racks x 2 hosts, each of 8 GPUs, tainted so that no other pod lands on them,
and a Topology of those levels; a ResourceFlavor with that topology selects
them (and tolerates the taint), and the test's ClusterQueue has quota for all
64 of their GPUs, so what holds a job back is its placement, never its quota.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from t9k_operator.kube import KubeClient, Resource
from t9k_operator.resources import NODES
from tests.integration.cluster import Cluster, delete_quietly, wait_for
from tests.integration.jobs import Jobs
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.integration.test_gang_jobs import engine_condition
from tests.integration.test_kueue_jobs import FLAVORS, KUEUE, KUEUE_VERSION, make_queue
from tests.integration.test_kueue_jobs import kueue_ready as kueue_ready  # the fixture
from tests.integration.test_start_estimate import t9k
from tests.kinds import kind_resource

pytestmark = pytest.mark.xdist_group("add-ons")

TOPOLOGIES = Resource(KUEUE, KUEUE_VERSION, "topologies", "Topology", namespaced=False)
BLOCK, RACK, HOST = "t9k.test/block", "t9k.test/rack", "kubernetes.io/hostname"
POOL = "t9k.test/pool"
TAINT = {"key": "t9k.test/topology", "value": "only", "effect": "NoSchedule"}
NAME = "t9k-test-racks"
GPU = "nvidia.com/gpu"
KIND = "PyTorchTrainingJob"


def _node(block: int, rack: int, host: int) -> dict[str, Any]:
    name = f"tas-b{block}-r{rack}-h{host}"
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                HOST: name,
                BLOCK: f"b{block}",
                RACK: f"b{block}-r{rack}",
                POOL: NAME,
                "type": "kwok",
            },
        },
        "spec": {"taints": [TAINT]},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


NODE_NAMES = [f"tas-b{b}-r{r}-h{h}" for b in (0, 1) for r in (0, 1) for h in (0, 1)]


@pytest.fixture
def racks(kueue_ready: None, admin: KubeClient) -> Iterator[str]:
    """The eight nodes, the Topology, the flavor; yields the flavor's name."""
    for b in (0, 1):
        for r in (0, 1):
            for h in (0, 1):
                admin.create(NODES, _node(b, r, h))
    admin.create(
        TOPOLOGIES,
        {
            "apiVersion": f"{KUEUE}/{KUEUE_VERSION}",
            "kind": "Topology",
            "metadata": {"name": NAME},
            "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
    )
    admin.create(
        FLAVORS,
        {
            "apiVersion": f"{KUEUE}/{KUEUE_VERSION}",
            "kind": "ResourceFlavor",
            "metadata": {"name": NAME},
            "spec": {
                "nodeLabels": {POOL: NAME},
                "tolerations": [{**TAINT, "operator": "Equal"}],
                "topologyName": NAME,
            },
        },
    )

    def ready() -> bool:
        nodes = [admin.get(NODES, n) for n in NODE_NAMES]
        return all(
            any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
            for n in nodes
            if n.get("status", {}).get("conditions")
        ) and all(n.get("status", {}).get("conditions") for n in nodes)

    wait_for(ready, 60, "the eight topology nodes Ready")
    yield NAME
    delete_quietly(admin, FLAVORS, NAME, None)
    delete_quietly(admin, TOPOLOGIES, NAME, None)
    for node in NODE_NAMES:
        delete_quietly(admin, NODES, node, None)


@pytest.fixture
def rack_queue(racks: str, admin: KubeClient, namespace: str) -> Iterator[str]:
    """A ClusterQueue of the topology flavor, quota for all 64 GPUs; LocalQueue ``team``."""
    yield from make_queue(admin, namespace, flavor=racks, gpus=64)


def rack_job(name: str, queue: str, gpus: int, workers: int = 4) -> dict[str, Any]:
    """A PyTorchTrainingJob of ``workers`` pods of ``gpus`` GPUs that must share one rack."""
    resources = {"limits": {GPU: str(gpus)}, "requests": {GPU: str(gpus)}}
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {
            "scheduler": {"t9kScheduler": {"queue": queue}},
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": workers,
                    "template": {
                        "metadata": {
                            "annotations": {
                                **MANUAL,
                                "kueue.x-k8s.io/podset-required-topology": RACK,
                            }
                        },
                        "spec": {
                            "containers": [
                                {"name": "pytorch", "image": "img", "resources": resources}
                            ]
                        },
                    },
                }
            ],
        },
    }


@pytest.fixture
def operator(kueue_ready: None, start_operator: Callable[..., OperatorProcess]) -> OperatorProcess:
    proc = start_operator("--kueue", "--start-estimate-period=5")
    proc.wait_ready()
    return proc


def racks_of(admin: KubeClient, jobs: Jobs, name: str) -> set[str]:
    """The racks of the nodes the job's pods were bound to."""
    out = set()
    for pod in jobs.pods(name).values():
        node = pod["spec"].get("nodeName")
        if node:
            out.add(admin.get(NODES, node)["metadata"]["labels"][RACK])
    return out


@pytest.mark.usefixtures("operator")
def test_a_job_that_requires_a_rack_lands_in_one_and_one_no_rack_holds_waits_saying_why(
    rack_queue: str, admin: KubeClient, namespace: str, cluster: Cluster, kubelet: Kubelet
) -> None:
    jobs = Jobs(admin, namespace, kind_resource(KIND))
    # 4 pods of 4 GPUs: 16, what one rack (two nodes of 8) holds.
    jobs.create(rack_job("fits", rack_queue, gpus=4))
    wait_for(
        lambda: sum(1 for p in jobs.pods("fits").values() if p["spec"].get("nodeName")) == 4,
        90,
        "fits's four pods bound",
    )
    pods = jobs.pods("fits").values()
    assert len(racks_of(admin, jobs, "fits")) == 1, [p["spec"]["nodeName"] for p in pods]
    for pod in pods:
        assert not pod["spec"].get("schedulingGates"), "Kueue's ungater took its gate off"
        # The ungater writes the lowest level of the pod's domain into its node selector.
        assert pod["spec"]["nodeSelector"][HOST] == pod["spec"]["nodeName"], pod["spec"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"

    # 4 pods of 8 GPUs: 32, more than a rack has (a block would hold them).
    jobs.create(rack_job("too-wide", rack_queue, gpus=8))

    def waiting() -> dict[str, Any] | None:
        c = engine_condition(jobs, "too-wide", "Running")
        return c if c and "topology" in (c.get("message") or "") else None

    condition = wait_for(waiting, 60, "too-wide waiting with Kueue's word on topology")
    assert condition["reason"] == "WaitingForAdmission", condition
    kueues = jobs.status("too-wide")["workload"]["message"]
    assert "topology" in kueues and kueues in condition["message"], (kueues, condition)
    assert jobs.pods("too-wide") == {}

    estimate = wait_for(
        lambda: (e := jobs.status("too-wide").get("startEstimate")) and e.get("message") and e,
        60,
        "too-wide's start estimate with Kueue's message",
    )
    assert kueues in estimate["message"], estimate
    described = t9k(cluster, namespace, "describe", "too-wide")
    assert kueues in described, described

    # Settled: the first running in one rack, the second still without pods.
    for pod_name in jobs.pods("fits"):
        kubelet.run(namespace, pod_name)
    wait_for(lambda: jobs.status("fits").get("phase") == "Running", 30, "fits Running")
    assert len(racks_of(admin, jobs, "fits")) == 1
    assert jobs.pods("too-wide") == {}
