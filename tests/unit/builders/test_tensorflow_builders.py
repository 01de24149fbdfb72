"""TensorFlowTrainingJob builders: each replica's TF_CONFIG (the cluster from
the replicas' stable names, its own task), the evaluator outside the cluster,
the job's headless Service and the replica that decides."""

from __future__ import annotations

import json
from typing import Any

from t9k_operator.builders import tensorflow as b
from t9k_operator.builders.common import PodMode


def template(port: int | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "tensorflow", "image": "tf:2.18", "command": ["python", "t.py"]}
    if port is not None:
        c["ports"] = [{"name": "tfjob-port", "containerPort": port}]
    return {"metadata": {"labels": {"team": "a"}}, "spec": {"containers": [c]}}


def job(*specs: tuple[str, int], ps_port: int | None = None) -> b.Job:
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "TensorFlowTrainingJob",
            "metadata": {"name": "tf", "namespace": "ns", "uid": "u"},
            "spec": {
                "replicaSpecs": [
                    {
                        "type": t,
                        "replicas": n,
                        "template": template(ps_port if t == "ps" else None),
                    }
                    for t, n in specs
                ]
            },
        }
    )


def tf_config(pod: dict[str, Any]) -> dict[str, Any]:
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    return dict(json.loads(env["TF_CONFIG"]))


def test_a_workers_pod_as_the_operator_renders_it() -> None:
    pod = b.build_pod(job(("worker", 2)), "worker", 1)
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "tf-worker-1",
            "namespace": "ns",
            "labels": {
                "team": "a",
                "app.kubernetes.io/managed-by": "t9k-operator",
                "t9k.dev/job-name": "tf",
                "t9k.dev/job-kind": "TensorFlowTrainingJob",
                "t9k.dev/replica-type": "worker",
                "t9k.dev/replica-index": "1",
                "t9k.dev/role": "worker",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch.tensorstack.dev/v1beta1",
                    "kind": "TensorFlowTrainingJob",
                    "name": "tf",
                    "uid": "u",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": "tf:2.18",
                    "command": ["python", "t.py"],
                    "env": [
                        {
                            "name": "TF_CONFIG",
                            "value": '{"cluster":{"worker":["tf-worker-0.tf:2222",'
                            '"tf-worker-1.tf:2222"]},"task":{"type":"worker","index":1}}',
                        },
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                    ],
                }
            ],
            "hostname": "tf-worker-1",
            "subdomain": "tf",
            "restartPolicy": "Never",
        },
    }


def test_the_cluster_holds_chief_worker_and_ps_in_index_order_with_their_ports() -> None:
    j = job(("evaluator", 1), ("ps", 2), ("worker", 2), ("chief", 1), ps_port=2345)
    assert tf_config(b.build_pod(j, "ps", 1)) == {
        "cluster": {
            "chief": ["tf-chief-0.tf:2222"],
            "worker": ["tf-worker-0.tf:2222", "tf-worker-1.tf:2222"],
            "ps": ["tf-ps-0.tf:2345", "tf-ps-1.tf:2345"],
        },
        "task": {"type": "ps", "index": 1},
    }


def test_the_evaluator_is_told_its_task_but_is_not_in_the_cluster() -> None:
    j = job(("worker", 1), ("evaluator", 1))
    config = tf_config(b.build_pod(j, "evaluator", 0))
    assert config == {
        "cluster": {"worker": ["tf-worker-0.tf:2222"]},
        "task": {"type": "evaluator", "index": 0},
    }


def test_the_chief_else_worker_0_decides_and_is_labelled_so() -> None:
    assert b.leader_of([("worker", 2), ("chief", 1)]) == ("chief", 0)
    assert b.leader_of([("ps", 1), ("worker", 2)]) == ("worker", 0)
    assert b.leader_of([("chief", 0), ("worker", 2)]) == ("worker", 0)
    j = job(("ps", 1), ("worker", 2))
    assert b.build_pod(j, "worker", 0)["metadata"]["labels"]["t9k.dev/role"] == "chief"
    assert b.build_pod(j, "ps", 0)["metadata"]["labels"]["t9k.dev/role"] == "ps"


def test_the_service_publishes_each_cluster_port_once() -> None:
    svc = b.build_service(
        job(("chief", 1), ("worker", 2), ("ps", 1), ("evaluator", 1), ps_port=3333)
    )
    assert svc["metadata"]["name"] == "tf"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"] == [
        {"name": "chief", "port": 2222, "targetPort": 2222},
        {"name": "ps", "port": 3333, "targetPort": 3333},
    ]


def test_debug_mode_replaces_the_command_and_keeps_tf_config() -> None:
    pod = b.build_pod(job(("worker", 1)), "worker", 0, PodMode(("sleep", "inf"), debug=True))
    c = pod["spec"]["containers"][0]
    assert c["command"] == ["sleep", "inf"]
    assert tf_config(pod)["task"] == {"type": "worker", "index": 0}
