"""XGBoostTrainingJob end to end on the local cluster, the operator as its
ServiceAccount: the pods and Service it creates, the master deciding the
outcome, a job without a master failing by name, the T9k status names."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.api import xgboost
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient
from t9k_operator.resources import SERVICES
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs
from tests.integration.kubelet import MANUAL, Kubelet

pytestmark = pytest.mark.usefixtures("operator")


def replica(type_: str, replicas: int, policy: str = "Never") -> dict[str, Any]:
    container = {"name": "xgboost", "image": "xgboost:2", "command": ["python3", "train.py"]}
    return {
        "type": type_,
        "replicas": replicas,
        "restartPolicy": policy,
        "template": {
            "metadata": {"annotations": dict(MANUAL)},
            "spec": {"containers": [container]},
        },
    }


def xgb(name: str, *replicas: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": xgboost.CRD.api_version,
        "kind": xgboost.KIND,
        "metadata": {"name": name},
        "spec": {"replicaSpecs": list(replicas)},
    }


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, resource_of(xgboost.CRD))


def env(pod: dict[str, Any]) -> dict[str, str]:
    """The training container's env but the progress reporting's (docs/progress.md)."""
    pairs = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert pairs.pop("T9K_PROGRESS_URL").endswith("/xgboosttrainingjobs/x/progress")
    return {k: v for k, v in pairs.items() if not k.startswith("T9K_PROGRESS_")}


def test_the_master_decides_and_every_replica_has_the_tracker_env(
    jobs: Jobs, kubelet: Kubelet, admin: KubeClient
) -> None:
    jobs.create(xgb("x", replica("master", 1), replica("worker", 2)))
    pods = jobs.wait_pods("x", ["x-master-0", "x-worker-0", "x-worker-1"])
    for name, rank in (("x-master-0", "0"), ("x-worker-0", "1"), ("x-worker-1", "2")):
        assert env(pods[name]) == {
            "MASTER_ADDR": "x-master-0.x",
            "MASTER_PORT": "9999",
            "WORLD_SIZE": "3",
            "RANK": rank,
            "WORKER_ADDRS": "x-worker-0.x,x-worker-1.x",
            "WORKER_PORT": "9999",
            "PYTHONUNBUFFERED": "1",
        }
    svc = admin.get(SERVICES, "x", jobs.namespace)
    assert svc["spec"]["clusterIP"] == "None"
    assert [p["port"] for p in svc["spec"]["ports"]] == [9999]
    for name in pods:
        kubelet.run(jobs.namespace, name)
    jobs.wait_phase("x", "Running")
    kubelet.succeed(jobs.namespace, "x-master-0")  # the workers still run
    status = jobs.wait_phase("x", "Succeeded")
    assert status["backoffCount"] == status["restartCount"] == 0


def test_a_failed_worker_fails_the_job_and_restarts_count_as_backoff(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    jobs.create(xgb("r", replica("master", 1), replica("worker", 1, "OnFailure")))
    pods = jobs.wait_pods("r", ["r-master-0", "r-worker-0"])
    for name in pods:
        kubelet.run(jobs.namespace, name)
    old = pods["r-worker-0"]["metadata"]["uid"]
    kubelet.fail(jobs.namespace, "r-worker-0", exit_code=1)
    jobs.wait_new_pod("r", "r-worker-0", old)
    wait_for(lambda: jobs.status("r").get("backoffCount") == 1, 20, "backoffCount 1")
    assert jobs.status("r")["restartCount"] == 1


def test_a_job_without_a_master_fails_naming_the_field(jobs: Jobs) -> None:
    jobs.create(xgb("nm", replica("worker", 2)))
    jobs.wait_phase("nm", "Failed")
    failed = jobs.condition("nm", "Failed")
    assert failed is not None and "spec.replicaSpecs has no master replica" in failed["message"]
    assert jobs.pods("nm") == {}
