"""The pods the bench caches: shaped like training replicas, created on the
cluster's KWOK nodes and waited for until KWOK reports them Running."""

from __future__ import annotations

import contextlib
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from t9k_operator.kube import AlreadyExists, KubeClient
from t9k_operator.resources import NODES, PODS

NAMESPACE = "bench"
LABEL = "app.kubernetes.io/managed-by"
SELECTOR = f"{LABEL}=t9k-operator"


def training_pod(i: int, nodes: int) -> dict[str, Any]:
    job = f"job-{i // 8}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-worker-{i % 8}",
            "labels": {
                LABEL: "t9k-operator",
                "t9k.dev/job-name": job,
                "t9k.dev/job-kind": "PyTorchTrainingJob",
                "t9k.dev/replica-type": "worker",
                "t9k.dev/replica-index": str(i % 8),
            },
            "annotations": {"kwok.t9k.dev/run-duration": "24h"},
            "ownerReferences": [
                {
                    "apiVersion": "batch.tensorstack.dev/v1beta1",
                    "kind": "PyTorchTrainingJob",
                    "name": job,
                    "uid": f"00000000-0000-0000-0000-{i // 8:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": f"kwok-node-{i % nodes}",
            "hostname": f"{job}-worker-{i % 8}",
            "subdomain": job,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "pytorch",
                    "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                    "command": ["torchrun"],
                    "args": ["--nnodes=8", "--nproc-per-node=8", "train.py", "--epochs=10"],
                    "env": [
                        {"name": "MASTER_ADDR", "value": f"{job}-master-0.{job}"},
                        {"name": "MASTER_PORT", "value": "23456"},
                        {"name": "WORLD_SIZE", "value": "8"},
                        {"name": "RANK", "value": str(i % 8)},
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                    ],
                    "resources": {"limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"}},
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data"},
                        {"name": "dshm", "mountPath": "/dev/shm"},
                    ],
                }
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}},
                {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            ],
        },
    }


def create_running(client: KubeClient, count: int) -> None:
    """``count`` training pods created, then waited for (10 minutes at most)
    until KWOK reports them Running; the progress on stderr."""
    nodes = len(client.list_all(NODES)[0])
    started = time.monotonic()

    def create(i: int) -> None:
        with contextlib.suppress(AlreadyExists):
            client.create(PODS, training_pod(i, nodes), NAMESPACE)

    with ThreadPoolExecutor(12) as pool:
        list(pool.map(create, range(count)))
    print(f"created {count} pods in {time.monotonic() - started:.1f}s", file=sys.stderr)
    deadline = time.monotonic() + 600
    while True:
        items, _ = client.list_all(PODS, NAMESPACE, label_selector=SELECTOR)
        running = sum(1 for p in items if p.get("status", {}).get("phase") == "Running")
        if running >= count or time.monotonic() > deadline:
            break
        time.sleep(2)
    print(f"{running}/{count} Running after {time.monotonic() - started:.1f}s", file=sys.stderr)
