"""Every registered kind's hooks, by one parametrised suite.

Each kind is described once in :data:`CASES` (its ``HOOKS`` in
tests/kinds/<kind>.py: a valid job, the roles it reads, which replica decides
success, a bad field and its path); the tests then hold for all of them:
defaults come from the API model (what the CRD tells users), the run mode is
read, the deciding replica's success is the job's, a bad spec names the user's
field, and every field the API stores but the operator does not act on is
reported.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from t9k_operator.integrations.tensorboard.integration import wanted
from t9k_operator.kinds.asks import HangPolicy, SchedulingRequest
from t9k_operator.kinds.contract import JobKind, PodMode, read
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.registry import KINDS, by_kind
from t9k_operator.kinds.view import Override
from tests.kinds import kind_table
from tests.kinds.common import HooksCase

CASES: dict[str, HooksCase] = kind_table("HOOKS")
"""Each kind's valid job and what its hooks read of it: its ``HOOKS`` in
tests/kinds/<kind>.py."""
NAMES = [kind.crd.kind for kind in KINDS]


def test_every_registered_kind_is_described_here() -> None:
    assert sorted(CASES) == sorted(NAMES)


def job_of(name: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    kind = by_kind(name)
    return {
        "apiVersion": f"{kind.crd.group}/{kind.crd.version}",
        "kind": name,
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "generation": 3},
        "spec": copy.deepcopy(spec if spec is not None else CASES[name].spec),
    }


@pytest.fixture(params=NAMES)
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def kind(name: str) -> JobKind[Any]:
    return by_kind(name)


def test_view_reads_roles_and_takes_its_defaults_from_the_model(
    name: str, kind: JobKind[Any]
) -> None:
    view = read(kind, job_of(name)).view
    assert view.spec_error is None
    assert view.roles == CASES[name].roles
    assert (view.kind, view.name, view.namespace, view.generation) == (name, "j", "ns", 3)
    for attr, value in CASES[name].defaults.items():
        assert getattr(view, attr) == value, attr
    assert not view.debug and not view.paused


@pytest.mark.parametrize("name", [n for n in NAMES if CASES[n].run_mode])
def test_view_reads_debug_and_pause(name: str) -> None:
    """(MSJob's API, the MindSpore operator's, has no runMode.)"""
    kind = by_kind(name)
    role = CASES[name].roles[-1].type
    spec = copy.deepcopy(CASES[name].spec)
    spec["runMode"] = {
        "debug": {"enabled": True, "replicaSpecs": [{"type": role, "command": ["sleep", "1"]}]},
    }
    debug = read(kind, job_of(name, spec)).view
    assert debug.debug and debug.debug_overrides == (Override(role, ("sleep", "1")),)
    # (args need a command beside them for the kinds whose pods run the operator's
    # own scripts: api/deepspeed.py, api/colossalai.py.)
    resume = {"type": role, "command": ["python", "train.py"], "args": ["--resume"]}
    spec["runMode"] = {"pause": {"enabled": True, "resumeSpecs": [resume]}}
    paused = read(kind, job_of(name, spec)).view
    assert paused.paused
    assert paused.resume_overrides == (Override(role, ("python", "train.py"), ("--resume",)),)


def test_the_deciding_replica_decides_success(name: str, kind: JobKind[Any]) -> None:
    view = read(kind, job_of(name)).view
    others = {
        (r.type, i): ReplicaState(f"{r.type}-{i}", f"u-{r.type}-{i}", "Running")
        for r in view.roles
        for i in range(r.replicas)
    }
    assert kind.outcome(view, others) is None
    decides = CASES[name].decides
    done = {**others, decides: ReplicaState("d", "u-d", "Succeeded")}
    outcome = kind.outcome(view, done)
    assert outcome is not None and outcome.phase == "Succeeded"


def test_a_bad_spec_names_the_users_field(name: str, kind: JobKind[Any]) -> None:
    where, value, path = CASES[name].bad
    spec = copy.deepcopy(CASES[name].spec)
    node: Any = spec
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    view = read(kind, job_of(name, spec)).view
    assert view.spec_error is not None and path in view.spec_error, view.spec_error
    assert "constrained" not in view.spec_error and view.roles == ()


def _set(spec: dict[str, Any], where: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    node: Any = spec
    for part in where[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[where[-1]] = value
    return spec


def test_fields_stored_but_not_acted_on_are_reported(name: str, kind: JobKind[Any]) -> None:
    assert kind.fields_not_acted_on(job_of(name)) == []
    case = CASES[name].not_acted_on
    if case is None:
        assert not getattr(kind, "not_acted_on", ()), "give the case a field not acted on"
        return
    where, value = case
    reported = kind.fields_not_acted_on(job_of(name, _set(CASES[name].spec, where, value)))
    # Exactly the field set, by its path (an item of a list as the list's []).
    parts = ["spec"]
    for part in where:
        if isinstance(part, int):
            parts[-1] += "[]"
        else:
            parts.append(part)
    assert reported == [".".join(parts)]


TENSORBOARD_SPEC = {"image": "tb", "trainingLogFilesets": ["t9k://pvc/logs/train"]}


@pytest.mark.parametrize("name", [n for n in NAMES if CASES[n].tensorboard])
def test_a_t9k_jobs_tensorboard_spec_is_acted_on(name: str) -> None:
    kind = by_kind(name)
    stored = job_of(name, {**CASES[name].spec, "tensorboardSpec": TENSORBOARD_SPEC})
    assert kind.fields_not_acted_on(stored) == []
    read_ = read(kind, stored)
    parsed = read_.job
    assert parsed is not None
    tb = wanted(parsed, read_.view)
    assert tb is not None and tb["kind"] == "TensorBoard" and tb["spec"] == TENSORBOARD_SPEC
    assert tb["metadata"]["ownerReferences"][0]["kind"] == name
    plain = read(kind, job_of(name))
    assert plain.job is not None and wanted(plain.job, plain.view) is None


def test_a_kind_without_the_field_asks_for_no_tensorboard() -> None:
    read_ = read(by_kind("MSJob"), job_of("MSJob"))
    parsed = read_.job
    assert parsed is not None and not hasattr(parsed.spec, "tensorboard_spec")
    assert wanted(parsed, read_.view) is None


def test_every_kind_builds_a_pod_for_each_of_its_replicas(name: str, kind: JobKind[Any]) -> None:
    parsed = read(kind, job_of(name))
    job, view = parsed.job, parsed.view
    assert job is not None
    services = {
        s["metadata"]["name"]: {**s, "spec": {**s["spec"], "clusterIP": "10.0.0.9"}}
        for s in kind.extras(job)
        if s["kind"] == "Service"
    }
    for role in view.roles:
        for index in range(role.replicas):
            pod = kind.build_pod(job, role.type, index, PodMode(), services)
            assert pod["kind"] == "Pod" and pod["spec"]["restartPolicy"] == "Never"
            labels = pod["metadata"]["labels"]
            assert labels["t9k.dev/replica-type"] == role.type
            assert labels["t9k.dev/replica-index"] == str(index)
            assert pod["metadata"]["ownerReferences"][0]["uid"] == "u"
    secret = kind.ssh_secret(job, "PRIVATE", "PUBLIC")
    assert (secret is not None) == kind.uses_ssh


NEVER_RESTART = tuple(kind for kind, never in kind_table("NEVER_RESTARTS").items() if never)
"""The kinds that restart no pod (a rank cannot rejoin their launcher's run)."""


@pytest.mark.parametrize("name", [n for n in NAMES if n not in NEVER_RESTART])
def test_view_reads_the_restart_scope_of_every_kind_that_restarts(name: str) -> None:
    """runPolicy.restartScope, the same field for every kind that restarts pods
    (MSJob's run policy too; ColossalAIJob and MPIJob never restart a pod and have no
    such field)."""
    kind = by_kind(name)
    assert read(kind, job_of(name)).view.restart_scope == "Replica"
    spec = copy.deepcopy(CASES[name].spec)
    spec.setdefault("runPolicy", {})["restartScope"] = "Job"
    assert read(kind, job_of(name, spec)).view.restart_scope == "Job"


@pytest.mark.parametrize("name", NAMES)
def test_view_reads_the_hang_policy_of_every_kind(name: str) -> None:
    """runPolicy.progress, the same field for every kind; ColossalAIJob and MPIJob
    restart no pod, so a hung one fails whatever onHang says."""
    kind = by_kind(name)
    assert read(kind, job_of(name)).view.ask(HangPolicy) is None
    spec = copy.deepcopy(CASES[name].spec)
    spec.setdefault("runPolicy", {})["progress"] = {
        "hangTimeoutSeconds": 900,
        "onHang": "Restart",
    }
    on_hang = "Fail" if name in NEVER_RESTART else "Restart"
    assert read(kind, job_of(name, spec)).view.ask(HangPolicy) == HangPolicy(900, on_hang)


def test_template_metadata_stored_but_not_acted_on_is_reported_by_its_path(
    name: str, kind: JobKind[Any]
) -> None:
    """name, namespace and finalizers of a pod template's metadata are accepted (as
    controller-gen's embedded ObjectMeta takes them) but not acted on: the pods
    keep the operator's names, in the job's namespace. Labels and annotations are
    copied, so not reported."""
    where, named = CASES[name].last_template
    meta = {
        "name": "mine",
        "namespace": "elsewhere",
        "finalizers": ["example.com/keep"],
        "labels": {"a": "b"},
        "annotations": {"c": "d"},
    }
    spec = _set(CASES[name].spec, (*where, "metadata"), meta)
    assert kind.fields_not_acted_on(job_of(name, spec)) == [
        f"{named}.metadata.name",
        f"{named}.metadata.namespace",
        f"{named}.metadata.finalizers",
    ]
    # The pods keep the operator's names, in the job's namespace, with no finalizer.
    parsed = read(kind, job_of(name, spec))
    job, view = parsed.job, parsed.view
    assert job is not None
    services = {
        s["metadata"]["name"]: {**s, "spec": {**s["spec"], "clusterIP": "10.0.0.9"}}
        for s in kind.extras(job)
        if s["kind"] == "Service"
    }
    for role in view.roles:
        pod = kind.build_pod(job, role.type, 0, PodMode(), services)
        assert pod["metadata"]["namespace"] == "ns", role
        assert pod["metadata"]["name"].startswith("j-"), role
        assert "finalizers" not in pod["metadata"], role
    # Labels and annotations alone: nothing to report.
    labelled = _set(CASES[name].spec, (*where, "metadata"), {"labels": {"a": "b"}})
    assert kind.fields_not_acted_on(job_of(name, labelled)) == []


@pytest.mark.parametrize("name", NAMES)
def test_what_a_job_asks_is_read_and_rewritten_by_its_type(name: str) -> None:
    """Every kind states a scheduling request; one rewritten (as Kueue takes the
    queue) leaves the job's other asks and the view it came from as they were."""
    spec = copy.deepcopy(CASES[name].spec)
    spec.setdefault("runPolicy", {})["progress"] = {"hangTimeoutSeconds": 900}
    view = read(by_kind(name), job_of(name, spec)).view
    request = view.ask(SchedulingRequest)
    assert request is not None and request.pods_at_once > 0
    rewritten = view.asking(replace(request, queue="elsewhere"))
    assert rewritten.ask(SchedulingRequest) == replace(request, queue="elsewhere")
    assert view.ask(SchedulingRequest) == request
    assert rewritten.ask(HangPolicy) == view.ask(HangPolicy) == HangPolicy(900)
    assert replace(view, asks={}).ask(SchedulingRequest) is None
