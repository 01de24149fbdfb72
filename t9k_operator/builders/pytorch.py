"""PyTorchTrainingJob builders: replica pods with the env or ``torchrun`` line
PyTorch needs.

The master is the first training replica: ``master-0`` when a ``master``
type exists, else replica 0 of the first replica spec. Every replica can
reach it as ``<master pod>.<job>`` through the job's headless Service.

* Plain mode: ``MASTER_ADDR``, ``MASTER_PORT`` (23456, or the training
  container's port named ``pytorchjob-port``), ``WORLD_SIZE`` (replicas),
  ``RANK`` (master 0, then the others in spec order), ``PYTHONUNBUFFERED``.
* torchrun mode: the training container runs ``torchrun <torchrun args>
  <its own args>``; torchrun sets the ranks itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from t9k_operator.api.pytorch import PyTorchTrainingJobObject, ReplicaSpec, TorchrunConfig
from t9k_operator.builders.common import (
    NORMAL,
    KindFacts,
    PodMode,
    headless_service,
    pod_name,
    replica_pod,
    training_port,
)
from t9k_operator.objects import Obj, training_container_index

Job = PyTorchTrainingJobObject

TRAINING_CONTAINERS = ("pytorch", "python")
DEFAULT_MASTER_PORT = 23456
MASTER_PORT_NAME = "pytorchjob-port"
C10D_PORT = 29400
DEBUG_COMMAND = ("sleep", "inf")
FACTS = KindFacts(TRAINING_CONTAINERS, DEBUG_COMMAND)


def replica_counts(job: Job) -> list[tuple[str, int, ReplicaSpec]]:
    """(type, replicas, replicaSpec) in spec order; elastic jobs scale their
    non-master types to ``expectedReplicas`` (clamped to [min, max])."""
    return [(rs.type, job.spec.replica_count(rs), rs) for rs in job.spec.replica_specs]


def master_of(counts: Sequence[tuple[str, int]]) -> tuple[str, int]:
    """The replica that leads the job (rank 0, and whose success is the job's):
    ``master-0``, else replica 0 of the first type that has replicas."""
    for type_, n in counts:
        if type_ == "master" and n > 0:
            return ("master", 0)
    for type_, n in counts:
        if n > 0:
            return (type_, 0)
    return (counts[0][0], 0) if counts else ("master", 0)


def master_replica(job: Job) -> tuple[str, int]:
    return master_of([(type_, n) for type_, n, _ in replica_counts(job)])


def world_size(job: Job) -> int:
    return sum(n for _, n, _ in replica_counts(job))


def rank(job: Job, replica_type: str, index: int) -> int:
    master = master_replica(job)
    if (replica_type, index) == master:
        return 0
    r = 1
    for type_, n, _ in replica_counts(job):
        for i in range(n):
            if (type_, i) == master:
                continue
            if (type_, i) == (replica_type, index):
                return r
            r += 1
    raise ValueError(f"no replica {replica_type}-{index}")


def master_port(job: Job) -> int:
    type_, _ = master_replica(job)
    for rs in job.spec.replica_specs:
        if rs.type == type_:
            return training_port(
                rs.template, TRAINING_CONTAINERS, MASTER_PORT_NAME, DEFAULT_MASTER_PORT
            )
    return DEFAULT_MASTER_PORT


def master_address(job: Job) -> str:
    type_, index = master_replica(job)
    return f"{pod_name(job.name, type_, index)}.{job.name}"


def torchrun_args(job: Job) -> list[str]:
    spec = job.spec
    cfg = spec.torchrun_config or TorchrunConfig()
    if spec.elastic_enabled and spec.elastic is not None:
        masters = sum(n for t, n, _ in replica_counts(job) if t == "master")
        low, high = spec.elastic.min_replicas or 1, spec.elastic.max_replicas or 1
        nnodes = f"{low + masters}:{high + masters}"
    else:
        nnodes = str(world_size(job))
    args = [f"--nnodes={nnodes}", f"--nproc-per-node={cfg.proc_per_node}"]
    if cfg.max_restarts is not None:
        args.append(f"--max-restarts={cfg.max_restarts}")
    args.append(f"--rdzv-backend={cfg.rdzv_backend}")
    if cfg.rdzv_backend == "c10d":
        args.append(f"--rdzv-endpoint={master_address(job)}:{C10D_PORT}")
    args.append(f"--rdzv-id={job.uid}")
    args.extend(cfg.extra_options)
    return args


def build_pod(job: Job, replica_type: str, index: int, mode: PodMode = NORMAL) -> Obj:
    """The pod of ``<type>-<index>``; the mode's ``command``/``args`` come from debug
    or resume settings. A ``command`` wins over the torchrun line; resume ``args``
    alone replace the template's args after it (the script and its arguments)."""
    template = next(rs.template for rs in job.spec.replica_specs if rs.type == replica_type)
    torchrun = job.spec.torchrun_enabled
    env = {"PYTHONUNBUFFERED": "1"}
    if not torchrun:
        env.update(
            {
                "MASTER_ADDR": master_address(job),
                "MASTER_PORT": str(master_port(job)),
                "WORLD_SIZE": str(world_size(job)),
                "RANK": str(rank(job, replica_type, index)),
            }
        )
    if torchrun and mode.command is None and not mode.debug:
        # The training container's args are the script and its arguments, after
        # the torchrun line; a resume's args (without a command) replace them.
        containers = (template.get("spec") or {}).get("containers") or []
        own_args: list[str] = []
        if mode.args is not None:
            own_args = list(mode.args)
        elif containers:
            c = containers[training_container_index(template, TRAINING_CONTAINERS)]
            own_args = [str(a) for a in c.get("args") or []]
        mode = replace(mode, command=("torchrun", *torchrun_args(job), *own_args), args=None)
    role = "master" if master_replica(job) == (replica_type, index) else "worker"
    return replica_pod(
        job,
        template,
        replica_type,
        index,
        training_names=TRAINING_CONTAINERS,
        mode=mode,
        env=env,
        role=role,
    )


def build_service(job: Job) -> Obj:
    ports = [("master", master_port(job))]
    cfg = job.spec.torchrun_config
    if job.spec.torchrun_enabled and cfg is not None and cfg.rdzv_backend == "c10d":
        ports.append(("c10d", C10D_PORT))
    return headless_service(job, ports)
