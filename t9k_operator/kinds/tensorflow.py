"""TensorFlowTrainingJob: the kind's hooks for the shared engine.

Success follows the chief (``chief-0``), else ``worker-0``; any replica failed
for good fails the job at once (the engine does that); debug pods run
``sleep inf`` unless told otherwise. Every replica runs its own training
container with its ``TF_CONFIG``.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Mapping, Sequence

from t9k_operator.api.tensorflow import CRD, TensorFlowTrainingJobSpec
from t9k_operator.builders import tensorflow as build
from t9k_operator.builders.tensorflow import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.contract import KindBase, PodMode, Services
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.local import LOOPBACK, Here, Launch, Process, Program, Replica
from t9k_operator.kinds.t9k import (
    DecidedByOneReplica,
    containerless_replica,
    replica_specs_view,
)
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj, training_container


def spec_error(spec: TensorFlowTrainingJobSpec) -> str | None:
    """What the model lets through but no pod can be built from."""
    return containerless_replica([rs.template for rs in spec.replica_specs])


class TensorFlowKind(DecidedByOneReplica, KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "tensorflow"
    pausable = True
    pod_templates: tuple[str, ...] = ("spec.replicaSpecs[].template",)

    def view(self, job: Job) -> JobView:
        spec = job.spec
        return replica_specs_view(
            CRD.kind, job.metadata, spec_error(spec), spec, spec.replica_specs
        )

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return build.leader_of([(r.type, r.replicas) for r in job.roles])

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        return build.build_pod(job, type_, index, mode)

    def extras(self, job: Job) -> list[Obj]:
        return [build.build_service(job)]

    def from_flags(self, request: JobRequest) -> Obj:
        """Workers of the command (TensorFlow's MultiWorkerMirroredStrategy reads
        their TF_CONFIG); worker 0 decides the job."""
        container = flags.container(self.training_containers[0], request, flags.command(request))
        return flags.t9k_extras(flags.workers(container, request), request)

    @property
    def local(self) -> TensorFlowLocal:
        return TensorFlowLocal()


# -- t9k run --local -----------------------------------------------------------------------


class TensorFlowLocal:
    """Each replica runs its training container. On the cluster every task has an
    address of its own and the same port; here every task is 127.0.0.1, so each
    gets a port of its own, and every replica's ``TF_CONFIG`` names them. A program
    given after ``--`` replaces every training container's command (its args
    dropped)."""

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        out = copy.deepcopy(manifest)
        for rs in out.setdefault("spec", {}).get("replicaSpecs") or []:
            c = training_container(rs.get("template") or {}, build.TRAINING_CONTAINERS)
            if c is not None:
                c["command"] = list(argv)
                c.pop("args", None)
        return Program(out)

    def launch(self, job: Job, replicas: Mapping[str, Replica], here: Here) -> Launch:
        cluster = build.cluster_spec(job)
        local = {
            type_: [f"{LOOPBACK}:{here.free_port()}" for _ in tasks]
            for type_, tasks in cluster.items()
        }
        leader = "{}-{}".format(*build.leader_of([(t, len(v)) for t, v in cluster.items()]))
        processes = []
        for label, replica in replicas.items():
            env = here.env(replica.env)
            task = json.loads(replica.env[build.TF_CONFIG])["task"]
            env[build.TF_CONFIG] = json.dumps({"cluster": local, "task": task})
            argv = tuple(here.argv(label, replica))
            process = Process(label, (task["type"], task["index"]), argv, env)
            processes.append(process)
        here.note(
            "TensorFlowTrainingJob: every task listens on 127.0.0.1 with a port of its own "
            "(on the cluster: its pod's address and its type's port); TF_CONFIG says so"
        )
        first = next((p for p in processes if p.label == leader), processes[0])
        return Launch(first.label, shlex.join(first.argv), tuple(processes))
