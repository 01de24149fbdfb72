"""TensorFlowTrainingJob builders: replica pods with the ``TF_CONFIG`` TensorFlow
reads, and the headless Service that names them.

``TF_CONFIG`` is JSON: ``cluster`` maps each of ``chief``, ``worker`` and
``ps`` that has replicas to its tasks' ``host:port`` in index order (the
host is ``<pod>.<job>``, which the job's headless Service makes resolvable
before the pods are Ready), and ``task`` is the replica's own type and
index. An ``evaluator`` is not part of the cluster: it gets the cluster and
its own task. The port is 2222, or the training container's port named
``tfjob-port`` in that type's template.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from t9k_operator.api.tensorflow import (
    CHIEF,
    EVALUATOR,
    PS,
    WORKER,
    ReplicaSpec,
    TensorFlowTrainingJobObject,
)
from t9k_operator.builders.common import (
    NORMAL,
    KindFacts,
    PodMode,
    headless_service,
    pod_name,
    replica_pod,
    training_port,
)
from t9k_operator.objects import Obj

Job = TensorFlowTrainingJobObject

TRAINING_CONTAINERS = ("tensorflow",)
DEFAULT_PORT = 2222
PORT_NAME = "tfjob-port"
TF_CONFIG = "TF_CONFIG"
DEBUG_COMMAND = ("sleep", "inf")
FACTS = KindFacts(TRAINING_CONTAINERS, DEBUG_COMMAND)
CLUSTER_TYPES = (CHIEF, WORKER, PS)
"""The task types of TensorFlow's cluster, in TF_CONFIG's order; an evaluator is not one."""


def leader_of(counts: Sequence[tuple[str, int]]) -> tuple[str, int]:
    """The replica whose success is the job's: ``chief-0``, else ``worker-0``."""
    for type_, n in counts:
        if type_ == CHIEF and n > 0:
            return (CHIEF, 0)
    return (WORKER, 0)


def replica_spec(job: Job, replica_type: str) -> ReplicaSpec:
    return next(rs for rs in job.spec.replica_specs if rs.type == replica_type)


def port_of(rs: ReplicaSpec) -> int:
    """The port of a type's tasks: its training container's ``tfjob-port``, else 2222."""
    return training_port(rs.template, TRAINING_CONTAINERS, PORT_NAME, DEFAULT_PORT)


def cluster_spec(job: Job) -> dict[str, list[str]]:
    """TF_CONFIG's ``cluster``: each cluster type with replicas, its tasks in index order."""
    cluster: dict[str, list[str]] = {}
    for type_ in CLUSTER_TYPES:
        rs = next((r for r in job.spec.replica_specs if r.type == type_), None)
        if rs is None or rs.replicas == 0:
            continue
        port = port_of(rs)
        cluster[type_] = [
            f"{pod_name(job.name, type_, i)}.{job.name}:{port}" for i in range(rs.replicas)
        ]
    return cluster


def tf_config(job: Job, replica_type: str, index: int) -> str:
    """The ``TF_CONFIG`` of replica ``<type>-<index>``, compact JSON."""
    config = {
        "cluster": cluster_spec(job),
        "task": {"type": replica_type, "index": index},
    }
    return json.dumps(config, separators=(",", ":"))


def build_pod(job: Job, replica_type: str, index: int, mode: PodMode = NORMAL) -> Obj:
    """The pod of ``<type>-<index>``: its type's template with ``TF_CONFIG`` in the
    training container; the mode's ``command``/``args`` come from debug or resume."""
    leader = leader_of([(rs.type, rs.replicas) for rs in job.spec.replica_specs])
    return replica_pod(
        job,
        replica_spec(job, replica_type).template,
        replica_type,
        index,
        training_names=TRAINING_CONTAINERS,
        mode=mode,
        env={TF_CONFIG: tf_config(job, replica_type, index), "PYTHONUNBUFFERED": "1"},
        role="chief" if (replica_type, index) == leader else replica_type,
    )


def build_service(job: Job) -> Obj:
    """The job's headless Service, with each cluster type's port (one entry per port)."""
    ports: list[tuple[str, int]] = []
    for rs in job.spec.replica_specs:
        if rs.type == EVALUATOR or rs.replicas == 0:
            continue
        port = port_of(rs)
        if all(p != port for _, p in ports):
            ports.append((rs.type, port))
    return headless_service(job, ports)
