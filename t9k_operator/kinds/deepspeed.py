"""DeepSpeedJob: the kind's hooks for the shared engine.

One replica type, ``worker``. worker-0 runs the launcher, so its exit decides
the job: success when it succeeds; a failure the restart policy does not
recover fails the job, as does any other worker failing for good (the engine
does both, at once and with the reason). Debug pods run ``/usr/sbin/sshd -D``.
"""

from __future__ import annotations

from collections.abc import Mapping

from t9k_operator.api.deepspeed import CRD, DeepSpeedJobSpec, effective_worker_count
from t9k_operator.builders import deepspeed as build
from t9k_operator.builders import tensorboard
from t9k_operator.builders.deepspeed import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.contract import KindBase, PodMode, Services, job_view
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.t9k import gang_view, run_policy_view, succeeded_with
from t9k_operator.kinds.view import JobView, Outcome, Role
from t9k_operator.objects import Obj


def spec_error(spec: DeepSpeedJobSpec) -> str | None:
    """What the model lets through but no pod can be built from."""
    if not (spec.worker.template.get("spec") or {}).get("containers"):
        return "spec.worker.template.spec.containers is empty: give the worker a container to run"
    run = spec.config.run if spec.config is not None else None
    if not spec.debug_enabled and (run is None or not run.given):
        return "spec.config.run needs exactly one of python, module or exec"
    return None


def min_member(spec: DeepSpeedJobSpec) -> int:
    """Workers the job needs at once: all of them; elastic.minReplicas when elastic."""
    if spec.elastic_enabled and spec.elastic is not None and spec.elastic.min_replicas:
        return spec.elastic.min_replicas
    return effective_worker_count(spec)


class DeepSpeedKind(KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "deepspeed"
    pausable = True
    pod_templates: tuple[str, ...] = ("spec.worker.template",)
    uses_ssh = True

    def view(self, job: Job) -> JobView:
        spec = job.spec
        role = Role("worker", effective_worker_count(spec), spec.worker.effective_restart_policy)
        return job_view(
            CRD.kind,
            job.metadata,
            (role,),
            spec_error(spec),
            gang=gang_view(spec.scheduler, min_member(spec)),
            **run_policy_view(spec.run_policy, spec.run_mode),
        )

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        return succeeded_with(replicas.get(self.deciding_replica(job)))

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return ("worker", 0)  # it runs the launcher

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        return build.build_pod(job, index, mode)

    def extras(self, job: Job) -> list[Obj]:
        return [build.build_service(job), build.hostfile_configmap(job)]

    def ssh_secret(self, job: Job, private_key: str, public_key: str) -> Obj | None:
        return build.ssh_secret(job, private_key, public_key)

    def tensorboard(self, job: Job) -> Obj | None:
        return tensorboard.for_job(job, job.spec.tensorboard_spec)

    def from_flags(self, request: JobRequest) -> Obj:
        """Workers with a slot per GPU; deepspeed runs the script (python) or the command."""
        argv = flags.command(request)
        script = flags.script(argv)
        run = {"python": script} if script != argv else {"exec": argv}
        container = flags.container(self.training_containers[0], request, None)
        spec: Obj = {
            "config": {"slotsPerWorker": request.slots, "run": run},
            "worker": {"replicas": request.workers, "template": flags.template(container, request)},
        }
        return flags.t9k_extras(spec, request)
