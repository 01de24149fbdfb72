"""The image and the in-cluster path, run for real.

The image's root filesystem is made from the Dockerfile by hack/release/rootfs
(Debian's packages, no registry). The operator's Deployment
(manifests/manager/deployment.yaml, read as it is) runs from it with two
replicas as kubelet would start them (tests/integration/incluster.py): uid
65532, read-only root and no volumes, no capabilities, ``POD_NAMESPACE``,
the ServiceAccount's real token, CA and namespace at
/var/run/secrets/kubernetes.io/serviceaccount, and the API server at
``KUBERNETES_SERVICE_HOST``/``PORT``; no kubeconfig anywhere.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from t9k_operator import __version__
from t9k_operator.api import deepspeed
from t9k_operator.builders.common import ssh_secret_name
from t9k_operator.builders.ssh import KEY_FILE
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import LEASES, SECRETS
from tests.integration.cluster import ROOT, Cluster, delete_quietly, request_token, wait_for
from tests.integration.incluster import DeploymentPod, run_image
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.leases import recording

DEPLOYMENT = ROOT / "manifests" / "manager" / "deployment.yaml"
LEASE = "t9k-operator-leader"  # the default --leader-election-id
SA_NAMESPACE, SA_NAME = "t9k-system", "t9k-operator"


@pytest.fixture(scope="session")
def deployment() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(DEPLOYMENT.read_text())
    return doc


def test_the_image_runs_as_the_deployment_says(
    operator_image: Path, deployment: dict[str, Any], tmp_path: Path
) -> None:
    """The image's user is the Deployment's, and its entrypoint answers
    --help and --version as that user on a read-only root."""
    config = json.loads((operator_image / "config.json").read_text())
    pod_security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert config["User"] == f"{pod_security['runAsUser']}:{pod_security['runAsGroup']}"
    assert config["Entrypoint"] == ["t9k-operator"]
    root = operator_image / "root"
    help_ = run_image(root, config, ["--help"], tmp_path / "help")
    assert help_.returncode == 0, help_.stdout
    assert "usage: t9k-operator" in help_.stdout
    assert "--leader-elect" in help_.stdout
    version = run_image(root, config, ["--version"], tmp_path / "version")
    assert version.stdout.strip() == f"t9k-operator {__version__}", version.stdout
    # The root really is read-only and the user really is 65532: the image's
    # own shell cannot write anywhere but /dev/shm.
    probe = run_image(
        root,
        config,
        [
            "-c",
            "id -u; id -g; for d in / /tmp /var/tmp /opt/t9k-operator /dev/shm; do "
            'touch "$d/probe" 2>/dev/null && echo "$d writable" || echo "$d read-only"; done',
        ],
        tmp_path / "probe",
        entrypoint=["/bin/sh"],
    )
    assert probe.stdout.split("\n")[:7] == [
        "65532",
        "65532",
        "/ read-only",
        "/tmp read-only",
        "/var/tmp read-only",
        "/opt/t9k-operator read-only",
        "/dev/shm writable",
    ], probe.stdout


def holder(admin: KubeClient) -> str:
    try:
        return str(admin.get(LEASES, LEASE, SA_NAMESPACE)["spec"].get("holderIdentity") or "")
    except NotFound:
        return ""


def leads(pod: DeploymentPod) -> bool:
    return (pod.metric("leader_election_master_status", {"name": LEASE}) or 0.0) == 1.0


@pytest.fixture
def replicas(
    cluster: Cluster,
    admin: KubeClient,
    rbac_installed: None,
    crds_installed: None,
    operator_image: Path,
    deployment: dict[str, Any],
    tmp_path: Path,
) -> Iterator[list[DeploymentPod]]:
    """The Deployment's two replicas, running from the image, ready."""
    count = deployment["spec"]["replicas"]
    assert count == 2
    # A Lease left by an earlier session's replicas would hold the first
    # leader back for a lease duration.
    delete_quietly(admin, LEASES, LEASE, SA_NAMESPACE)
    server = urlparse(cluster.server)
    assert server.hostname and server.port
    pods: list[DeploymentPod] = []
    try:
        for _ in range(count):
            pods.append(
                DeploymentPod(
                    deployment,
                    operator_image,
                    tmp_path,
                    token=request_token(admin, SA_NAMESPACE, SA_NAME),
                    ca=cluster.ca_file.read_bytes(),
                    api_server=(server.hostname, server.port),
                )
            )
        for pod in pods:
            pod.wait_ready()
        yield pods
    finally:
        for pod in pods:
            pod.stop()


