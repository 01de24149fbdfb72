"""Fixed objects, as the API server returns them, for the CLI's golden tables."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from t9k_operator.integrations.gpu_usage.usage import Usage

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NS = "team-a"


def gpu_container(name: str, gpus: int) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "train:1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return container


def condition(type_: str, status: str, reason: str, message: str, at: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
    }


MNIST: dict[str, Any] = {
    "apiVersion": "batch.tensorstack.dev/v1beta1",
    "kind": "PyTorchTrainingJob",
    "metadata": {
        "name": "mnist",
        "namespace": NS,
        "creationTimestamp": "2026-03-01T11:00:00Z",
        "labels": {"kueue.x-k8s.io/queue-name": "research"},
    },
    "spec": {
        "replicaSpecs": [
            {
                "type": "master",
                "replicas": 1,
                "template": {"spec": {"containers": [gpu_container("pytorch", 2)]}},
            },
            {
                "type": "worker",
                "replicas": 3,
                "template": {"spec": {"containers": [gpu_container("pytorch", 2)]}},
            },
        ]
    },
    "status": {
        "phase": "Running",
        "startTime": "2026-03-01T11:00:05Z",
        "restartCount": 1,
        "disruptionCount": 1,
        "progress": {
            "step": 420,
            "totalSteps": 1000,
            "epoch": 2.0,
            "metrics": {"loss": 0.31, "acc": 0.9},
            "replica": "mnist-master-0",
            "lastReportTime": "2026-03-01T11:59:58Z",
            "stepsPerSecond": 1.5,
            "eta": "6m26s",
            "summary": "420/1000 (42%)",
        },
        "conditions": [
            condition(
                "Initialized", "True", "-", "The job has been initialized.", "2026-03-01T11:00:01Z"
            ),
            condition("Running", "True", "-", "The job is running.", "2026-03-01T11:00:10Z"),
            condition("Failed", "False", "-", "The job has not finished.", "2026-03-01T11:00:01Z"),
        ],
        "tasks": [
            {
                "type": "master",
                "restartCount": 0,
                "replicas": [{"name": "mnist-master-0", "phase": "Running", "containers": []}],
            },
            {
                "type": "worker",
                "restartCount": 1,
                "replicas": [
                    {"name": "mnist-worker-0", "phase": "Running"},
                    {"name": "mnist-worker-1", "phase": "Running"},
                    {"name": "mnist-worker-2", "phase": "Pending"},
                ],
            },
        ],
        "restarts": [
            {
                "time": "2026-03-01T11:30:00Z",
                "replica": "mnist-worker-1",
                "exitCode": 137,
                "reason": "OOMKilled",
                "node": "gpu-1",
                "counted": True,
            },
            {
                "time": "2026-03-01T11:45:00Z",
                "replica": "mnist-worker-2",
                "reason": "Preempted",
                "node": "gpu-2",
                "counted": False,
            },
        ],
        "workload": {
            "name": "mnist",
            "queue": "research",
            "admitted": True,
            "clusterQueue": "gpus",
        },
        "tensorboard": {
            "ready": True,
            "reason": "DependentReady",
            "dependent": {"kind": "TensorBoard", "name": "mnist", "namespace": NS},
        },
    },
}

LLM: dict[str, Any] = {
    "apiVersion": "batch.tensorstack.dev/v1beta1",
    "kind": "DeepSpeedJob",
    "metadata": {"name": "llm", "namespace": NS, "creationTimestamp": "2026-03-01T11:58:00Z"},
    "spec": {
        "scheduler": {"t9kScheduler": {"queue": "big", "priority": 50}},
        "config": {"run": {"python": ["train.py"]}},
        "worker": {
            "replicas": 8,
            "template": {"spec": {"containers": [gpu_container("worker", 8)]}},
        },
    },
    "status": {
        "phase": "Pending",
        "conditions": [
            condition(
                "Running",
                "False",
                "WaitingForGangScheduler",
                "PodGroup llm: 2/8 pods can be placed",
                "2026-03-01T11:58:01Z",
            )
        ],
        "podGroup": {
            "name": "llm",
            "scheduler": "volcano",
            "minMember": 8,
            "queue": "big",
            "phase": "Pending",
            "message": "2/8 tasks in gang unschedulable",
        },
        "startEstimate": {
            "where": "gang",
            "lacking": [
                {
                    "resource": "nvidia.com/gpu",
                    "requested": "8",
                    "pods": 6,
                    "free": "0",
                    "nodes": ["gpu-1", "gpu-2"],
                }
            ],
            "waitingFor": [{"name": "team-a/mnist", "endTime": "2026-03-01T12:07:00Z"}],
            "estimatedStartTime": "2026-03-01T12:07:00Z",
            "reason": "its pods fit once team-a/mnist ends",
        },
    },
}

MS: dict[str, Any] = {
    "apiVersion": "mindspore.gitee.com/v1",
    "kind": "MSJob",
    "metadata": {
        "name": "ms-resnet",
        "namespace": "team-b",
        "creationTimestamp": "2026-03-01T09:00:00Z",
    },
    "spec": {
        "runPolicy": {"schedulingPolicy": {"queue": "default"}},
        "msReplicaSpecs": {
            "Scheduler": {
                "replicas": 1,
                "template": {"spec": {"containers": [gpu_container("mindspore", 0)]}},
            },
            "Worker": {
                "replicas": 2,
                "template": {"spec": {"containers": [gpu_container("mindspore", 1)]}},
            },
        },
    },
    "status": {
        "phase": "Failed",
        "startTime": "2026-03-01T09:00:02Z",
        "completionTime": "2026-03-01T10:02:03Z",
        "conditions": [{"type": "Failed", "status": "True", "reason": "MSJobFailed"}],
        "t9kConditions": [
            condition(
                "Failed",
                "True",
                "BackoffLimitExceeded",
                "worker-1 failed 4 times",
                "2026-03-01T10:02:03Z",
            ),
        ],
    },
}


def pod(
    job: dict[str, Any], replica: str, node: str | None, phase: str, gpus: int, **extra: Any
) -> dict[str, Any]:
    name = job["metadata"]["name"]
    meta = {
        "name": f"{name}-{replica}",
        "namespace": job["metadata"]["namespace"],
        "labels": {"t9k.dev/job-name": name, "t9k.dev/job-kind": job["kind"]},
    }
    spec: dict[str, Any] = {"containers": [gpu_container("pytorch", gpus)]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase, **extra}}


PODS = [
    pod(MNIST, "master-0", "gpu-1", "Running", 2),
    pod(MNIST, "worker-0", "gpu-1", "Running", 2),
    pod(MNIST, "worker-1", "gpu-2", "Running", 2),
    pod(MNIST, "worker-2", None, "Pending", 2),
    pod(
        MS,
        "worker-1",
        "gpu-3",
        "Failed",
        1,
        containerStatuses=[{"name": "mindspore", "state": {"terminated": {"exitCode": 1}}}],
    ),
    # Not a job's: it still holds its node's GPU.
    {
        "metadata": {"name": "notebook", "namespace": "team-b", "labels": {}},
        "spec": {"nodeName": "gpu-3", "containers": [gpu_container("lab", 1)]},
        "status": {"phase": "Running"},
    },
]

NODES = [
    {"metadata": {"name": f"gpu-{i}"}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}
    for i in (1, 2, 3)
] + [{"metadata": {"name": "cpu-1"}, "status": {"allocatable": {"cpu": "64"}}}]

EVENTS = [
    {
        "type": "Normal",
        "reason": "Created",
        "message": "PyTorchTrainingJob mnist accepted",
        "involvedObject": {"kind": "PyTorchTrainingJob", "name": "mnist"},
        "lastTimestamp": "2026-03-01T11:00:01Z",
    },
    {
        "type": "Warning",
        "reason": "Restarted",
        "message": "replica worker-1 exited 137 (OOMKilled);\nrecreated",
        "involvedObject": {"kind": "PyTorchTrainingJob", "name": "mnist"},
        "lastTimestamp": "2026-03-01T11:30:00Z",
    },
    {
        "type": "Normal",
        "reason": "Scheduled",
        "message": "Successfully assigned team-a/mnist-worker-1 to gpu-2",
        "involvedObject": {"kind": "Pod", "name": "mnist-worker-1"},
        "eventTime": "2026-03-01T11:30:02.000001Z",
    },
]

TENSORBOARD = {
    "metadata": {"name": "mnist", "namespace": NS},
    "status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "PodReady"}],
        "url": "http://mnist-tensorboard.team-a.svc:6006/",
    },
}

MNIST_USAGE = Usage(
    gpus=6, util_avg=37.4, util_max=91.0, memory_used=61440.0, memory_total=491520.0
)
"""What the Prometheus scraping DCGM's exporter says of mnist's six GPUs."""
GPU_USAGE: dict[tuple[str, str, str], Usage | None] = {
    (NS, "PyTorchTrainingJob", "mnist"): MNIST_USAGE,
}
"""``t9k top jobs --prometheus-url``'s figures: none for the other jobs."""

MNIST_CHECKPOINTED: dict[str, Any] = {
    **MNIST,
    "status": {
        **MNIST["status"],
        "checkpoint": {
            "lastStep": 400,
            "lastStepTime": "2026-03-01T11:40:10Z",
            "replica": "mnist-worker-1",
            "reason": "Paused",
            "stoppedAt": "2026-03-01T11:40:31Z",
            "waited": False,
        },
    },
}
"""mnist, running again after a pause that stopped it when graceSeconds ran out,
its newest checkpoint at step 400."""
