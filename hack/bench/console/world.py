"""The jobs and pods the console's board is fed with in the bench: shaped as
the API server returns them for a running two-replica PyTorchTrainingJob (a
master and a worker of 4 GPUs each, the operator's labels, status with
conditions, tasks and nodes) and cached through the informers' own
transforms, so the board holds what it holds in ``t9k console``."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from t9k_operator.builders.common import JOB_KIND, JOB_NAME, REPLICA_INDEX, REPLICA_TYPE
from t9k_operator.console.sharing import console_transform
from t9k_operator.kinds.gpus import GPU
from t9k_operator.kinds.registry import KINDS
from t9k_operator.resources import PODS

KIND = "PyTorchTrainingJob"
API_VERSION = "batch.tensorstack.dev/v1beta1"
NAMESPACES = 20
NODES = 250
STAMP = "2026-12-01T10:00:00Z"
DISTINCT_TIMES = False
"""Each job and its pods stamped with times of their own (``--distinct-times``),
not all with :data:`STAMP`: no two jobs' conditions or pods' states equal."""
JOB_TRANSFORM = console_transform(next(k.resource for k in KINDS if k.crd.kind == KIND))
POD_TRANSFORM = console_transform(PODS)


def at(i: int) -> str:
    """The times of the ``i``-th job and its pods."""
    if not DISTINCT_TIMES:
        return STAMP
    start = datetime(2026, 12, 1, tzinfo=UTC) + timedelta(seconds=37 * i)
    return start.strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(type_: str, reason: str, stamp: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": f"{reason.lower()} for the bench",
        "lastTransitionTime": stamp,
        "lastUpdateTime": stamp,
    }


def _container(gpus: int) -> dict[str, Any]:
    return {
        "name": "pytorch",
        "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
        "command": ["torchrun"],
        "args": ["--nproc-per-node=4", "train.py", "--epochs=90", "--batch-size=256"],
        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "OMP_NUM_THREADS", "value": "4"}],
        "resources": {
            "limits": {GPU: str(gpus), "cpu": "16", "memory": "64Gi"},
            "requests": {GPU: str(gpus), "cpu": "16", "memory": "64Gi"},
        },
    }


def job(i: int, phase: str = "Running") -> dict[str, Any]:
    """The ``i``-th job, in ``phase``."""
    name, namespace = f"train-{i:05d}", f"team-{i % NAMESPACES:02d}"
    spec = {
        "runMode": {"debug": {"enabled": False}},
        "replicaSpecs": [
            {
                "type": t,
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [_container(4)]}},
            }
            for t in ("master", "worker")
        ],
    }
    status = {
        "phase": phase,
        "startTime": at(i),
        "conditions": [
            _condition("Initialized", "Created", at(i)),
            _condition("Scheduled", "PodsScheduled", at(i)),
            _condition("Running", "AllReplicasRunning", at(i)),
        ],
        "tasks": [
            {"type": t, "replicas": [{"name": f"{name}-{t}-0", "phase": "Running"}]}
            for t in ("master", "worker")
        ],
        "nodes": [{"replica": f"{name}-{t}-0", "node": _node(i, t)} for t in ("master", "worker")],
    }
    obj = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.UUID(int=i)),
            "resourceVersion": str(1000 + i),
            "generation": 1,
            "creationTimestamp": at(i),
            "labels": {"team": namespace, "project": "bench"},
            "annotations": {"t9k.dev/owner": f"user-{i % 97}"},
        },
        "spec": spec,
        "status": status,
    }
    return {"apiVersion": API_VERSION, "kind": KIND, **JOB_TRANSFORM(obj)}


def _node(i: int, replica: str) -> str:
    return f"gpu-{(2 * i + (replica == 'worker')) % NODES:03d}"


def pods(i: int) -> list[dict[str, Any]]:
    """The ``i``-th job's two pods, running."""
    name, namespace = f"train-{i:05d}", f"team-{i % NAMESPACES:02d}"
    out = []
    for t in ("master", "worker"):
        pod = {
            "metadata": {
                "name": f"{name}-{t}-0",
                "namespace": namespace,
                "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, f"{name}-{t}")),
                "resourceVersion": str(50000 + 2 * i),
                "creationTimestamp": at(i),
                "labels": {JOB_NAME: name, JOB_KIND: KIND, REPLICA_TYPE: t, REPLICA_INDEX: "0"},
                "ownerReferences": [
                    {"apiVersion": API_VERSION, "kind": KIND, "name": name, "controller": True}
                ],
            },
            "spec": {"containers": [_container(4)], "nodeName": _node(i, t)},
            "status": {
                "phase": "Running",
                "podIP": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
                "startTime": at(i),
                "conditions": [
                    {"type": c, "status": "True", "lastTransitionTime": at(i)}
                    for c in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
                ],
                "containerStatuses": [
                    {
                        "name": "pytorch",
                        "ready": True,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": at(i)}},
                    }
                ],
            },
        }
        out.append(POD_TRANSFORM(pod))
    return out
