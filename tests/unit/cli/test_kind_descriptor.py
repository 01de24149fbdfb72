"""Every registered kind gives the t9k command and the SDK all they read of it
(``kinds/command.py``): :func:`problems` names what a kind lacks, and is empty
for each kind of :data:`~t9k_operator.kinds.registry.KINDS`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.pytorch import CRD
from t9k_operator.builders.common import NORMAL
from t9k_operator.builders.pytorch import FACTS, Job
from t9k_operator.kinds import registry
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.pytorch import PyTorchKind
from t9k_operator.objects import Obj, training_container_index
from t9k_operator.resources import Resource
from t9k_operator.sdk import build_job

WORKERS, GPUS = 3, 2


def request(kind: str, **fields: Any) -> JobRequest:
    return JobRequest(kind, "train", "img:1", ["python", "train.py"], **fields)


def _stored(kind: JobKind[Any], spec: Obj) -> Any:
    """A job of the kind with ``spec``, as the API server would store it."""
    return kind.model.from_dict(
        {
            "apiVersion": kind.crd.api_version,
            "kind": kind.crd.kind,
            "metadata": {"name": "train", "namespace": "team-a", "uid": "u-1"},
            "spec": spec,
        }
    )


def services(kind: JobKind[Any], job: Any) -> dict[str, Obj]:
    """The job's Services by name, each with a ClusterIP (MSJob's pods need the scheduler's)."""
    return {
        svc["metadata"]["name"]: {**svc, "spec": {**svc.get("spec", {}), "clusterIP": "10.0.0.1"}}
        for svc in kind.extras(job)
        if svc.get("kind") == "Service"
    }


def problems(kind: JobKind[Any]) -> list[str]:
    """What the kind lacks of what the CLI and the SDK read (empty: nothing)."""
    found: list[str] = []
    cli_name = getattr(kind, "cli_name", None)
    if not isinstance(cli_name, str) or not cli_name or cli_name != cli_name.lower():
        return [f"cli_name: a lower-case name for the command line, not {cli_name!r}"]
    try:
        if registry.by_name(cli_name) is not kind:
            found.append(f"cli_name {cli_name!r} names another served kind first")
    except KeyError:
        found.append(f"cli_name {cli_name!r}: not registered")
    crd = kind.crd
    if kind.resource != Resource(crd.group, crd.version, crd.plural, crd.kind, crd.namespaced):
        found.append("resource: not the REST resource of the kind's CRD")
    pausable = getattr(kind, "pausable", None)
    has_run_mode = "run_mode" in crd.spec_model.model_fields
    if not isinstance(pausable, bool) or pausable != has_run_mode:
        found.append(f"pausable is {pausable!r}, but spec.runMode is {has_run_mode}")
    if not kind.training_containers:
        found.append("training_containers: empty")
    try:
        job = _stored(kind, kind.from_flags(request(cli_name, workers=WORKERS, gpus=GPUS)))
    except (ValidationError, NotImplementedError, AttributeError, TypeError) as exc:
        return [*found, f"from_flags: no spec the kind's own model accepts ({exc})"]
    roles = kind.view(job).roles
    if sum(r.replicas for r in roles if r.type.lower() == "worker") != WORKERS:
        found.append(f"from_flags: not {WORKERS} workers but {roles}")
    try:
        type_, index = kind.deciding_replica(kind.view(job))
    except (NotImplementedError, AttributeError) as exc:
        return [*found, f"deciding_replica: missing ({exc})"]
    if not any(r.type == type_ and 0 <= index < r.replicas for r in roles):
        found.append(f"deciding_replica: {(type_, index)} is none of {roles}")
    try:
        gpus = kind.gpus(job)
    except (NotImplementedError, AttributeError) as exc:
        return [*found, f"gpus: missing ({exc})"]
    # One container per replica; the workers' have the GPUs, and so has an MPIJob's
    # launcher, a pod of the workers' template (its manual: every replica gets its resources).
    launcher = GPUS if crd.kind == "MPIJob" else 0
    if gpus != WORKERS * GPUS + launcher:
        found.append(f"gpus: {gpus}, not the {WORKERS} x {GPUS} + {launcher} its pods ask for")
    for pod in (kind.build_pod(job, r.type, 0, NORMAL, services(kind, job)) for r in roles):
        containers = pod["spec"]["containers"]
        name = containers[training_container_index(pod, kind.training_containers)]["name"]
        if name not in kind.training_containers:
            found.append(f"from_flags: its training container {name} is not a training container")
    return found


@pytest.mark.parametrize("kind", registry.KINDS, ids=[k.crd.kind for k in registry.KINDS])
def test_every_kind_gives_the_cli_and_the_sdk_what_they_read(kind: JobKind[Any]) -> None:
    assert problems(kind) == []
    job = build_job(request(kind.cli_name))
    assert registry.of_object(job) is kind and registry.job_kind_of(job) is kind


def test_the_cli_names_and_the_served_names_are_all_different() -> None:
    names = [k.cli_name for k in registry.served()]
    assert len(set(names)) == len(names)
    assert registry.by_name("tensorboard") is registry.TENSORBOARD
    assert registry.TENSORBOARD.resource.plural == registry.TENSORBOARD.crd.plural


class Nameless(PyTorchKind, crd=CRD, model=Job, facts=FACTS):
    cli_name = ""


class Unpaused(PyTorchKind, crd=CRD, model=Job, facts=FACTS):
    pausable = False


class NoSpec(PyTorchKind, crd=CRD, model=Job, facts=FACTS):
    def from_flags(self, request: JobRequest) -> Obj:
        return {"replicaSpecs": "one"}


class NoDecider(PyTorchKind, crd=CRD, model=Job, facts=FACTS):
    def deciding_replica(self, job: Any) -> tuple[str, int]:
        return ("chief", 0)


class GpuBlind(PyTorchKind, crd=CRD, model=Job, facts=FACTS):
    def gpus(self, job: Any) -> int:
        return 0


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        (Nameless(), "cli_name"),
        (Unpaused(), "pausable"),
        (NoSpec(), "from_flags"),
        (NoDecider(), "deciding_replica"),
        (GpuBlind(), "gpus"),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_a_kind_that_lacks_something_is_named(kind: JobKind[Any], named: str) -> None:
    assert any(p.startswith(named) for p in problems(kind)), problems(kind)
