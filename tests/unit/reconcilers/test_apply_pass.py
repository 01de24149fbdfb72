"""One reconcile pass: it plans, then applies, with the fake at the kube/ boundary.

What is checked: the plan is one ordered list of actions (the status first,
the pods last); a pass writes the job's status at most once, whatever is
refused; a refused child is recorded and the next pass plans from it; each pod
is built once per pass, the integrations' templates reading the same builds.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pytest_mock import MockerFixture

from t9k_operator.integrations.tensorboard.integration import JobTensorBoard
from t9k_operator.kinds.contract import ChildNotReady
from t9k_operator.kinds.view import JobView
from t9k_operator.kube import Forbidden, Invalid, ServerError
from t9k_operator.reconcilers.pipeline import plan as planning
from t9k_operator.reconcilers.pipeline.contract import (
    Action,
    Base,
    Caches,
    JobInput,
    Templates,
)
from t9k_operator.resources import PODS, SERVICES
from t9k_operator.runtime.controller import Result
from tests.fakes import FakeClock
from tests.unit.reconcilers.test_job_reconciler import JOBS, KINDS, NS, Harness, held_pod
from tests.unit.reconcilers.test_job_tensorboard import with_tensorboard


def status_writes(h: Harness) -> int:
    return h.fake.writes.count(("replace_status", h.kind.crd.kind, "j"))


def passes(h: Harness, n: int = 5) -> list[int]:
    """Reconcile ``n`` times, the caches catching up in between; the job's
    status writes of each pass."""
    out = []
    for _ in range(n):
        before = status_writes(h)
        h.reconcile()
        out.append(status_writes(h) - before)
        h.sync()
    return out


def _clash(h: Harness, name: str) -> None:
    h.fake.put(PODS, held_pod(name, "OtherJob", "x", "o"))


SCENARIOS = {
    "fresh": lambda h: None,
    "pod refused, may cure": lambda h: h.fake.fail_next("create", "Pod", ServerError("quota")),
    "pod refused as invalid": lambda h: h.fake.fail_next("create", "Pod", Invalid("spec.x: bad")),
    "service refused": lambda h: h.fake.fail_next("create", "Service", ServerError("slow")),
    "pod name held by another": lambda h: _clash(h, JOBS[h.kind.crd.kind][2][-1]),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_pass_writes_the_status_at_most_once(kind: str, scenario: str) -> None:
    h = Harness(kind)
    SCENARIOS[scenario](h)
    assert all(n <= 1 for n in passes(h)), h.fake.writes


CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


def served_status_defaults(h: Harness) -> dict[str, Any]:
    """The top-level status defaults of the kind's CRD as generated (what the
    API server fills into a status written without them)."""
    crd = h.kind.crd
    doc = yaml.safe_load((CRDS / f"{crd.group}_{crd.plural}.yaml").read_text())
    status = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return {k: v["default"] for k, v in status["properties"].items() if "default" in v}


@pytest.mark.parametrize("kind", KINDS)
def test_a_status_the_server_filled_with_defaults_is_not_written_again(kind: str) -> None:
    h = Harness(kind)
    assert dict(h.kind.crd.status_defaults) == served_status_defaults(h)
    h.run()
    assert passes(h, 2) == [0, 0], "settled"
    job = h.job()
    # As the API server stores it: the CRD's defaults in every field the write left out.
    defaulted = served_status_defaults(h) | job["status"]
    assert defaulted != job["status"], "the status was written without some defaults"
    h.fake.put(h.reconciler.resource, job | {"status": defaulted})
    h.sync()
    assert passes(h, 3) == [0, 0, 0], h.fake.writes


@pytest.mark.parametrize("kind", ["DeepSpeedJob", "PyTorchTrainingJob"])
def test_a_refused_tensorboard_costs_no_second_status_write(kind: str) -> None:
    h = Harness(kind, with_tensorboard(kind))
    h.fake.fail_next("create", "TensorBoard", Forbidden("denied the request: no"))
    assert all(n <= 1 for n in passes(h, 2)), h.fake.writes
    assert h.job()["status"]["tensorboard"]["type"] == "Warning"
    assert all(n <= 1 for n in passes(h)), h.fake.writes


def test_a_refused_child_is_recorded_and_the_next_pass_plans_from_it() -> None:
    clock = FakeClock()
    h = Harness("PyTorchTrainingJob", clock=clock)
    h.fake.fail_next("create", "Pod", ServerError("exceeded quota"))
    assert h.reconcile() == Result(requeue=True)
    refused = h.reconciler._refused
    assert len(refused) == 1, "the refusal is kept for the job's next pass"
    init = [c for c in h.job()["status"].get("conditions") or [] if c["type"] == "Initialized"]
    assert not any(c["reason"] == "FailedCreate" for c in init), "not planned in this pass"
    assert "FailedCreate" not in h.recorder.reasons()
    h.sync()
    assert h.reconcile() == Result(requeue_after=1.0)  # held, retried after its backoff
    init = [c for c in h.job()["status"]["conditions"] if c["type"] == "Initialized"]
    assert init[0]["reason"] == "FailedCreate" and "exceeded quota" in init[0]["message"]
    assert h.recorder.reasons().count("FailedCreate") == 1
    h.sync()
    clock.step(1.0)
    h.run()
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]


def test_a_child_refused_for_good_fails_the_job_in_the_next_pass() -> None:
    h = Harness("PyTorchTrainingJob")
    h.fake.fail_next("create", "Pod", Invalid('Pod "j-worker-0" is invalid: spec.x: bad'))
    h.reconcile()
    assert h.job()["status"]["phase"] != "Failed"
    h.sync()
    assert h.reconcile() == Result()
    status = h.job()["status"]
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert status["phase"] == "Failed" and failed["reason"] == "InvalidSpec"


class Reader(Base[None]):
    """An integration whose child is built from the replicas' templates."""

    name = "reader"

    def observe(self, job: JobInput, caches: Caches) -> tuple[None, JobView]:
        return None, job.view

    def children(self, state: None, view: JobView, templates: Templates, pods: int) -> list[Action]:
        try:
            for role in view.roles:
                templates(role.type)
        except ChildNotReady:
            pass  # an MSJob's workers before the scheduler's Service: read next pass
        return []


