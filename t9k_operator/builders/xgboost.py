"""XGBoostTrainingJob builders: replica pods with the tracker's environment.

Every replica's training container (the one named ``xgboost``, else the
first) gets the environment distributed XGBoost is started from, as
Kubeflow's XGBoost operator gives it:

* ``MASTER_ADDR`` / ``MASTER_PORT``: where the tracker listens, the master's
  address ``<job>-master-0.<job>`` (the job's headless Service) and port
  9999, or the master's training container port named ``xgboostjob-port``;
* ``WORLD_SIZE``: replicas in all (master included: it trains too);
* ``RANK``: 0 for the master, ``index + 1`` for ``worker-<index>``;
* ``WORKER_ADDRS`` / ``WORKER_PORT``: the workers' addresses, comma
  separated in index order, and their port (the same rule, on the worker
  template), when the job has workers;
* ``PYTHONUNBUFFERED=1``.

The master's program starts the tracker (``xgboost.tracker.RabitTracker``
for ``WORLD_SIZE`` workers on ``MASTER_PORT``); each replica joins it with
``xgboost.collective.CommunicatorContext`` as task ``RANK``.
"""

from __future__ import annotations

from t9k_operator.api.template import PodTemplate
from t9k_operator.api.xgboost import MASTER, WORKER, XGBoostTrainingJobObject
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

Job = XGBoostTrainingJobObject

TRAINING_CONTAINERS = ("xgboost",)
DEFAULT_PORT = 9999
PORT_NAME = "xgboostjob-port"
DEBUG_COMMAND = ("sleep", "inf")
FACTS = KindFacts(TRAINING_CONTAINERS, DEBUG_COMMAND)


def template_of(job: Job, replica_type: str) -> PodTemplate | None:
    return next((rs.template for rs in job.spec.replica_specs if rs.type == replica_type), None)


def port_of(job: Job, replica_type: str) -> int:
    """The training container's port named ``xgboostjob-port`` in the type's
    template, else :data:`DEFAULT_PORT`."""
    template = template_of(job, replica_type)
    if template is None:
        return DEFAULT_PORT
    return training_port(template, TRAINING_CONTAINERS, PORT_NAME, DEFAULT_PORT)


def address(job: Job, replica_type: str, index: int) -> str:
    """A replica's address through the job's headless Service."""
    return f"{pod_name(job.name, replica_type, index)}.{job.name}"


def world_size(job: Job) -> int:
    return job.spec.replicas_of(MASTER) + job.spec.replicas_of(WORKER)


def rank(replica_type: str, index: int) -> int:
    """The master is rank 0; worker-<index> is rank index + 1."""
    return 0 if replica_type == MASTER else index + 1


def tracker_env(job: Job, replica_type: str, index: int) -> dict[str, str]:
    """The environment every replica trains with (the module's docstring)."""
    env = {
        "MASTER_ADDR": address(job, MASTER, 0),
        "MASTER_PORT": str(port_of(job, MASTER)),
        "WORLD_SIZE": str(world_size(job)),
        "RANK": str(rank(replica_type, index)),
    }
    workers = job.spec.replicas_of(WORKER)
    if workers:
        env["WORKER_ADDRS"] = ",".join(address(job, WORKER, i) for i in range(workers))
        env["WORKER_PORT"] = str(port_of(job, WORKER))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def build_pod(job: Job, replica_type: str, index: int, mode: PodMode = NORMAL) -> Obj:
    """The pod of ``<type>-<index>``; the mode's ``command``/``args`` come from debug
    or resume settings."""
    template = template_of(job, replica_type)
    if template is None:
        raise ValueError(f"no replica spec of type {replica_type}")
    return replica_pod(
        job,
        template,
        replica_type,
        index,
        training_names=TRAINING_CONTAINERS,
        mode=mode,
        env=tracker_env(job, replica_type, index),
        role=MASTER if replica_type == MASTER else WORKER,
    )


def build_service(job: Job) -> Obj:
    """The headless Service: the replicas' names, and the tracker's port."""
    ports = [("tracker", port_of(job, MASTER))]
    if job.spec.replicas_of(WORKER) and port_of(job, WORKER) != ports[0][1]:
        ports.append(("worker", port_of(job, WORKER)))
    return headless_service(job, ports)
