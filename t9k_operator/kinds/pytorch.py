"""PyTorchTrainingJob: the kind's hooks for the shared engine.

Success follows the master (``master-0``, else replica 0 of the first spec);
any replica failed for good fails the job at once (the engine does that);
debug pods run ``sleep inf`` unless told otherwise.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from t9k_operator.api.pytorch import CRD, PyTorchTrainingJobSpec
from t9k_operator.builders import pytorch as build
from t9k_operator.builders.pytorch import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.contract import KindBase, PodMode, Services
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.local import EachReplica, Program, split_python
from t9k_operator.kinds.t9k import (
    DecidedByOneReplica,
    containerless_replica,
    t9k_job_view,
)
from t9k_operator.kinds.view import JobView, Role
from t9k_operator.objects import Obj, training_container


def spec_error(spec: PyTorchTrainingJobSpec) -> str | None:
    """What the model lets through but no pod can be built from."""
    if not spec.replica_specs:
        return "spec.replicaSpecs is empty: add at least one replica spec"
    return containerless_replica([rs.template for rs in spec.replica_specs])


def min_member(spec: PyTorchTrainingJobSpec) -> int:
    """Pods the job needs at once: every replica; an elastic job, its masters and
    elastic.minReplicas of the others (torchrun's lower --nnodes)."""
    if spec.elastic_enabled and spec.elastic is not None:
        masters = sum(rs.replicas for rs in spec.replica_specs if rs.type == "master")
        return masters + (spec.elastic.min_replicas or 1)
    return sum(spec.replica_count(rs) for rs in spec.replica_specs)


class PyTorchKind(DecidedByOneReplica, KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "pytorch"
    pausable = True
    not_acted_on: tuple[str, ...] = ("spec.replicaSpecs[].scalingWeight",)
    pod_templates: tuple[str, ...] = ("spec.replicaSpecs[].template",)

    def view(self, job: Job) -> JobView:
        spec = job.spec
        roles = tuple(
            Role(rs.type, spec.replica_count(rs), rs.restart_policy) for rs in spec.replica_specs
        )
        return t9k_job_view(CRD.kind, job.metadata, roles, spec_error(spec), spec, min_member(spec))

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return build.master_of([(r.type, r.replicas) for r in job.roles])

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        return build.build_pod(job, type_, index, mode)

    def extras(self, job: Job) -> list[Obj]:
        return [build.build_service(job)]

    def from_flags(self, request: JobRequest) -> Obj:
        """Workers of the command, or with ``--torchrun`` torchrun of the script
        with a process per GPU."""
        argv = flags.command(request, torchrun=True)
        name = self.training_containers[0]
        spec: Obj = {}
        if request.torchrun:
            container = flags.container(name, request, None)
            container["args"] = flags.script(argv)
            spec["torchrunConfig"] = {"enabled": True, "procPerNode": str(request.slots)}
        else:
            container = flags.container(name, request, argv)
        return flags.t9k_extras({**spec, **flags.workers(container, request)}, request)

    @property
    def local(self) -> PyTorchLocal:
        return PyTorchLocal()


# -- t9k run --local -----------------------------------------------------------------------


class PyTorchLocal(EachReplica):
    """Each replica runs its training container. A program given after ``--``
    replaces the container's command (its args dropped); in torchrun mode,
    torchrun runs the container's args, so a script becomes them and anything
    else runs with ``--no-python``."""

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        out = copy.deepcopy(manifest)
        spec = out.setdefault("spec", {})
        _, script = split_python(argv)
        torchrun = (spec.get("torchrunConfig") or {}).get("enabled")
        for rs in spec.get("replicaSpecs") or []:
            c = training_container(rs.get("template") or {}, build.TRAINING_CONTAINERS)
            if c is None:
                continue
            if torchrun:  # torchrun runs the container's args: a script, else --no-python
                c["args"] = script if script is not None and script[0] != "-m" else list(argv)
            else:
                c["command"] = list(argv)
                c.pop("args", None)
        if torchrun and (script is None or script[0] == "-m"):
            spec["torchrunConfig"].setdefault("extraOptions", []).append("--no-python")
        return Program(out)
