"""The ToyJob kind's hooks for the shared engine: one role, ``worker``, whose
worker-0 decides the job; every other hook is :class:`KindBase`'s default."""

from __future__ import annotations

from t9k_operator.kinds import flags
from t9k_operator.kinds.contract import KindBase, PodMode, Replicas, Services, job_view
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.t9k import run_policy_view, succeeded_with
from t9k_operator.kinds.view import JobView, Outcome, Role
from t9k_operator.objects import Obj
from tests.toykind import builders
from tests.toykind.api import CRD, WORKER, ToyJobObject


class ToyKind(KindBase[ToyJobObject], crd=CRD, model=ToyJobObject, facts=builders.FACTS):
    cli_name = "toy"
    pod_templates: tuple[str, ...] = ("spec.worker.template",)

    def view(self, job: ToyJobObject) -> JobView:
        worker = job.spec.worker
        error = None
        if not (worker.template.get("spec") or {}).get("containers"):
            error = "spec.worker.template.spec.containers is empty: give the worker a container"
        role = Role(WORKER, worker.replicas, "Never")
        return job_view(
            CRD.kind, job.metadata, (role,), error, **run_policy_view(job.spec.run_policy, None)
        )

    def outcome(self, job: JobView, replicas: Replicas) -> Outcome | None:
        return succeeded_with(replicas.get(self.deciding_replica(job)))

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return (WORKER, 0)

    def build_pod(
        self, job: ToyJobObject, type_: str, index: int, mode: PodMode, svc: Services
    ) -> Obj:
        return builders.build_pod(job, index, mode)

    def extras(self, job: ToyJobObject) -> list[Obj]:
        return []

    def from_flags(self, request: JobRequest) -> Obj:
        """``t9k create toy``: workers running the command."""
        one = flags.container(self.training_containers[0], request, flags.command(request))
        return {"worker": {"replicas": request.workers, "template": flags.template(one, request)}}
