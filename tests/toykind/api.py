"""The ToyJob kind's API (toy.t9k.dev/v1): its models and its CRD.

ToyJob is a test kind that lives only in the tests: ``spec.worker.replicas``
workers, each a pod of ``spec.worker.template``, under the T9k jobs' shared
``spec.runPolicy``. It is registered by an entry point alone (see
tests/toy_plugin.py), which is how it proves that a kind is its own files
plus one registry line.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    CrdInfo,
    JobObject,
    last_pod_name_fits,
    pod_name_length_rule,
    worker_pod_name_fits_cel,
)
from t9k_operator.api.managed_by import MANAGED_BY_IMMUTABLE_RULE, ManagedBy, managed_by_field
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import MAX_REPLICAS
from t9k_operator.api.specs import RunPolicy, run_policy_field
from t9k_operator.api.status import JobStatus
from t9k_operator.api.template import PodTemplate, pod_template_field

GROUP = "toy.t9k.dev"
VERSION = "v1"
KIND = "ToyJob"
PLURAL = "toyjobs"
WORKER = "worker"
"""The only replica type; pods are named ``<job>-worker-<i>``."""

MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-worker-<index> must fit in 63 characters"
)


class WorkerSpec(T9kModel):
    """The workers: how many, and their pod template."""

    replicas: int = Field(default=1, ge=0, le=MAX_REPLICAS, description="Number of workers.")
    template: PodTemplate = pod_template_field("workers")


class ToyJobSpec(T9kModel):
    """Desired state of a ToyJob."""

    worker: WorkerSpec = Field(description="The workers; the job succeeds with worker-0.")
    run_policy: RunPolicy = run_policy_field()
    managed_by: ManagedBy | None = managed_by_field()


class ToyJobStatus(JobStatus):
    """Observed state of a ToyJob: the engine's (the toy integration's part is
    its own, merged in by the CRD generator)."""


class ToyJobObject(JobObject[ToyJobSpec, ToyJobStatus]):
    """A whole ToyJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        JOB_NAME_RULE,
        pod_name_length_rule(worker_pod_name_fits_cel(WORKER), MSG_POD_NAME_LENGTH),
        MANAGED_BY_IMMUTABLE_RULE,
    )

    def pod_names_fit(self) -> bool:
        return last_pod_name_fits(self.name, WORKER, self.spec.worker.replicas)


CRD = CrdInfo(
    group=GROUP,
    version=VERSION,
    kind=KIND,
    plural=PLURAL,
    singular="toyjob",
    short_names=("toyj",),
    categories=("t9k",),
    spec_model=ToyJobSpec,
    status_model=ToyJobStatus,
    description="ToyJob runs identical workers; a test kind registered by an entry point.",
    root_rules=ToyJobObject.rules,
)
