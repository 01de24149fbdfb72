"""Failure messages name the user's field path, never pydantic's internals."""

from __future__ import annotations

from typing import Any

from t9k_operator.api.deepspeed import DeepSpeedJobObject
from t9k_operator.kinds.contract import parse, user_path


def ds(run: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "DeepSpeedJob",
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {
            "config": {"run": {"python": run}},
            "worker": {"template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}},
        },
    }


def test_a_union_branch_name_never_reaches_the_user() -> None:
    parsed, message = parse(DeepSpeedJobObject, ds(123))
    assert parsed is None and message is not None
    assert message == "invalid spec: spec.config.run.python: Input should be a valid string"
    assert "constrained" not in message and "list[" not in message


def test_user_path_walks_the_object() -> None:
    obj = {"spec": {"a": [{"b": 1}]}}
    assert user_path(obj, ("spec", "a", 0, "b", "constrained-str")) == "spec.a[0].b"
    assert user_path(obj, ("spec", "missing")) == "spec.missing"
    assert user_path(obj, ("spec", "a", 5)) == "spec.a"


def test_fields_not_acted_on_are_found_where_set() -> None:
    from t9k_operator.kinds.contract import present_fields

    replica_specs = [{"type": "a"}, {"type": "b", "scalingWeight": 2}]
    scheduler = {"t9kScheduler": {"queue": "q"}}
    job = {"spec": {"scheduler": scheduler, "tensorboardSpec": None, "replicaSpecs": replica_specs}}
    paths = ("spec.scheduler", "spec.tensorboardSpec", "spec.replicaSpecs[].scalingWeight")
    assert present_fields(job, paths) == ["spec.scheduler", "spec.replicaSpecs[].scalingWeight"]
    assert present_fields({"spec": {"replicaSpecs": "x"}}, paths) == []


def test_a_start_timeout_annotation_that_is_not_whole_seconds_names_the_annotation() -> None:
    from t9k_operator.kinds.contract import START_TIMEOUT_ANNOTATION, job_view

    meta = {"name": "a", "namespace": "n", "uid": "u"}
    good = job_view("K", {**meta, "annotations": {START_TIMEOUT_ANNOTATION: "900"}}, ())
    assert (good.start_timeout, good.spec_error) == (900.0, None)
    assert job_view("K", meta, ()).start_timeout is None  # the operator's, then
    bad = job_view("K", {**meta, "annotations": {START_TIMEOUT_ANNOTATION: "10m"}}, ())
    assert bad.spec_error == (
        "invalid spec: metadata.annotations[t9k.dev/pod-start-timeout-seconds]: "
        "must be a whole number of seconds up to 2147483647 (0: no limit), not '10m'"
    )
    assert bad.roles == ()  # nothing is run from it: the job fails, naming the annotation
    # Digits int() refuses, and more seconds than a date can add, are refused too.
    for value in ("²", "9" * 30):
        odd = job_view("K", {**meta, "annotations": {START_TIMEOUT_ANNOTATION: value}}, ())
        assert odd.spec_error is not None and START_TIMEOUT_ANNOTATION in odd.spec_error