@pytest.mark.parametrize("kind", KINDS)
def test_each_pod_is_built_once_per_pass(kind: str, mocker: MockerFixture) -> None:
    h = Harness(kind, integrations=(Reader(), JobTensorBoard()))
    build = mocker.spy(h.kind, "build_pod")
    for _ in range(3):
        build.reset_mock()
        h.reconcile()
        h.sync()
        built = [(c.args[1], c.args[2], c.args[3]) for c in build.call_args_list]
        assert len(built) == len(set(built)), built
    assert h.pod_names() == JOBS[kind][2]


def test_the_plan_is_one_ordered_list_status_first_pods_last() -> None:
    h = Harness("DeepSpeedJob")
    job = copy.deepcopy(h.reconciler.jobs.get(NS, "j"))
    keys: list[str] = []

    def key_pair(comment: str) -> tuple[str, str]:
        keys.append(comment)
        return "private", "public"

    steps = planning.assemble(h.reconciler._observe(job), planning.Recorded(), key_pair)
    verbs = [(a.verb, a.resource.kind) for a in steps.actions]
    assert verbs[0] == ("replace_status", "DeepSpeedJob")
    assert verbs[-1] == ("create_pods", "Pod")
    assert ("create", "Secret") in verbs and ("create", "Service") in verbs
    pods: list[dict[str, Any]] = steps.actions[-1].body["items"]
    assert [p["metadata"]["name"] for p in pods] == JOBS["DeepSpeedJob"][2]
    assert keys == [f"t9k/{NS}/j"], "a key pair only for the Secret that is missing"
    assert h.fake.writes == [], "planning writes nothing"


def test_a_job_held_by_a_refusal_is_not_retried_by_its_own_status_writes() -> None:
    """In a namespace being deleted every create is refused (403) for as long
    as the job lingers there. Each pass the job's own status write wakes must
    leave it held until its backoff is due: no new create, no status flipping
    between held and creating, which would wake the job again at once."""
    h = Harness("PyTorchTrainingJob")
    terminating = Forbidden(
        'pods "j-worker-0" is forbidden: unable to create new content in namespace '
        f"{NS} because it is being terminated"
    )
    for _ in range(50):
        h.fake.fail_next("create", "Pod", terminating)
    writes = passes(h, 10)  # each pass as the watch event of the last write brings it
    left = len(h.fake.fail[("create", "Pod")])
    assert 50 - left <= 2, f"{50 - left} creates tried"
    assert sum(writes) <= 2, writes
    init = [c for c in h.job()["status"]["conditions"] if c["type"] == "Initialized"]
    assert init[0]["reason"] == "FailedCreate" and "being terminated" in init[0]["message"]


def test_a_previous_job_s_child_holds_the_job_only_until_it_is_collected(
    mocker: MockerFixture,
) -> None:
    """A job recreated under its name (as MultiKueue does on a worker when it
    dispatches a job again) finds its Service still held by the previous job,
    which the garbage collector has not taken yet. The passes that come while
    it is held (its own status write's event, the queue's fast retries) try
    nothing, so they neither push its backoff out nor hammer the API server;
    once the Service is collected the job starts at its next try, seconds
    later, not minutes."""
    clock = FakeClock()
    h = Harness("PyTorchTrainingJob", clock=clock)
    previous = held_pod("j", "PyTorchTrainingJob", "j", "uid-of-the-previous-job")
    h.fake.put(SERVICES, {**previous, "kind": "Service"})
    h.sync()
    create = mocker.spy(h.fake, "create")
    for _ in range(12):  # as fast as the queue brings them, the clock standing still
        h.reconcile()
        h.sync()
    tried = [c for c in create.call_args_list if c.args[0] is SERVICES]
    assert len(tried) <= 2, f"{len(tried)} creates of the Service tried while held"
    init = [c for c in h.job()["status"]["conditions"] if c["type"] == "Initialized"]
    assert init[0]["reason"] == "FailedCreate" and "to be collected" in init[0]["message"]
    assert h.pod_names() == []
    h.fake.delete(SERVICES, "j", NS)  # collected
    h.sync()
    clock.step(2.0)  # the first two backoffs (1 s, then 2 s) are due by now
    h.run()
    assert h.pod_names() == JOBS["PyTorchTrainingJob"][2]
