"""The XGBoostTrainingJob model: the manual's examples (read from the manual
itself, tests/unit/api/xgboost_manual.py), defaults, and what the operator
refuses or reports of them. tests/integration/test_crd_xgboost.py applies the
same examples to a real API server."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t9k_operator.api.xgboost import CRD, XGBoostTrainingJobObject, XGBoostTrainingJobStatus
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.registry import by_kind
from tests.unit.api import xgboost_manual

JOBS = xgboost_manual.jobs()
KIND = by_kind("XGBoostTrainingJob")
JOB = "training-iris-xgb"
SPEC_EXAMPLES = {
    f"manual-{key}": yaml.safe_dump(job)
    for key, job in JOBS.items()
    if job["metadata"]["name"] == JOB
}
"""The manual's jobs named as its first, for tests/unit/api/test_job_objects.py."""
STATUS_EXAMPLES = {
    f"manual-{key}": yaml.safe_dump(status) for key, status in xgboost_manual.statuses().items()
}


def stored(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        **job,
        "metadata": {**job["metadata"], "namespace": "ns", "uid": "u"},
    }


def test_the_manual_is_read() -> None:
    # 4 whole jobs (one with its container elided) and 5 spec fragments
    # (scheduler, debug and pause mode), 3 status fragments.
    assert len(JOBS) == 9
    assert len(xgboost_manual.statuses()) == 3


@pytest.mark.parametrize("key", sorted(JOBS))
def test_every_example_of_the_manual_parses(key: str) -> None:
    job = XGBoostTrainingJobObject.from_dict(stored(JOBS[key]))
    assert job.spec.replica_specs
    assert KIND.fields_not_acted_on(stored(JOBS[key])) == []


@pytest.mark.parametrize("key", sorted(xgboost_manual.statuses()))
def test_every_status_of_the_manual_parses(key: str) -> None:
    XGBoostTrainingJobStatus.model_validate(xgboost_manual.statuses()[key])


def test_the_first_example_as_written_lacks_its_workers_containers() -> None:
    # Its worker template has `containers` beside `spec`, not in it: the model
    # keeps the template, and the job fails on reading, naming the field.
    view = read(KIND, stored(JOBS["0"])).view
    assert view.spec_error is not None
    assert view.spec_error.startswith("spec.replicaSpecs[1].template.spec.containers is empty")


@pytest.mark.parametrize("key", ["1", "2", "3"])
def test_a_job_without_a_master_fails_on_reading(key: str) -> None:
    view = read(KIND, stored(JOBS[key])).view
    assert view.spec_error is not None and "no master replica" in view.spec_error


def test_the_fragments_are_read() -> None:
    scheduler = XGBoostTrainingJobObject.from_dict(stored(JOBS["4"])).spec.scheduler
    assert scheduler is not None and scheduler.t9k_scheduler is not None
    assert (scheduler.t9k_scheduler.queue, scheduler.t9k_scheduler.priority) == ("default", 50)
    debug = read(KIND, stored(JOBS["5-0"])).view
    assert debug.debug and debug.debug_overrides[0].command == ("/usr/bin/sshd",)
    assert debug.debug_overrides[0].skip_init_container
    pause = read(KIND, stored(JOBS["6-1"])).view
    assert pause.paused and pause.resume_overrides == ()


def test_defaults_are_the_apis() -> None:
    job = XGBoostTrainingJobObject.from_dict(
        stored(
            {
                "metadata": {"name": "x"},
                "spec": {"replicaSpecs": [{"type": "master", "template": {}}]},
            }
        )
    )
    rs = job.spec.replica_specs[0]
    assert (rs.replicas, rs.restart_policy) == (1, "OnFailure")
    assert job.spec.run_mode is None and job.spec.scheduler is None


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({"replicaSpecs": [{"type": "ps", "template": {}}]}, "type"),
        ({"replicaSpecs": []}, "replicaSpecs"),
        (
            {
                "replicaSpecs": [
                    {"type": "worker", "template": {}},
                    {"type": "worker", "template": {}},
                ]
            },
            "each type may appear only once",
        ),
    ],
)
def test_bad_specs_are_refused(spec: dict[str, Any], path: str) -> None:
    with pytest.raises(ValidationError, match=path):
        XGBoostTrainingJobObject.from_dict(stored({"metadata": {"name": "x"}, "spec": spec}))


def test_the_crd_is_a_t9k_kind() -> None:
    assert CRD.categories == ("t9k",) and CRD.short_names == ("xgbtj", "xgbj")
    assert CRD.name == "xgboosttrainingjobs.batch.tensorstack.dev"


def test_backoff_count_is_the_restart_count() -> None:
    job = stored(JOBS["4"])
    rendered = KIND.render_status(job, {"phase": "Running", "restartCount": 2})
    assert rendered == {"phase": "Running", "restartCount": 2, "backoffCount": 2}
    assert KIND.engine_status({**job, "status": rendered}) == {
        "phase": "Running",
        "restartCount": 2,
    }
