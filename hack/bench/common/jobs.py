"""The job the benchmarks create: a PyTorchTrainingJob of workers in their
namespace, whose pods neither kube-scheduler nor KWOK's stages touch
(``schedulerName`` :data:`SCHEDULER`, annotation ``kwok.t9k.dev/manual``):
the stand-in kubelet (``kubelet``) marks them Running."""

from __future__ import annotations

from typing import Any

from t9k_operator.resources import Resource

NAMESPACE = "bench"
JOBS = Resource("batch.tensorstack.dev", "v1beta1", "pytorchtrainingjobs", "PyTorchTrainingJob")
SCHEDULER = "t9k-bench-unscheduled"


def job_body(name: str, replicas: int) -> dict[str, Any]:
    """A job of ``replicas`` workers."""
    container: dict[str, Any] = {
        "name": "pytorch",
        "image": "pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel",
        "command": ["python", "dist_mnist.py"],
    }
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": replicas,
                    "restartPolicy": "OnFailure",
                    "template": {
                        "metadata": {"annotations": {"kwok.t9k.dev/manual": "true"}},
                        "spec": {"schedulerName": SCHEDULER, "containers": [container]},
                    },
                }
            ]
        },
    }
