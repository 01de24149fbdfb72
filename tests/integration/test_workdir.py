"""A job's workdir on the local cluster, with the operator running: ``t9k
create --workdir`` and ``t9k submit --workdir`` write the job and then its
ConfigMap, owned by it; the operator gives every pod the init container,
volumes and working directory; a job whose ConfigMap is missing gets no pod
until it comes; a directory too large is refused with nothing created, and
the limit is the API server's own, measured here."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.api import deepspeed
from t9k_operator.integrations.workdir.pack import LIMIT
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import Invalid, KubeClient, NotFound
from t9k_operator.resources import CONFIGMAPS
from t9k_operator.sdk import Client
from tests.integration.cluster import Cluster
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job, settled
from tests.integration.operator_process import OperatorProcess

pytestmark = pytest.mark.usefixtures("operator")

T9K = Path(sys.executable).with_name("t9k")
DEEPSPEED = resource_of(deepspeed.CRD)
ANNOTATION = "batch.tensorstack.dev/workdir"


def t9k(cluster: Cluster, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(T9K), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace, *args],
        capture_output=True,
        text=True,
        timeout=90,
    )


def workdir(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "train.py").write_text("print('trained')\n")
    (root / "helper.sh").write_text("#!/bin/sh\necho helped\n")
    (root / "helper.sh").chmod(0o755)
    (root / ".t9kignore").write_text("data/\n")
    (root / "data" / "big.bin").write_bytes(b"x" * 1000)
    return root


def archive_of(cm: dict[str, Any]) -> dict[str, int]:
    raw = base64.b64decode(cm["binaryData"]["workdir.tar.gz"])
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        return {m.name: m.mode for m in tar.getmembers()}


def owned_by(cm: dict[str, Any], job: dict[str, Any]) -> None:
    assert cm["metadata"]["ownerReferences"] == [
        {
            "apiVersion": job["apiVersion"],
            "kind": job["kind"],
            "name": job["metadata"]["name"],
            "uid": job["metadata"]["uid"],
            "controller": True,
        }
    ]


def has_workdir(pod: dict[str, Any], config_map: str) -> None:
    spec = pod["spec"]
    assert spec["initContainers"][0]["name"] == "t9k-workdir", pod["metadata"]["name"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["t9k-workdir-archive"]["configMap"]["name"] == config_map
    assert "emptyDir" in volumes["t9k-workdir"]
    for c in spec["containers"]:
        assert c["workingDir"] == "/t9k/workdir", (pod["metadata"]["name"], c["name"])
        assert any(m["mountPath"] == "/t9k/workdir" for m in c["volumeMounts"])


def test_create_with_a_workdir(
    cluster: Cluster, namespace: str, admin: KubeClient, tmp_path: Path, operator: OperatorProcess
) -> None:
    root = workdir(tmp_path / "w")
    out = t9k(cluster, namespace, "create", "pytorch", "wd", "--image", "train:1",
              "--workers", "2", "--workdir", str(root), "--", "python", "train.py")  # fmt: skip
    assert out.returncode == 0, out.stderr
    job = admin.get(PYTORCH, "wd", namespace)
    assert job["metadata"]["annotations"][ANNOTATION] == "wd-workdir"
    cm = admin.get(CONFIGMAPS, "wd-workdir", namespace)
    owned_by(cm, job)
    assert archive_of(cm) == {".t9kignore": 0o644, "helper.sh": 0o755, "train.py": 0o644}
    jobs = Jobs(admin, namespace)
    pods = jobs.wait_pods("wd", ["wd-worker-0", "wd-worker-1"])
    for pod in pods.values():
        has_workdir(pod, "wd-workdir")
    # The ConfigMap came a moment after the job, as expected: no warning of it.
    settled(jobs, "wd", "its pods created", lambda j: len(jobs.pods("wd")) == 2, operator=operator)
    assert [e for e in jobs.events("wd") if e[0] == "Warning"] == []


def test_submit_with_a_workdir_reaches_launcher_and_workers_of_an_ssh_kind(
    cluster: Cluster, namespace: str, admin: KubeClient, tmp_path: Path
) -> None:
    root = workdir(tmp_path / "w")
    manifest = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "DeepSpeedJob",
        "metadata": {"name": "ds"},
        "spec": {
            "config": {"run": {"python": ["train.py"]}},
            "worker": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"name": "worker", "image": "ds:1"}]}},
            },
        },
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(manifest))
    out = t9k(
        cluster, namespace, "submit", "-f", str(tmp_path / "job.yaml"), "--workdir", str(root)
    )
    assert out.returncode == 0, out.stderr
    job = admin.get(DEEPSPEED, "ds", namespace)
    cm = admin.get(CONFIGMAPS, "ds-workdir", namespace)
    owned_by(cm, job)
    pods = Jobs(admin, namespace, DEEPSPEED).wait_pods("ds", ["ds-worker-0", "ds-worker-1"])
    for pod in pods.values():
        has_workdir(pod, "ds-workdir")

    # Submitted again with another tree: the job's own ConfigMap takes it.
    (root / "more.py").write_text("")
    out = t9k(
        cluster, namespace, "submit", "-f", str(tmp_path / "job.yaml"), "--workdir", str(root)
    )
    assert out.returncode == 0, out.stderr
    assert "more.py" in archive_of(admin.get(CONFIGMAPS, "ds-workdir", namespace))


def test_a_workdir_too_large_is_refused_with_nothing_created(
    cluster: Cluster, namespace: str, admin: KubeClient, tmp_path: Path
) -> None:
    root = tmp_path / "big"
    root.mkdir()
    (root / "weights.bin").write_bytes(os.urandom(LIMIT + 10_000))
    (root / "train.py").write_text("")
    out = t9k(cluster, namespace, "create", "pytorch", "big", "--image", "train:1",
              "--workdir", str(root), "--", "python", "train.py")  # fmt: skip
    assert out.returncode != 0
    assert f"over the limit of 1.0 MiB ({LIMIT} bytes)" in out.stderr, out.stderr
    assert "its largest files: weights.bin (1.0 MiB), train.py (0 B)" in out.stderr
    (root / "job.yaml").write_text(yaml.safe_dump(pytorch_job("big2", [("worker", 1, "Never")])))
    out = t9k(cluster, namespace, "submit", "-f", str(root / "job.yaml"), "--workdir", str(root))
    assert out.returncode != 0 and "over the limit" in out.stderr, out.stderr
    assert admin.list(PYTORCH, namespace)["items"] == []
    assert [c["metadata"]["name"] for c in admin.list(CONFIGMAPS, namespace)["items"]] == [
        "kube-root-ca.crt"
    ]


def test_the_limit_is_the_api_servers(admin: KubeClient, namespace: str) -> None:
    """The packer's limit, measured: a ConfigMap of exactly LIMIT bytes of
    binaryData is accepted, one byte more refused."""

    def config_map(name: str, size: int) -> dict[str, Any]:
        data = base64.b64encode(os.urandom(size)).decode()
        return {"metadata": {"name": name}, "binaryData": {"workdir.tar.gz": data}}

    admin.create(CONFIGMAPS, config_map("at-limit", LIMIT), namespace)
    with pytest.raises(Invalid, match="may not be more than 1048576 bytes"):
        admin.create(CONFIGMAPS, config_map("over-limit", LIMIT + 1), namespace)


def test_a_config_map_that_cannot_be_had_takes_the_job_back(
    cluster: Cluster, namespace: str, admin: KubeClient, tmp_path: Path
) -> None:
    admin.create(CONFIGMAPS, {"metadata": {"name": "clash-workdir"}, "data": {}}, namespace)
    root = workdir(tmp_path / "w")
    out = t9k(cluster, namespace, "create", "pytorch", "clash", "--image", "train:1",
              "--workdir", str(root), "--", "python", "train.py")  # fmt: skip
    assert out.returncode != 0
    assert "ConfigMap clash-workdir already exists and is not this job's workdir" in out.stderr
    with pytest.raises(NotFound):
        admin.get(PYTORCH, "clash", namespace)


def test_the_operator_holds_the_pods_until_the_config_map_exists(
    namespace: str, admin: KubeClient, operator: OperatorProcess
) -> None:
    jobs = Jobs(admin, namespace)
    body = pytorch_job("held", [("worker", 1, "Never")])
    body["metadata"]["annotations"] = {ANNOTATION: "held-workdir"}
    job = jobs.create(body)

    def held(j: dict[str, Any]) -> bool:
        return any(
            c["type"] == "Initialized" and "ConfigMap held-workdir" in c.get("message", "")
            for c in (j.get("status") or {}).get("conditions") or []
        )

    settled(jobs, "held", "held for its workdir", held, operator=operator)
    assert jobs.pods("held") == {}
    cm = {
        "metadata": {
            "name": "held-workdir",
            "labels": {
                "app.kubernetes.io/managed-by": "t9k-operator",
                "t9k.dev/job-name": "held",
                "t9k.dev/job-kind": "PyTorchTrainingJob",
            },
            "ownerReferences": [
                {
                    "apiVersion": job["apiVersion"],
                    "kind": job["kind"],
                    "name": "held",
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "binaryData": {"workdir.tar.gz": base64.b64encode(b"x").decode()},
    }
    admin.create(CONFIGMAPS, cm, namespace)
    pods = jobs.wait_pods("held", ["held-worker-0"])
    has_workdir(pods["held-worker-0"], "held-workdir")


def greet(greeting: str) -> None:
    print(greeting)


def test_train_makes_a_job_of_a_function_with_its_workdir(
    cluster: Cluster, namespace: str, admin: KubeClient
) -> None:
    with Client(str(cluster.kubeconfig), namespace=namespace) as client:
        job = client.train(
            greet, name="fn", image="python:3.11", workers=2, kwargs={"greeting": "hi"}
        )
    assert job["metadata"]["annotations"][ANNOTATION] == "fn-workdir"
    cm = admin.get(CONFIGMAPS, "fn-workdir", namespace)
    owned_by(cm, job)
    assert archive_of(cm) == {"t9k_train.py": 0o644}
    pods = Jobs(admin, namespace).wait_pods("fn", ["fn-worker-0", "fn-worker-1"])
    for pod in pods.values():
        has_workdir(pod, "fn-workdir")
        assert pod["spec"]["containers"][0]["command"] == ["python", "t9k_train.py"]
