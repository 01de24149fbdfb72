"""PyTorchTrainingJob: the kind's hooks for the shared engine.

Success follows the master (``master-0``, else replica 0 of the first spec);
any replica failed for good fails the job at once (the engine does that);
debug pods run ``sleep inf`` unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_operator.api.pytorch import PyTorchTrainingJobObject
from t9k_operator.builders import pytorch as build
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

RESOURCE = Resource("batch.tensorstack.dev", "v1beta1", "pytorchtrainingjobs",
                    "PyTorchTrainingJob")  # fmt: skip


def spec_error(job: Mapping[str, Any]) -> str | None:
    """What admission did not stop: a spec the models refuse (an object stored
    before the CRD's rules, say), or a template without a container."""
    error = model_error(PyTorchTrainingJobObject, job)
    if error:
        return error
    for i, rs in enumerate(build.replica_specs(job)):
        containers = ((rs.get("template") or {}).get("spec") or {}).get("containers") or []
        if not containers:
            return (f"spec.replicaSpecs[{i}].template.spec.containers is empty: "
                    "give the replica a container to run")  # fmt: skip
    if not build.replica_specs(job):
        return "spec.replicaSpecs is empty: add at least one replica spec"
    return None


class PyTorchKind(KindDefaults):
    not_acted_on: tuple[str, ...] = (
        "spec.scheduler",
        "spec.tensorboardSpec",
        "spec.replicaSpecs[].scalingWeight",
    )
    resource = RESOURCE
    training_containers: tuple[str, ...] = build.TRAINING_CONTAINERS
    debug_command: tuple[str, ...] = build.DEBUG_COMMAND

    def view(self, job: Mapping[str, Any]) -> JobView:
        error = spec_error(job)
        roles = () if error else tuple(
            Role(t, n, str(rs.get("restartPolicy") or "OnFailure"))
            for t, n, rs in build.replica_counts(job)
        )  # fmt: skip
        return job_view(
            RESOURCE.kind, job, roles, error,
            **run_policy_view(job),
        )  # fmt: skip

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        master_type = next((r.type for r in job.roles if r.type == "master" and r.replicas), None)
        if master_type is None:
            master_type = next((r.type for r in job.roles if r.replicas), None)
        return succeeded_with(replicas.get((master_type, 0)) if master_type else None)

    def build_pod(self, job: Mapping[str, Any], replica_type: str, index: int,
                  mode: PodMode, services: Mapping[str, Obj]) -> Obj:  # fmt: skip
        return build.build_pod(
            job, replica_type, index, command=mode.command, args=mode.args,
            skip_init_containers=mode.skip_init_containers, debug=mode.debug,
        )  # fmt: skip

    def extras(self, job: Mapping[str, Any]) -> list[Obj]:
        return [build.build_service(job)]
