"""A TensorBoard's pod and Service, and a job's TensorBoard, built from parsed
objects (pure). The program the pod runs is tested for real in
tests/integration/test_tensorboard_program.py."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.api.pytorch import PyTorchTrainingJobObject
from t9k_operator.api.tensorboard import TensorBoardObject, TensorBoardSpec
from t9k_operator.integrations.tensorboard import build as b

YOLO = "t9k://pvc/yolov5/yolov5_pytorch/run/train/"


def tb(*filesets: str, name: str = "mnist", **spec: Any) -> TensorBoardObject:
    return TensorBoardObject.from_dict(
        {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "metadata": {"name": name, "namespace": "demo", "uid": "tb-uid"},
            "spec": {
                "image": "tensorflow/tensorflow:2.14.0",
                "trainingLogFilesets": list(filesets),
                **spec,
            },
        }
    )


@pytest.mark.parametrize(
    ("fileset", "claim", "path", "name"),
    [
        (
            YOLO,
            "yolov5",
            "/t9k/pvc/yolov5/yolov5_pytorch/run/train",
            "yolov5/yolov5_pytorch/run/train",
        ),
        ("t9k://pvc/logs", "logs", "/t9k/pvc/logs", "logs"),
        ("t9k://pvc/logs/", "logs", "/t9k/pvc/logs", "logs"),
        ("t9k://pvc/logs//a/./b/", "logs", "/t9k/pvc/logs/a/b", "logs/a/b"),
        ("t9k://pvc/logs/run:1", "logs", "/t9k/pvc/logs/run:1", "logs/run_1"),
    ],
)
def test_a_fileset_is_a_directory_of_its_mounted_claim_and_a_named_run_group(
    fileset: str, claim: str, path: str, name: str
) -> None:
    spec = tb(fileset).spec
    (run,) = b.runs(spec)
    assert (run.path, run.name, run.fileset) == (path, name, fileset)
    assert b.claims(spec) == [claim]


def test_the_command_serves_every_fileset_as_a_named_run_group() -> None:
    spec = tb(YOLO, "t9k://pvc/logs/val", "t9k://pvc/logs/val/").spec
    assert b.command(spec) == [
        "tensorboard",
        "--logdir_spec",
        "yolov5/yolov5_pytorch/run/train:/t9k/pvc/yolov5/yolov5_pytorch/run/train,"
        "logs/val:/t9k/pvc/logs/val",
        "--host",
        "0.0.0.0",
        "--port",
        "6006",
    ]
    # Only the mount root moves when the claims are elsewhere (the program test's temp dir).
    assert b.command(spec, "/tmp/x")[2] == (
        "yolov5/yolov5_pytorch/run/train:/tmp/x/yolov5/yolov5_pytorch/run/train,"
        "logs/val:/tmp/x/logs/val"
    )


def test_the_pod_mounts_each_claim_once_read_only_and_runs_the_command() -> None:
    obj = tb("t9k://pvc/logs/a", YOLO, "t9k://pvc/logs/b")
    pod = b.build_pod(obj)
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"] == "mnist-tensorboard" and meta["namespace"] == "demo"
    assert meta["labels"] == {
        "app.kubernetes.io/managed-by": "t9k-operator",
        "t9k.dev/tensorboard": "mnist",
    }
    (owner,) = meta["ownerReferences"]
    assert owner == {
        "apiVersion": "tensorstack.dev/v1beta1",
        "kind": "TensorBoard",
        "name": "mnist",
        "uid": "tb-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert spec["restartPolicy"] == "Always"
    assert spec["volumes"] == [
        {"name": "pvc-0", "persistentVolumeClaim": {"claimName": "logs", "readOnly": True}},
        {"name": "pvc-1", "persistentVolumeClaim": {"claimName": "yolov5", "readOnly": True}},
    ]
    (c,) = spec["containers"]
    assert c["name"] == "tensorboard" and c["image"] == "tensorflow/tensorflow:2.14.0"
    assert c["command"] == [
        "tensorboard",
        "--logdir_spec",
        "logs/a:/t9k/pvc/logs/a,"
        "yolov5/yolov5_pytorch/run/train:/t9k/pvc/yolov5/yolov5_pytorch/run/train,"
        "logs/b:/t9k/pvc/logs/b",
        "--host",
        "0.0.0.0",
        "--port",
        "6006",
    ]
    assert c["volumeMounts"] == [
        {"name": "pvc-0", "mountPath": "/t9k/pvc/logs", "readOnly": True},
        {"name": "pvc-1", "mountPath": "/t9k/pvc/yolov5", "readOnly": True},
    ]
    assert c["ports"] == [{"name": "http", "containerPort": 6006, "protocol": "TCP"}]
    assert c["readinessProbe"]["httpGet"] == {"path": "/", "port": "http"}
    assert "resources" not in c
    for run in b.runs(obj.spec):
        assert any(run.path.startswith(m["mountPath"] + "/") for m in c["volumeMounts"])


def test_resources_are_kept_as_written() -> None:
    resources = {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": 0.5}}
    (c,) = b.build_pod(tb(YOLO, resources=resources))["spec"]["containers"]
    assert c["resources"] == resources


def test_the_pod_carries_the_hash_of_its_spec() -> None:
    one, same = b.build_pod(tb(YOLO)), b.build_pod(tb(YOLO))
    other = b.build_pod(tb(YOLO, image="tensorflow/tensorflow:2.15.0"))
    hash_of = lambda pod: pod["metadata"]["annotations"][b.SPEC_HASH]  # noqa: E731
    # Written out: a new hash for the same spec replaces every running
    # TensorBoard's pod when the operator is upgraded, so it changes knowingly.
    assert hash_of(one) == hash_of(same) == "0bf17b62fa0a6baf"
    assert hash_of(one) != hash_of(other)
    assert (
        b.build_pod(tb(YOLO, name="other"))["metadata"]["annotations"]
        == one["metadata"]["annotations"]
    ), "the hash is of the spec alone"


def test_the_service_selects_the_pod_on_port_6006() -> None:
    obj = tb(YOLO)
    svc, pod = b.build_service(obj), b.build_pod(obj)
    assert svc["metadata"]["name"] == b.service_name("mnist") == "mnist-tensorboard"
    assert svc["spec"]["selector"] == pod["metadata"]["labels"]
    assert svc["spec"]["ports"] == [
        {"name": "http", "port": 6006, "targetPort": "http", "protocol": "TCP"}
    ]
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "TensorBoard"
    assert b.port_forward("demo", "mnist") == (
        "kubectl -n demo port-forward service/mnist-tensorboard 6006:6006"
    )
    assert b.url("demo", "mnist") == "http://mnist-tensorboard.demo.svc:6006/"


def job(**spec: Any) -> PyTorchTrainingJobObject:
    return PyTorchTrainingJobObject.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "PyTorchTrainingJob",
            "metadata": {"name": "torch-mnist", "namespace": "demo", "uid": "job-uid"},
            "spec": {
                "replicaSpecs": [
                    {"type": "worker", "template": {"spec": {"containers": [{"name": "p"}]}}}
                ],
                **spec,
            },
        }
    )


def test_a_jobs_tensorboard_takes_its_name_and_spec_and_is_owned_by_it() -> None:
    raw = {"trainingLogFilesets": [YOLO], "image": "tensorflow/tensorflow:2.14.0"}
    parsed = job(tensorboardSpec=raw)
    obj = b.for_job(parsed, parsed.spec.tensorboard_spec)
    assert obj is not None
    assert (obj["apiVersion"], obj["kind"]) == ("tensorstack.dev/v1beta1", "TensorBoard")
    meta = obj["metadata"]
    assert (meta["name"], meta["namespace"]) == ("torch-mnist", "demo")
    assert meta["labels"]["t9k.dev/job-name"] == "torch-mnist"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "PyTorchTrainingJob",
        "torch-mnist",
        "job-uid",
        True,
    )
    assert obj["spec"] == raw, "the spec as the user wrote it, nothing added"
    assert TensorBoardSpec.model_validate(obj["spec"]) == parsed.spec.tensorboard_spec
    resources = {"limits": {"cpu": "1"}}
    with_resources = job(tensorboardSpec={**raw, "resources": resources})
    built = b.for_job(with_resources, with_resources.spec.tensorboard_spec)
    assert built is not None and built["spec"]["resources"] == resources
    plain = job()
    assert b.for_job(plain, plain.spec.tensorboard_spec) is None
