"""A field whose request no integration that is on serves is told, once, when
the job is accepted (pipeline/unserved.py): the progress reports turned off
by a flag leave ``spec.runPolicy.progress`` stored but never acted on. The
same with a folder gone is tests/unit/test_removing_an_integration.py."""

from __future__ import annotations

import copy
from typing import Any

from t9k_operator import registry
from t9k_operator.__main__ import parse_args
from t9k_operator.kinds.contract import read
from t9k_operator.kinds.registry import by_kind
from t9k_operator.kinds.view import JobView
from t9k_operator.reconcilers.pipeline.unserved import not_served, told

WORKER = {
    "type": "worker",
    "replicas": 2,
    "template": {"spec": {"containers": [{"name": "pytorch", "image": "t"}]}},
}
ASKING = {
    "replicaSpecs": [WORKER],
    "runPolicy": {"progress": {"hangTimeoutSeconds": 600}, "checkpoint": {"graceSeconds": 60}},
    "tensorboardSpec": {"image": "tb", "trainingLogFilesets": ["t9k://pvc/logs/train"]},
    "scheduler": {"t9kScheduler": {"queue": "default"}},
}


def view_of(spec: dict[str, Any]) -> JobView:
    job = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u", "generation": 1},
        "spec": copy.deepcopy(spec),
    }
    parsed = read(by_kind("PyTorchTrainingJob"), job)
    assert parsed.job is not None
    return parsed.view


def test_at_the_default_flags_every_field_a_job_may_ask_is_served() -> None:
    integrations = registry.configure(parse_args([]))
    assert not_served(integrations, view_of(ASKING)) == ()


def test_progress_reports_turned_off_leave_the_progress_policy_unserved() -> None:
    integrations = registry.configure(parse_args(["--progress-bind-address", "0"]))
    unserved = not_served(integrations, view_of(ASKING))
    assert unserved == ("spec.runPolicy.progress",)
    assert told(unserved) == [
        (
            "Warning",
            "FieldNotActedOn",
            "spec.runPolicy.progress: stored as written, but no part of this operator that "
            "is on acts on it (turned off by the operator's flags, or not installed): the job "
            "runs as if it were not set",
        )
    ]


def test_what_the_user_did_not_ask_is_never_told() -> None:
    plain = view_of({"replicaSpecs": [WORKER]})
    assert plain.asks  # the kind still asks its pods be placed, on its own
    assert not_served((), plain) == ()
    assert told(()) == []


def test_without_any_integration_each_field_is_named_in_the_kinds_order() -> None:
    assert not_served((), view_of(ASKING)) == (
        "spec.scheduler.t9kScheduler",
        "spec.runPolicy.progress",
        "spec.runPolicy.checkpoint",
        "spec.tensorboardSpec",
    )
