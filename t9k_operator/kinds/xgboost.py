"""XGBoostTrainingJob: the kind's hooks for the shared engine.

One ``master`` (it runs the tracker and trains as rank 0) and ``worker``
replicas; success follows ``master-0``, and any replica failed for good fails
the job at once (the engine does that). A spec without a master is admitted
but fails on reading: it has no tracker to train with. Debug pods run
``sleep inf`` unless told otherwise. ``t9k run --local`` is the default of
:class:`~t9k_operator.kinds.contract.KindBase`: each replica its training
container, a program after ``--`` as its command.
"""

from __future__ import annotations

from collections.abc import Mapping

from t9k_operator.api.xgboost import CRD, MASTER, WORKER, XGBoostTrainingJobSpec
from t9k_operator.builders import xgboost as build
from t9k_operator.builders.xgboost import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.contract import KindBase, PodMode, Services, Stored
from t9k_operator.kinds.flags import JobRequest, NotForThisKind
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.t9k import replica_specs_view, succeeded_with
from t9k_operator.kinds.view import JobView, Outcome
from t9k_operator.objects import Obj

BACKOFF_COUNT = "backoffCount"
"""The T9k API's name of the engine's ``restartCount`` in the stored status."""


def spec_error(spec: XGBoostTrainingJobSpec) -> str | None:
    """What the model lets through but no job can train with."""
    if spec.replicas_of(MASTER) < 1:
        return (
            "spec.replicaSpecs has no master replica: an XGBoostTrainingJob needs one "
            "(type: master, replicas: 1) to run the tracker"
        )
    for i, rs in enumerate(spec.replica_specs):
        if not (rs.template.get("spec") or {}).get("containers"):
            return (
                f"spec.replicaSpecs[{i}].template.spec.containers is empty: "
                "give the replica a container to run"
            )
    return None


class XGBoostKind(KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "xgboost"
    pausable = True
    pod_templates: tuple[str, ...] = ("spec.replicaSpecs[].template",)

    def view(self, job: Job) -> JobView:
        spec = job.spec
        return replica_specs_view(
            CRD.kind, job.metadata, spec_error(spec), spec, spec.replica_specs
        )

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        return succeeded_with(replicas.get(self.deciding_replica(job)))

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return (MASTER, 0)

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        return build.build_pod(job, type_, index, mode)

    def extras(self, job: Job) -> list[Obj]:
        return [build.build_service(job)]

    def engine_status(self, job: Stored) -> Obj:
        status = dict(job.get("status") or {})
        status.pop(BACKOFF_COUNT, None)
        return status

    def render_status(self, job: Stored, engine_status: Obj) -> Obj:
        """The engine's status, with its restart count also under the T9k name."""
        return {**engine_status, BACKOFF_COUNT: int(engine_status.get("restartCount") or 0)}

    def from_flags(self, request: JobRequest) -> Obj:
        """A master and ``--workers`` workers, each running the command (the
        master's program starts the tracker); ``--gpus`` are each worker's, the
        master has none."""
        if request.tensorboard:
            raise NotForThisKind(
                "an XGBoostTrainingJob has no tensorboardSpec: create a TensorBoard of its own"
            )
        argv = flags.command(request)
        name = self.training_containers[0]
        spec: Obj = {
            "replicaSpecs": [
                {
                    "type": type_,
                    "replicas": replicas,
                    "restartPolicy": "OnFailure",
                    "template": flags.template(
                        flags.container(name, request, argv, gpus=type_ == WORKER), request
                    ),
                }
                for type_, replicas in ((MASTER, 1), (WORKER, request.workers))
            ]
        }
        return flags.t9k_extras(spec, request)
