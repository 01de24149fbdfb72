"""DeepSpeedJob: the kind's hooks for the shared engine.

One replica type, ``worker``. worker-0 runs the launcher, so its exit decides
the job: success when it succeeds; a failure the restart policy does not
recover fails the job, as does any other worker failing for good (the engine
does both, at once and with the reason). Debug pods run ``/usr/sbin/sshd -D``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_operator.api.deepspeed import DeepSpeedJobObject
from t9k_operator.builders import deepspeed as build
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

RESOURCE = Resource("batch.tensorstack.dev", "v1beta1", "deepspeedjobs", "DeepSpeedJob")


def restart_policy(job: Mapping[str, Any]) -> str:
    """``spec.worker.restartPolicy``, else the template's, else OnFailure.

    The pod template's own value is only read here: pods are always created
    with ``restartPolicy: Never`` and the operator does the restarting.
    """
    worker = (job.get("spec") or {}).get("worker") or {}
    template_policy = ((worker.get("template") or {}).get("spec") or {}).get("restartPolicy")
    return str(worker.get("restartPolicy") or template_policy or "OnFailure")


def spec_error(job: Mapping[str, Any]) -> str | None:
    error = model_error(DeepSpeedJobObject, job)
    if error:
        return error
    spec = job.get("spec") or {}
    worker = spec.get("worker") or {}
    containers = ((worker.get("template") or {}).get("spec") or {}).get("containers") or []
    if not containers:
        return ("spec.worker.template.spec.containers is empty: "
                "give the worker a container to run")  # fmt: skip
    debug = ((spec.get("runMode") or {}).get("debug") or {}).get("enabled")
    run = (spec.get("config") or {}).get("run") or {}
    if not debug and sum(k in run for k in ("python", "module", "exec")) != 1:
        return "spec.config.run needs exactly one of python, module or exec"
    return None


class DeepSpeedKind(KindDefaults):
    not_acted_on: tuple[str, ...] = ("spec.scheduler",)
    resource = RESOURCE
    training_containers: tuple[str, ...] = build.TRAINING_CONTAINERS
    debug_command: tuple[str, ...] = build.DEBUG_COMMAND
    uses_ssh = True

    def view(self, job: Mapping[str, Any]) -> JobView:
        error = spec_error(job)
        roles = () if error else (Role("worker", build.worker_count(job), restart_policy(job)),)
        return job_view(
            RESOURCE.kind, job, roles, error,
            **run_policy_view(job),
        )  # fmt: skip

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        return succeeded_with(replicas.get(("worker", 0)))

    def build_pod(self, job: Mapping[str, Any], replica_type: str, index: int,
                  mode: PodMode, services: Mapping[str, Obj]) -> Obj:  # fmt: skip
        return build.build_pod(
            job, index, command=mode.command, args=mode.args,
            skip_init_containers=mode.skip_init_containers, debug=mode.debug,
        )  # fmt: skip

    def extras(self, job: Mapping[str, Any]) -> list[Obj]:
        return [build.build_service(job), build.hostfile_configmap(job)]

    def ssh_secret(self, job: Mapping[str, Any], private_key: str, public_key: str) -> Obj | None:
        return build.ssh_secret(job, private_key, public_key)
