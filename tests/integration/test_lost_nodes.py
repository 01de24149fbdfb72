"""Lost nodes: a node whose kubelet stops reporting.

The node here has a kubelet of its own: a second KWOK process that manages
only it (annotation ``kwok.x-k8s.io/node=lossy``). The test freezes that
process (SIGSTOP), as a machine that hangs or drops off the network stops
renewing its lease, and everything after that is Kubernetes' own:
kube-controller-manager's node lifecycle controller marks the node not ready
once the lease is older than its grace period (20 s in the test cluster) and
taints it ``node.kubernetes.io/unreachable``, the taint-eviction controller
deletes the pods whose toleration of that taint runs out (writing their
``DisruptionTarget`` condition), and PodGC force-deletes the pods that are
stuck terminating on a node tainted ``node.kubernetes.io/out-of-service``.
Resuming the process (SIGCONT) is the node coming back.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import NODES, PODS
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.operator_process import free_port

pytestmark = pytest.mark.usefixtures("operator")

STAGES = os.path.join(
    os.path.dirname(__file__), "..", "..", "hack", "third_party", "kwok", "stages.yaml"
)
LOSSY = {"key": "t9k.test/lossy", "value": "true", "effect": "NoSchedule"}
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown"}


class LossyNode:
    """A node with a kubelet (KWOK) of its own, which the test can freeze."""

    def __init__(self, name: str, process: subprocess.Popen[bytes]) -> None:
        self.name, self.process = name, process

    def stop_reporting(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def come_back(self) -> None:
        self.process.send_signal(signal.SIGCONT)


def _ready(admin: KubeClient, name: str) -> bool:
    """Ready, and without the not-ready taint the node lifecycle controller
    lifts a moment later: until then the scheduler places nothing there."""
    node = admin.get(NODES, name)
    conditions = (node.get("status") or {}).get("conditions") or []
    taints = [t["key"] for t in node["spec"].get("taints") or []]
    return taints == [LOSSY["key"]] and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


@pytest.fixture
def lossy_node(cluster: Cluster, admin: KubeClient, namespace: str) -> Iterator[LossyNode]:
    name = f"kwok-lossy-{namespace[-5:]}"
    workdir = cluster.kubeconfig.parent
    log = open(workdir / f"{name}.log", "wb")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [
            str(cluster.bin_dir / "kwok"),
            f"--kubeconfig={workdir / 'kwok.kubeconfig'}",
            f"--config={STAGES}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=lossy",
            "--node-lease-duration-seconds=20",
            "--cidr=10.250.0.0/16",
            f"--server-address=127.0.0.1:{free_port()}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    node = LossyNode(name, process)
    try:
        admin.create(
            NODES,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {"kwok.x-k8s.io/node": "lossy"},
                    "labels": {"kubernetes.io/hostname": name, "type": "kwok"},
                },
                "spec": {"taints": [LOSSY]},  # only this test's pods go there
                "status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "10"}},
            },
        )
        wait_for(lambda: _ready(admin, name), 30, f"node {name} ready")
        yield node
    finally:
        node.come_back()
        with contextlib.suppress(NotFound):
            admin.delete(NODES, name)
        process.terminate()
        process.wait(10)
        log.close()


def job_with_a_worker_on(
    node: str, name: str, unreachable_for: int | None = None
) -> dict[str, Any]:
    """A job whose master runs on the ordinary nodes and whose worker prefers
    ``node`` (and tolerates its taint); ``unreachable_for``: the seconds the
    worker tolerates an unreachable node (Kubernetes' default: 300)."""
    body = pytorch_job(
        name,
        [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "600s"},
    )
    worker = body["spec"]["replicaSpecs"][1]["template"]["spec"]
    worker["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                        ]
                    },
                }
            ]
        }
    }
    worker["tolerations"] = [{**LOSSY, "operator": "Equal"}]
    if unreachable_for is not None:
        worker["tolerations"].append(
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": unreachable_for,
            }
        )
    return body


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions") or [] if c["type"] == type_)


