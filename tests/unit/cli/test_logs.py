"""Which log ``t9k logs`` reads (sdk/logs.py): by default the replica whose
outcome decides the job, by its kind's ``deciding_replica``; in each pod, the
training container by its kind's ``training_containers``."""

from __future__ import annotations

from typing import Any

from t9k_operator.builders.common import NORMAL
from t9k_operator.kinds.registry import job_kind_of
from t9k_operator.sdk.logs import leader, training_container

META = {"namespace": "team-a", "uid": "u-1"}


def container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "img:1", "command": ["python", "train.py"]}


def pods_of(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod the kind's builders build for the job."""
    kind = job_kind_of(job)
    parsed = kind.model.from_dict(job)
    services = {
        svc["metadata"]["name"]: {**svc, "spec": {**svc.get("spec", {}), "clusterIP": "10.0.0.1"}}
        for svc in kind.extras(parsed)
    }
    return [
        kind.build_pod(parsed, role.type, i, NORMAL, services)
        for role in kind.view(parsed).roles
        for i in range(role.replicas)
    ]


def pytorch(*types: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": "pt", **META},
        "spec": {
            "replicaSpecs": [
                {
                    "type": t,
                    "replicas": 1 if t == "master" else 2,
                    "template": {"spec": {"containers": [container("pytorch")]}},
                }
                for t in types
            ]
        },
    }


def msjob(*containers: str) -> dict[str, Any]:
    template = {"spec": {"containers": [container(c) for c in containers]}}
    return {
        "apiVersion": "mindspore.gitee.com/v1",
        "kind": "MSJob",
        "metadata": {"name": "ms", **META},
        "spec": {
            "msReplicaSpecs": {
                "Scheduler": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template},
            }
        },
    }


def test_the_default_log_is_the_deciding_replicas() -> None:
    # A PyTorchTrainingJob without a master: rank 0 is replica 0 of the first
    # type, which decides the job (not a worker because of its name).
    job = pytorch("chief", "worker")
    assert leader(job, pods_of(job)) == "chief-0"
    job = pytorch("worker", "master")
    assert leader(job, pods_of(job)) == "master-0"
    job = msjob("mindspore")  # Worker 0 decides an MSJob, not its Scheduler
    assert leader(job, pods_of(job)) == "worker-0"
    # Without the deciding replica's pod, the first by name.
    assert leader(job, [p for p in pods_of(job) if p["metadata"]["name"] != "ms-worker-0"]) == (
        "scheduler-0"
    )


def test_the_training_container_is_the_one_the_pods_kind_names() -> None:
    # An MSJob trains in "mindspore", whatever else the pod runs first.
    job = msjob("python", "mindspore")
    assert {training_container(p) for p in pods_of(job)} == {"mindspore"}
    # A PyTorchTrainingJob's is "pytorch", else "python", else the first.
    job = pytorch("worker")
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"] = [
        container("worker"),
        container("python"),
    ]
    assert {training_container(p) for p in pods_of(job)} == {"python"}
    assert training_container({"metadata": {}, "spec": {"containers": [container("a")]}}) == "a"
    assert training_container({"metadata": {}, "spec": {}}) is None
