"""XGBoostTrainingJob pods and Service, built from parsed jobs (pure), and what
``t9k create xgboost`` writes."""

from __future__ import annotations

from typing import Any

from t9k_operator.builders import xgboost as b
from t9k_operator.builders.common import PodMode
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.registry import by_kind

OWNER = {
    "apiVersion": "batch.tensorstack.dev/v1beta1",
    "kind": "XGBoostTrainingJob",
    "name": "xj",
    "uid": "u1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def job() -> b.Job:
    master = {"containers": [{"name": "xgboost", "image": "img", "command": ["python3", "t.py"]}]}
    worker = {
        "containers": [
            {"name": "side", "image": "s"},
            {
                "name": "xgboost",
                "image": "img",
                "ports": [{"name": "xgboostjob-port", "containerPort": 9000}],
            },
        ]
    }
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "XGBoostTrainingJob",
            "metadata": {"name": "xj", "namespace": "ns", "uid": "u1"},
            "spec": {
                "replicaSpecs": [
                    {"type": "master", "template": {"spec": master}},
                    {"type": "worker", "replicas": 2, "template": {"spec": worker}},
                ]
            },
        }
    )


def labels(type_: str, index: int) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "t9k-operator",
        "t9k.dev/job-name": "xj",
        "t9k.dev/job-kind": "XGBoostTrainingJob",
        "t9k.dev/replica-type": type_,
        "t9k.dev/replica-index": str(index),
        "t9k.dev/role": type_,
    }


def env(rank: int) -> list[dict[str, str]]:
    values = {
        "MASTER_ADDR": "xj-master-0.xj",
        "MASTER_PORT": "9999",
        "WORLD_SIZE": "3",
        "RANK": str(rank),
        "WORKER_ADDRS": "xj-worker-0.xj,xj-worker-1.xj",
        "WORKER_PORT": "9000",
        "PYTHONUNBUFFERED": "1",
    }
    return [{"name": k, "value": v} for k, v in values.items()]


def test_the_master_pod() -> None:
    assert b.build_pod(job(), "master", 0) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "xj-master-0",
            "namespace": "ns",
            "labels": labels("master", 0),
            "ownerReferences": [OWNER],
            "annotations": {"kubectl.kubernetes.io/default-container": "xgboost"},
        },
        "spec": {
            "containers": [
                {"name": "xgboost", "image": "img", "command": ["python3", "t.py"], "env": env(0)}
            ],
            "hostname": "xj-master-0",
            "subdomain": "xj",
            "restartPolicy": "Never",
        },
    }


def test_a_worker_pod_trains_in_its_xgboost_container() -> None:
    assert b.build_pod(job(), "worker", 1) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "xj-worker-1",
            "namespace": "ns",
            "labels": labels("worker", 1),
            "ownerReferences": [OWNER],
            "annotations": {"kubectl.kubernetes.io/default-container": "xgboost"},
        },
        "spec": {
            "containers": [
                {"name": "side", "image": "s"},
                {
                    "name": "xgboost",
                    "image": "img",
                    "ports": [{"name": "xgboostjob-port", "containerPort": 9000}],
                    "env": env(2),
                },
            ],
            "hostname": "xj-worker-1",
            "subdomain": "xj",
            "restartPolicy": "Never",
        },
    }


def test_debug_replaces_the_command() -> None:
    pod = b.build_pod(job(), "master", 0, PodMode(b.DEBUG_COMMAND, debug=True))
    assert pod["spec"]["containers"][0]["command"] == ["sleep", "inf"]


def test_the_service_names_the_replicas_and_serves_the_tracker_port() -> None:
    svc = b.build_service(job())
    assert svc["metadata"]["name"] == "xj"
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"]
    assert svc["spec"]["ports"] == [
        {"name": "tracker", "port": 9999, "targetPort": 9999},
        {"name": "worker", "port": 9000, "targetPort": 9000},
    ]


def test_a_master_alone_has_no_worker_addresses() -> None:
    raw: dict[str, Any] = job().to_dict()
    raw["spec"]["replicaSpecs"] = raw["spec"]["replicaSpecs"][:1]
    pod = b.build_pod(b.Job.from_dict(raw), "master", 0)
    names = [e["name"] for e in pod["spec"]["containers"][0]["env"]]
    assert names == ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED"]


def test_t9k_create_writes_a_master_and_the_workers() -> None:
    request = JobRequest(
        kind="xgboost", name="x", image="img", command=["python3", "t.py"], workers=3, gpus=1
    )
    spec = by_kind("XGBoostTrainingJob").from_flags(request)
    container = {"name": "xgboost", "image": "img", "command": ["python3", "t.py"]}
    gpu = {**container, "resources": {"limits": {"nvidia.com/gpu": 1}}}
    assert spec == {
        "replicaSpecs": [
            {
                "type": "master",
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [container]}},
            },
            {
                "type": "worker",
                "replicas": 3,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [gpu]}},
            },
        ]
    }