def test_a_job_is_unknown_while_its_replicas_node_is_lost_and_running_when_it_is_back(
    admin: KubeClient, namespace: str, lossy_node: LossyNode
) -> None:
    jobs = Jobs(admin, namespace)
    jobs.create(job_with_a_worker_on(lossy_node.name, "nl"))
    jobs.wait_phase("nl", "Running", 60)
    worker = jobs.pods("nl")["nl-worker-0"]
    assert worker["spec"]["nodeName"] == lossy_node.name
    lossy_node.stop_reporting()
    status = jobs.wait_phase("nl", "Unknown", 60)
    failure = _condition(status, "ReplicaFailure")
    assert (failure["status"], failure["reason"]) == ("True", "NodeNotReady")
    assert failure["message"].startswith(f"Node {lossy_node.name} is not ready (NodeStatusUnknown")
    assert failure["message"].endswith(": pod nl-worker-0")
    assert _condition(status, "Running")["status"] == "True", "what it last knew"
    replicas = {r["name"]: r["phase"] for t in status["tasks"] for r in t["replicas"]}
    assert replicas == {"nl-master-0": "Running", "nl-worker-0": "Unknown"}
    _, _, message = jobs.wait_event("nl", "NodeNotReady")
    assert message == failure["message"]
    lossy_node.come_back()
    status = jobs.wait_phase("nl", "Running", 60)
    assert _condition(status, "ReplicaFailure")["status"] == "False"
    assert jobs.pods("nl")["nl-worker-0"]["metadata"]["uid"] == worker["metadata"]["uid"]
    assert (status["restartCount"], status.get("disruptionCount", 0)) == (0, 0)
    jobs.wait_event("nl", "NodeReady")


def _eviction_state(admin: KubeClient, cluster: Cluster, node: str, namespace: str) -> str:
    """What a failed wait for the eviction reports: the node's taints and Ready
    condition, the worker's conditions, and what kube-controller-manager's node
    lifecycle and taint-eviction controllers last logged (their zone states,
    the pods they deleted)."""
    got = admin.get(NODES, node)
    ready = [c for c in got.get("status", {}).get("conditions") or [] if c["type"] == "Ready"]
    pod = admin.get(PODS, "ev-worker-0", namespace)
    log = (cluster.kubeconfig.parent / "kube-controller-manager.log").read_text(errors="replace")
    controllers = ("node-lifecycle-controller", "taint-eviction-controller")
    lines = [line for line in log.splitlines() if any(c in line for c in controllers)]
    return "\n".join(
        [
            f"node taints: {got['spec'].get('taints')}",
            f"node Ready: {ready}",
            f"pod deletionTimestamp: {pod['metadata'].get('deletionTimestamp')}",
            f"pod conditions: {pod.get('status', {}).get('conditions')}",
            "kube-controller-manager:",
            *lines[-25:],
        ]
    )


def test_a_replica_evicted_from_a_lost_node_is_replaced_once_kubernetes_lets_its_pod_go(
    admin: KubeClient, namespace: str, lossy_node: LossyNode, cluster: Cluster
) -> None:
    """The taint manager evicts the pod, which no kubelet is there to stop: it
    keeps its name (the operator runs no second copy of the replica) until the
    administrator marks the node out of service and PodGC removes it."""
    jobs = Jobs(admin, namespace)
    jobs.create(job_with_a_worker_on(lossy_node.name, "ev", unreachable_for=2))
    jobs.wait_phase("ev", "Running", 60)
    old = jobs.pods("ev")["ev-worker-0"]
    assert old["spec"]["nodeName"] == lossy_node.name
    lossy_node.stop_reporting()
    jobs.wait_phase("ev", "Unknown", 60)
    # Node grace, taint and eviction: past a minute on a busy machine.
    try:
        _, _, message = jobs.wait_event("ev", "Disrupted", 120)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\n{_eviction_state(admin, cluster, lossy_node.name, namespace)}"
        ) from None
    assert "(DeletionByTaintManager" in message, message
    stuck = admin.get(PODS, "ev-worker-0", namespace)
    assert stuck["metadata"]["uid"] == old["metadata"]["uid"]
    assert stuck["metadata"].get("deletionTimestamp"), "terminating, on a node nobody answers for"
    assert jobs.status("ev")["phase"] == "Unknown"
    taint = {**OUT_OF_SERVICE, "effect": "NoExecute"}
    node = admin.get(NODES, lossy_node.name)
    node["spec"]["taints"] = [*(node["spec"].get("taints") or []), taint]
    admin.replace(NODES, node)
    new = jobs.wait_new_pod("ev", "ev-worker-0", old["metadata"]["uid"], 60)
    assert new["spec"].get("nodeName") != lossy_node.name
    status = jobs.wait_phase("ev", "Running", 60)
    assert (status["restartCount"], status["disruptionCount"]) == (0, 1)
    (record,) = status["restarts"]
    assert (record["replica"], record["reason"], record["counted"]) == (
        "ev-worker-0",
        "DeletionByTaintManager",
        False,
    )
    assert record["node"] == lossy_node.name
