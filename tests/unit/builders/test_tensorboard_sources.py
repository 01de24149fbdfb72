"""The pod of a TensorBoard in the 2025 layout (spec.logDir): claims mounted
read-only, S3 URIs read by TensorBoard with the Secret's keys by reference,
HTTP files kept copied by a second container; each place one named run group.
The program the pod runs is tested for real in
tests/integration/test_tensorboard_program.py."""

from __future__ import annotations

import json
from typing import Any

from t9k_operator.api.tensorboard import TensorBoardObject
from t9k_operator.integrations.tensorboard import build as b
from t9k_operator.integrations.tensorboard import fetch


def tb(log_dir: dict[str, Any], **spec: Any) -> TensorBoardObject:
    return TensorBoardObject.from_dict(
        {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "metadata": {"name": "mnist", "namespace": "demo", "uid": "tb-uid"},
            "spec": {"logDir": log_dir, **spec},
        }
    )


def logdir_spec(pod: dict[str, Any]) -> list[str]:
    command = pod["spec"]["containers"][0]["command"]
    assert command[:2] == ["tensorboard", "--logdir_spec"]
    assert command[3:] == ["--host", "0.0.0.0", "--port", "6006"]
    return list(command[2].split(","))


def test_pvc_sources_mount_each_claim_once_and_serve_each_subpath() -> None:
    obj = tb(
        {
            "pvc": [
                {"name": "tutorial", "subPath": ["train/logs", "eval:1/"]},
                {"name": "whole"},
                {"name": "tutorial", "subPath": ["./train/logs"]},  # the same directory
            ]
        }
    )
    pod = b.build_pod(obj)
    assert logdir_spec(pod) == [
        "tutorial/train/logs:/t9k/pvc/tutorial/train/logs",
        "tutorial/eval_1:/t9k/pvc/tutorial/eval:1",
        "whole:/t9k/pvc/whole",
    ]
    assert pod["spec"]["volumes"] == [
        {"name": "pvc-0", "persistentVolumeClaim": {"claimName": "tutorial", "readOnly": True}},
        {"name": "pvc-1", "persistentVolumeClaim": {"claimName": "whole", "readOnly": True}},
    ]
    (c,) = pod["spec"]["containers"]
    assert c["image"] == "tensorflow/tensorflow:2.14.0", "the default image"
    assert "env" not in c
    assert [r.fileset for r in b.runs(obj.spec)] == [
        "t9k://pvc/tutorial/train/logs",
        "t9k://pvc/tutorial/eval:1/",
        "t9k://pvc/whole",
    ]


def test_the_same_claims_in_either_layout_make_the_same_pod() -> None:
    new = tb({"pvc": [{"name": "logs", "subPath": ["a"]}]})
    old = TensorBoardObject.from_dict(
        {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "metadata": {"name": "mnist", "namespace": "demo", "uid": "tb-uid"},
            "spec": {"trainingLogFilesets": ["t9k://pvc/logs/a"]},
        }
    )
    assert b.build_pod(new) == b.build_pod(old)


def test_s3_sources_are_read_by_tensorboard_with_the_secrets_keys_by_reference() -> None:
    obj = tb({"s3": {"secretRef": {"name": "my-s3-env"}, "uri": ["s3://folder/", "s3://b.x/a/b"]}})
    pod = b.build_pod(obj)
    assert logdir_spec(pod) == ["folder:s3://folder/", "b.x/a/b:s3://b.x/a/b"]
    (c,) = pod["spec"]["containers"]
    ref = {"name": "my-s3-env"}
    assert c["env"] == [
        {
            "name": "AWS_ACCESS_KEY_ID",
            "valueFrom": {"secretKeyRef": ref | {"key": "AWS_ACCESS_KEY_ID"}},
        },
        {
            "name": "AWS_SECRET_ACCESS_KEY",
            "valueFrom": {"secretKeyRef": ref | {"key": "AWS_SECRET_ACCESS_KEY"}},
        },
        {
            "name": "S3_ENDPOINT",
            "valueFrom": {"secretKeyRef": ref | {"key": "S3_ENDPOINT", "optional": True}},
        },
        {
            "name": "AWS_REGION",
            "valueFrom": {"secretKeyRef": ref | {"key": "AWS_REGION", "optional": True}},
        },
    ]
    assert all("value" not in e for e in c["env"]), "never a value in the pod spec"
    assert pod["spec"]["volumes"] == [] and c["volumeMounts"] == []


def test_http_sources_are_kept_copied_by_a_second_container() -> None:
    urls = ["http://files.example/run/events.out.tfevents.1", "https://h:8443/a/b/ev"]
    obj = tb({"http": {"url": urls}}, image="my/tensorboard:1")
    pod = b.build_pod(obj)
    assert logdir_spec(pod) == [
        "files.example/run/events.out.tfevents.1:/t9k/http/0",
        "h_8443/a/b/ev:/t9k/http/1",
    ]
    tensorboard, fetcher = pod["spec"]["containers"]
    assert (tensorboard["name"], fetcher["name"]) == ("tensorboard", "fetch")
    assert pod["spec"]["volumes"] == [{"name": "http", "emptyDir": {}}]
    assert tensorboard["volumeMounts"] == [
        {"name": "http", "mountPath": "/t9k/http", "readOnly": True}
    ]
    assert fetcher["volumeMounts"] == [{"name": "http", "mountPath": "/t9k/http"}]
    assert fetcher["image"] == "my/tensorboard:1"
    python, dash_c, program, root, interval, *args = fetcher["command"]
    assert (python, dash_c, root, interval, args) == ("python3", "-c", "/t9k/http", "30", urls)
    with open(fetch.__file__) as f:
        assert program == f.read(), "the fetch program, as tested"


def test_a_change_of_source_replaces_the_pod() -> None:
    hash_of = lambda obj: b.build_pod(obj)["metadata"]["annotations"][b.SPEC_HASH]  # noqa: E731
    one = tb({"s3": {"secretRef": {"name": "a"}, "uri": ["s3://folder/"]}})
    other = tb({"s3": {"secretRef": {"name": "b"}, "uri": ["s3://folder/"]}})
    assert hash_of(one) != hash_of(other)
    assert json.dumps(b.build_pod(one)).count("secretKeyRef") == 4
