"""What the kinds' test data modules share: the record types of their entries
(one per test that reads a record of each kind) and the helpers that write
their jobs' pod templates.

Nothing here is about one kind: a kind's own data is in its module
(``tests/kinds/<kind>.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from t9k_operator.api.crd import CrdInfo, JobObject
from t9k_operator.api.rules import Rule
from t9k_operator.kinds.view import Role
from tests.unit.api.helpers import load

# -- records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCase:
    """A kind's API model and its examples (tests/unit/api/test_job_objects.py)."""

    crd: CrdInfo
    model: type[JobObject[Any, Any]]
    status: type[Any]
    examples: dict[str, str]
    statuses: dict[str, str]
    job: str
    templates: Callable[[dict[str, Any]], list[Any]]  # a raw spec's pod templates


@dataclass
class HooksCase:
    """A kind's valid job and what its hooks read of it (tests/unit/reconcilers/test_kinds.py)."""

    spec: dict[str, Any]
    roles: tuple[Role, ...]
    decides: tuple[str, int]  # the replica whose success is the job's
    bad: tuple[tuple[str | int, ...], Any, str]  # where in spec, what, the path named
    defaults: dict[str, Any]  # JobView fields of the plain job, as the model's defaults
    # where in spec a field stored but not acted on is, and a value for it
    not_acted_on: tuple[tuple[str | int, ...], Any] | None = None
    run_mode: bool = True  # the kind has spec.runMode
    tensorboard: bool = True  # the kind has spec.tensorboardSpec
    # where in spec its last pod template is, and the path a Warning names it by
    last_template: tuple[tuple[str | int, ...], str] = ((), "")


@dataclass(frozen=True)
class CrdCase:
    """What a kind's CRD does at admission (tests/integration/test_crd_kinds.py)."""

    crd: CrdInfo
    job: str  # the name of the example job
    example: str  # a valid job's YAML
    examples: dict[str, str]  # every example of the docs and users' files, each a job named `job`
    invalid: dict[str, tuple[str, list[str]]]  # case -> (YAML, fragments the refusal names)
    columns: list[str]  # `kubectl get` header
    status: dict[str, Any]  # a status the subresource must take whole
    row: list[str]  # the first columns of `kubectl get` once that status is stored
    paused: str | None = None  # a paused job with resumeSpecs (T9k kinds)


@dataclass(frozen=True)
class RuleCase:
    """A rule, the model it is registered on, a passing and a failing object of
    that model, and where in the object the rule's node is
    (tests/unit/api/test_rules.py)."""

    rule: Rule[Any]
    model: type[BaseModel]
    good: dict[str, Any]
    bad: dict[str, Any]
    node: Callable[[dict[str, Any]], Any] = field(default=lambda obj: obj)
    old: dict[str, Any] | None = None
    """For a transition rule: the old object (the CEL's oldSelf), against which
    ``bad`` breaks the rule and ``good`` keeps it."""

    @property
    def id(self) -> str:
        return self.rule.message[:60]


T9K_COLUMNS = ["NAME", "PHASE", "REASON", "READY", "REPLICAS", "RESTARTS", "PROGRESS", "ETA", "AGE"]
"""The `kubectl get` header of a T9k kind (:attr:`CrdCase.columns`)."""


def crd_status(examples: dict[str, str], **more: Any) -> dict[str, Any]:
    """A status of every example status's fields, and ``more`` (:attr:`CrdCase.status`)."""
    status: dict[str, Any] = {}
    for text in examples.values():
        status.update(load(text))
    return {**status, **more}


# -- the rules' examples (RuleCase) -----------------------------------------------------

WORKER_TEMPLATE = {"spec": {"containers": [{"name": "worker", "image": "train"}]}}
"""A pod template of one container named worker, in the rules' examples."""

DEBUG = {"runMode": {"debug": {"enabled": True}}}
"""A spec's debug mode on (its other fields unchanged), in the rules' examples."""

LONG = "j" * 55
"""A job name: <name>-worker-<i> and <name>-launcher fit in 63 characters; longer do not."""


def merged(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``base`` with top-level keys replaced (None: removed)."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def wire_job(kind: str, spec: dict[str, Any], name: str = "job") -> dict[str, Any]:
    """A whole object of ``kind`` named ``name``, as the API server sends it."""
    return {"apiVersion": "v", "kind": kind, "metadata": {"name": name}, "spec": spec}


def at_key(name: str) -> Callable[[dict[str, Any]], Any]:
    """The node of a rule that sits at the object's field ``name``."""
    return lambda obj: obj[name]


# -- pod templates -----------------------------------------------------------------------


def template(container: str) -> dict[str, Any]:
    """A pod template of one container (the unit tests' jobs)."""
    return {"spec": {"containers": [{"name": container, "image": "img"}]}}


def _fuzz_container(name: str, image: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "command": ["python", "train.py"],
        "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 2222}],
        "resources": {"limits": {"cpu": "1"}},
    }


def fuzz_template(name: str, image: str) -> dict[str, Any]:
    """A pod template the fuzzer enriches (tests/integration/test_fuzz_specs.py)."""
    meta = {"labels": {"team": "a"}, "annotations": {"kwok.t9k.dev/run-duration": "2s"}}
    return {"metadata": meta, "spec": {"containers": [_fuzz_container(name, image)]}}


def replica_specs_templates(spec: dict[str, Any]) -> list[tuple[Any, Any]]:
    """The (type, template) pairs of a (mutated) spec's ``replicaSpecs`` list."""
    specs = spec.get("replicaSpecs")
    if not isinstance(specs, list):
        return []
    return [(r.get("type"), r.get("template")) for r in specs if isinstance(r, dict)]


def worker_templates(spec: dict[str, Any]) -> list[tuple[Any, Any]]:
    """The (type, template) pair of a (mutated) spec's ``worker``."""
    worker = spec.get("worker")
    return [("worker", worker.get("template"))] if isinstance(worker, dict) else []


def ms_replica_specs_templates(spec: dict[str, Any]) -> list[tuple[Any, Any]]:
    """The (role, template) pairs of a (mutated) spec's ``msReplicaSpecs`` map."""
    roles = spec.get("msReplicaSpecs")
    if not isinstance(roles, dict):
        return []
    return [(k, r.get("template")) for k, r in roles.items() if isinstance(r, dict)]


GPUS = {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}
"""A pod's 8 GPUs (tests/integration/test_gang_jobs.py)."""

Notes = dict[str, str]
"""A pod template's annotations."""


def gpu_template(container: str, notes: Notes) -> dict[str, Any]:
    """A pod template of one container of 8 GPUs, annotated ``notes``."""
    return {
        "metadata": {"annotations": dict(notes)},
        "spec": {"containers": [{"name": container, "image": "img", "resources": GPUS}]},
    }


def t9k_scheduler(spec: dict[str, Any], queue: str | None, priority: int | None) -> None:
    """The queue and priority a T9k kind asks for, in ``spec.scheduler``."""
    ask = {"t9kScheduler": {"queue": queue or "default"}} if queue or priority is not None else {}
    if priority is not None:
        ask["t9kScheduler"]["priority"] = priority
    if ask:
        spec["scheduler"] = ask
