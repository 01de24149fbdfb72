"""What a pod of a job with a workdir gets (integrations/workdir/build.py), and the
ConfigMap that carries it, against hand-written objects."""

from __future__ import annotations

import base64
import copy
from typing import Any

from t9k_operator.integrations.workdir.build import add_workdir, config_map

UNPACK = (
    "umask 0 && tar -xzf /t9k/workdir-archive/workdir.tar.gz -C /t9k/workdir "
    "|| { echo 't9k: cannot unpack the workdir into /t9k/workdir: the image needs sh "
    "and tar with gzip' >&2; exit 1; }"
)


def pod() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "j-worker-0",
            "annotations": {"kubectl.kubernetes.io/default-container": "pytorch"},
        },
        "spec": {
            "initContainers": [{"name": "user-init", "image": "busybox"}],
            "containers": [
                {
                    "name": "sidecar",
                    "image": "proxy:1",
                    "workingDir": "/srv",
                },
                {
                    "name": "pytorch",
                    "image": "torch:2",
                    "imagePullPolicy": "Always",
                    "securityContext": {"runAsUser": 1000},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                },
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def test_a_pod_gets_the_volume_the_unpacking_init_container_and_its_working_dir() -> None:
    got = pod()
    add_workdir(got, "j-workdir")
    assert got == {
        "metadata": {
            "name": "j-worker-0",
            "annotations": {"kubectl.kubernetes.io/default-container": "pytorch"},
        },
        "spec": {
            "initContainers": [
                {
                    "name": "t9k-workdir",
                    "image": "torch:2",
                    "imagePullPolicy": "Always",
                    "securityContext": {"runAsUser": 1000},
                    "command": ["/bin/sh", "-c", UNPACK],
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "16Mi"},
                        "limits": {"cpu": "500m", "memory": "128Mi"},
                    },
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    "volumeMounts": [
                        {
                            "name": "t9k-workdir-archive",
                            "mountPath": "/t9k/workdir-archive",
                            "readOnly": True,
                        },
                        {"name": "t9k-workdir", "mountPath": "/t9k/workdir"},
                    ],
                },
                {"name": "user-init", "image": "busybox"},
            ],
            "containers": [
                {
                    "name": "sidecar",
                    "image": "proxy:1",
                    "workingDir": "/srv",  # the user's own wins
                    "volumeMounts": [{"name": "t9k-workdir", "mountPath": "/t9k/workdir"}],
                },
                {
                    "name": "pytorch",
                    "image": "torch:2",
                    "imagePullPolicy": "Always",
                    "securityContext": {"runAsUser": 1000},
                    "workingDir": "/t9k/workdir",
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data"},
                        {"name": "t9k-workdir", "mountPath": "/t9k/workdir"},
                    ],
                },
            ],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "t9k-workdir-archive", "configMap": {"name": "j-workdir"}},
                {"name": "t9k-workdir", "emptyDir": {}},
            ],
        },
    }
    again = copy.deepcopy(got)
    add_workdir(again, "j-workdir")
    assert again == got, "a pod that has it already is left as it is"


def test_without_a_default_container_the_first_gives_the_image() -> None:
    got = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x:1"}]}}
    add_workdir(got, "cm")
    assert got["spec"]["initContainers"][0]["image"] == "x:1"
    assert "securityContext" not in got["spec"]["initContainers"][0]
    assert got["spec"]["containers"][0]["workingDir"] == "/t9k/workdir"


def test_the_config_map_is_owned_by_the_job_and_labelled_as_its_children() -> None:
    job = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": "u-1",
            "annotations": {"batch.tensorstack.dev/workdir": "j-workdir"},
        },
    }
    assert config_map(job, b"\x1f\x8bTAR") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "j-workdir",
            "namespace": "ns",
            "labels": {
                "app.kubernetes.io/managed-by": "t9k-operator",
                "t9k.dev/job-name": "j",
                "t9k.dev/job-kind": "PyTorchTrainingJob",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch.tensorstack.dev/v1beta1",
                    "kind": "PyTorchTrainingJob",
                    "name": "j",
                    "uid": "u-1",
                    "controller": True,
                }
            ],
        },
        "binaryData": {"workdir.tar.gz": base64.b64encode(b"\x1f\x8bTAR").decode()},
    }
