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
from typing import Any

from t9k_operator.api.colossalai import ColossalAIJobObject
from t9k_operator.builders import colossalai as build
from t9k_operator.builders import ssh
from t9k_operator.kube import Resource
from t9k_operator.reconcilers.engine import JobView, Outcome, PodMode, Role
from t9k_operator.reconcilers.pods import ReplicaState
from t9k_operator.reconcilers.t9k import (
    KindDefaults,
    job_view,
    model_error,
    run_policy_view,
    succeeded_with,
)

Obj = dict[str, Any]

RESOURCE = Resource("batch.tensorstack.dev", "v1beta1", "colossalaijobs", "ColossalAIJob")
WORKERS_ONLY = frozenset({"worker"})


def spec_error(job: Mapping[str, Any]) -> str | None:
    error = model_error(ColossalAIJobObject, job)
    if error:
        return error
    spec = job.get("spec") or {}
    if not (spec.get("launcher") or {}).get("image"):
        return "spec.launcher.image is empty: name the image the launcher runs colossalai from"
    containers = (((spec.get("worker") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    )
    if not containers:
        return "spec.worker.template.spec.containers is empty: give the worker a container"
    return None


class ColossalAIKind(KindDefaults):
    not_acted_on: tuple[str, ...] = ("spec.scheduler",)
    resource = RESOURCE
    training_containers: tuple[str, ...] = (*build.TRAINING_CONTAINERS, "launcher")
    debug_command: tuple[str, ...] = build.DEBUG_COMMAND
    uses_ssh = True

    def view(self, job: Mapping[str, Any]) -> JobView:
        error = spec_error(job)
        roles = () if error else (
            Role("launcher", 1, "Never"), Role("worker", build.worker_count(job), "Never"),
        )  # fmt: skip
        common = run_policy_view(job)
        policy = (job.get("spec") or {}).get("runPolicy") or {}
        common["cleanup_policy"] = "All" if policy.get("cleanUpWorkers") else "None"
        return job_view(
            RESOURCE.kind, job, roles, error,
            **common,
        )  # fmt: skip

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        return succeeded_with(replicas.get(("launcher", 0)))

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        return WORKERS_ONLY

    def build_pod(self, job: Mapping[str, Any], replica_type: str, index: int,
                  mode: PodMode, services: Mapping[str, Obj]) -> Obj:  # fmt: skip
        if replica_type == "launcher":
            return build.build_launcher(job, command=mode.command, args=mode.args)
        return build.build_worker(
            job, index, command=mode.command, args=mode.args,
            skip_init_containers=mode.skip_init_containers,
        )  # fmt: skip

    def extras(self, job: Mapping[str, Any]) -> list[Obj]:
        return [build.build_service(job), build.hostfile_configmap(job)]

    def ssh_secret(self, job: Mapping[str, Any], private_key: str, public_key: str) -> Obj | None:
        return ssh.ssh_secret(job, private_key, public_key, build.auth_dir(job))
