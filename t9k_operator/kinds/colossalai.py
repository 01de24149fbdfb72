"""ColossalAIJob: the kind's hooks for the shared engine.

Roles: ``launcher`` (one pod, ``<job>-launcher``) and ``worker``. Neither is
ever restarted (seed 003: a worker that comes back cannot rejoin a running
``colossalai run``; a relaunch would start over on busy workers), so any pod
failing fails the job at once with the reason. The launcher's success is the
job's. ``runPolicy.cleanUpWorkers`` deletes the workers when the job ends and
keeps the launcher for its logs. Debug pods run ``sleep inf``.
"""

from __future__ import annotations

from collections.abc import Mapping

from t9k_operator.api.colossalai import CRD, ColossalAIJobSpec
from t9k_operator.builders import colossalai as build
from t9k_operator.builders import ssh, tensorboard
from t9k_operator.builders.colossalai import Job
from t9k_operator.kinds import flags
from t9k_operator.kinds.contract import KindBase, PodMode, Services, job_view
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.t9k import gang_view, run_mode_view, succeeded_with
from t9k_operator.kinds.view import JobView, Outcome, Role, hang_policy
from t9k_operator.objects import Obj

WORKERS_ONLY = frozenset({"worker"})


def spec_error(spec: ColossalAIJobSpec) -> str | None:
    """What the model lets through but no pod can be built from."""
    if not spec.launcher.image:
        return "spec.launcher.image is empty: name the image the launcher runs colossalai from"
    if not (spec.worker.template.get("spec") or {}).get("containers"):
        return "spec.worker.template.spec.containers is empty: give the worker a container"
    return None


class ColossalAIKind(KindBase[Job], crd=CRD, model=Job, facts=build.FACTS):
    cli_name = "colossalai"
    pausable = True
    not_acted_on: tuple[str, ...] = ("spec.runPolicy.backoffLimit",)
    pod_templates: tuple[str, ...] = ("spec.worker.template",)
    uses_ssh = True

    def view(self, job: Job) -> JobView:
        spec = job.spec
        # No pod is ever restarted (see the module docstring): restart policy Never,
        # and backoffLimit, stored but not acted on, is not read.
        roles = (Role("launcher", 1, "Never"), Role("worker", spec.worker.replicas, "Never"))
        return job_view(
            CRD.kind,
            job.metadata,
            roles,
            spec_error(spec),
            gang=gang_view(spec.scheduler, 1 + spec.worker.replicas),  # launcher and workers
            active_deadline_seconds=spec.run_policy.active_deadline_seconds,
            cleanup_policy="All" if spec.run_policy.clean_up_workers else "None",
            # A hung ColossalAIJob fails whatever onHang says: it restarts no pod.
            hang=hang_policy(spec.run_policy.progress, restarts=False),
            **run_mode_view(spec.run_mode),
        )

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        return succeeded_with(replicas.get(self.deciding_replica(job)))

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return ("launcher", 0)

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        return WORKERS_ONLY

    def build_pod(self, job: Job, type_: str, index: int, mode: PodMode, svc: Services) -> Obj:
        if type_ == "launcher":
            return build.build_launcher(job, mode)
        return build.build_worker(job, index, mode)

    def extras(self, job: Job) -> list[Obj]:
        return [build.build_service(job), build.hostfile_configmap(job)]

    def ssh_secret(self, job: Job, private_key: str, public_key: str) -> Obj | None:
        return ssh.ssh_secret(job, private_key, public_key, build.auth_dir(job))

    def tensorboard(self, job: Job) -> Obj | None:
        return tensorboard.for_job(job, job.spec.tensorboard_spec)

    def from_flags(self, request: JobRequest) -> Obj:
        """A launcher of the image, and workers running the script with a process per GPU."""
        argv = flags.command(request)
        container = flags.container(self.training_containers[0], request, None)
        spec: Obj = {
            "launcher": {"image": request.image},
            "worker": {
                "replicas": request.workers,
                "procPerWorker": request.slots,
                "command": flags.script(argv),
                "template": flags.template(container, request),
            },
        }
        return flags.t9k_extras(spec, request)