@pytest.mark.timeout(420)
def test_two_replicas_from_the_image_lead_run_jobs_and_hand_over_on_sigterm(
    replicas: list[DeploymentPod], admin: KubeClient, namespace: str
) -> None:
    a, b = replicas
    # One leader: the Lease names it, and its gauge says so; the other's does not.
    wait_for(lambda: holder(admin), 30, "a holder of the Lease")
    leader, standby = (a, b) if holder(admin).startswith(a.name + "_") else (b, a)
    assert holder(admin).startswith(leader.name + "_"), holder(admin)
    wait_for(lambda: leads(leader), 10, "the leader's gauge")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert leads(leader) and not leads(standby)
        time.sleep(0.3)

    # Jobs run to the end under it: a PyTorchTrainingJob, and a DeepSpeedJob,
    # whose ssh key pair the operator makes (on a read-only root).
    pytorch = Jobs(admin, namespace)
    pytorch.create(pytorch_job("from-image", [("worker", 2, "Never")], manual=False))
    ds = Jobs(admin, namespace, resource_of(deepspeed.CRD))
    ds.create(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "DeepSpeedJob",
            "metadata": {"name": "ds-from-image"},
            "spec": {
                "config": {"run": {"python": "/t9k/mnt/train.py"}},
                "worker": {
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "containers": [{"name": "worker", "image": "deepspeed/deepspeed:v072"}]
                        }
                    },
                },
            },
        }
    )
    pytorch.wait_phase("from-image", "Succeeded", timeout=90)
    ds.wait_phase("ds-from-image", "Succeeded", timeout=90)
    keys = admin.get(SECRETS, ssh_secret_name("ds-from-image"), namespace)["data"]
    assert b"BEGIN OPENSSH PRIVATE KEY" in base64.b64decode(keys[KEY_FILE])

    # Both replicas serve the progress endpoint with the certificate the first
    # to start put in its Secret (on a read-only root, through the emptyDir
    # /tmp), for the Service's name; the standby leaves reports to the leader.
    tls = admin.get(SECRETS, "t9k-operator-progress-tls", SA_NAMESPACE)["data"]
    ca, cert = base64.b64decode(tls["ca.crt"]), base64.b64decode(tls["tls.crt"])
    der = x509.load_pem_x509_certificate(cert).public_bytes(serialization.Encoding.DER)
    host = f"t9k-operator-progress.{SA_NAMESPACE}.svc"
    path = f"/v1/namespaces/{namespace}/pytorchtrainingjobs/from-image/progress"
    assert leader.post_tls(8443, ca, host, path) == (401, der)  # no token
    assert standby.post_tls(8443, ca, host, path) == (503, der)

    # SIGTERM to the leader, as kubelet stops a pod: it releases the Lease,
    # the standby takes over well within a lease duration (15 s), and the
    # leader exits 0.
    before = admin.get(LEASES, LEASE, SA_NAMESPACE)["spec"]
    with recording(admin, SA_NAMESPACE, LEASE) as record:
        leader.terminate()
        wait_for(lambda: holder(admin).startswith(standby.name + "_"), 15, "the standby to take it")
    assert leader.wait(40) == 0, leader.logs()
    # Released, not expired: the standby takes it at its next try, at most one
    # jittered retry period (2 s x 2.2) after the release, as the Lease says.
    released = record.released()
    took = record.gap(released, record.first_after(released, holder(admin)))
    assert 0 <= took < 15 / 2, f"hand-over took {took:.2f}s: {record.versions()}"
    assert "released the lease" in leader.logs()
    after = admin.get(LEASES, LEASE, SA_NAMESPACE)["spec"]
    assert after["leaseTransitions"] == before["leaseTransitions"] + 1
    wait_for(lambda: leads(standby), 10, "the new leader's gauge")
    # The new leader works: another job runs to the end.
    pytorch.create(pytorch_job("after-handover", [("worker", 1, "Never")], manual=False))
    pytorch.wait_phase("after-handover", "Succeeded", timeout=90)
    # And it stops cleanly too.
    standby.terminate()
    assert standby.wait(40) == 0, standby.logs()
    assert holder(admin) == ""
