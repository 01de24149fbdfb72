"""The ``kubeflow`` scenario: Kubeflow's training-operator v1 (the release
``KUBEFLOW_TRAINING_OPERATOR_VERSION`` in hack/versions.env pins) starting
the same jobs on the same cluster, side by side with this tree's operator.

Its binary is built from its Go module through the wrapper module
hack/third_party/kubeflow-training-operator (cached like the cluster's
add-ons, built the first time the scenario runs, never by ``make
binaries``), its PyTorchJob CRD taken from the same module's source. It runs
as its manifests deploy it but for the webhook: the cert rotator it starts
with finds the Secret and the ValidatingWebhookConfiguration it keeps (made
empty here: the API server of the local cluster cannot reach a webhook
Service), and only PyTorchJob is enabled (``--enable-scheme=pytorchjob``).
Its webhook server reads the certificates the rotator writes to that Secret
from a folder where kubelet would mount it (:data:`CERT_DIR`): the bench
writes them there, as kubelet would, once the Secret has them.

A job of N replicas is one Master and N - 1 Workers (Kubeflow's PyTorchJob
names its rank 0 Master), with the bench's schedulerName and annotation, so
the stand-in kubelet marks its pods Running as it does the operator's; a job
is Running when its condition ``Running`` is True.
"""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from hack.cluster import Cluster, free_port
from hack.cluster.addons import Tool, ensure_addon_binaries
from t9k_operator.kube import AlreadyExists, KubeClient, NotFound
from t9k_operator.resources import NAMESPACES, SECRETS, Resource

from ..common.jobs import NAMESPACE, SCHEDULER
from ..common.operator import Operator, wait_ready

TRAINING_OPERATOR = Tool(
    name="kubeflow-training-operator",
    title="Kubeflow's training-operator",
    version_key="KUBEFLOW_TRAINING_OPERATOR_VERSION",
    module="github.com/kubeflow/training-operator",
    wrapper="kubeflow-training-operator",
    binaries=(
        ("training-operator", "github.com/kubeflow/training-operator/cmd/training-operator.v1"),
    ),
    crds=(("manifests/base/crds/kubeflow.org_pytorchjobs.yaml", "pytorchjobs.yaml"),),
)
PYTORCHJOBS = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
WEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
# What its cert rotator keeps (v1.9.2: pkg/cert and cmd/training-operator.v1): it updates
# them, never creates them.
OPERATOR_NAMESPACE = "kubeflow"
WEBHOOK_SECRET = "training-operator-webhook-cert"
WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"
CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
CERT_FILES = ("ca.crt", "tls.crt", "tls.key")


def install(cluster: Cluster, client: KubeClient) -> Path:
    """Its CRD (Established), namespace, Secret and webhook configuration;
    the folder of its binary, built first when missing."""
    folder = ensure_addon_binaries(TRAINING_OPERATOR)
    cluster.kubectl("apply", "--server-side", "-f", str(folder / "crds" / "pytorchjobs.yaml"))
    cluster.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    with contextlib.suppress(AlreadyExists):
        client.create(NAMESPACES, {"metadata": {"name": OPERATOR_NAMESPACE}})
    with contextlib.suppress(AlreadyExists):
        client.create(SECRETS, {"metadata": {"name": WEBHOOK_SECRET}}, OPERATOR_NAMESPACE)
    with contextlib.suppress(AlreadyExists):
        client.create(WEBHOOKS, {"metadata": {"name": WEBHOOK_CONFIGURATION}, "webhooks": []})
    return folder


def job_body(name: str, replicas: int) -> dict[str, Any]:
    """A PyTorchJob of one Master and ``replicas - 1`` Workers."""

    def replica(count: int) -> dict[str, Any]:
        container = {
            "name": "pytorch",
            "image": "pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel",
            "command": ["python", "dist_mnist.py"],
        }
        return {
            "replicas": count,
            "restartPolicy": "OnFailure",
            "template": {
                "metadata": {"annotations": {"kwok.t9k.dev/manual": "true"}},
                "spec": {"schedulerName": SCHEDULER, "containers": [container]},
            },
        }

    specs = {"Master": replica(1)}
    if replicas > 1:
        specs["Worker"] = replica(replicas - 1)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"pytorchReplicaSpecs": specs},
    }


def running(job: dict[str, Any]) -> bool:
    """Its condition Running is True."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Running" and c.get("status") == "True" for c in conditions)


class TrainingOperator(Operator):
    """Kubeflow's training-operator as a process of its own against
    ``kubeconfig``: metrics, probes and webhook server on free ports, its log
    at ``log_path``. Ready when its /readyz says so (its certificates made)."""

    def __init__(
        self, folder: Path, kubeconfig: Path, log_path: Path, client: KubeClient, *flags: str
    ) -> None:
        self.client = client
        self.mounted = False
        self.health = free_port()
        self.metrics = free_port()
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.proc = subprocess.Popen(
            [
                str(folder / "training-operator"),
                "--enable-scheme=pytorchjob",
                f"--metrics-bind-address=127.0.0.1:{self.metrics}",
                f"--health-probe-bind-address=127.0.0.1:{self.health}",
                f"--webhook-server-port={free_port()}",
                *flags,
            ],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 120) -> None:
        def mount() -> None:
            self.mounted = self.mounted or self._mount_certificates()

        try:
            wait_ready(self.proc, self.health, timeout, "training-operator", each=mount)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc} (its log: {self.log_path})") from None

    def _mount_certificates(self) -> bool:
        """The Secret's certificates written to :data:`CERT_DIR`, as kubelet
        mounts them in its pod; False while the rotator has not made them."""
        try:
            secret = self.client.get(SECRETS, WEBHOOK_SECRET, OPERATOR_NAMESPACE)
        except NotFound:
            return False
        data = secret.get("data") or {}
        if not all(data.get(name) for name in CERT_FILES):
            return False
        CERT_DIR.mkdir(parents=True, exist_ok=True)
        for name in CERT_FILES:
            (CERT_DIR / name).write_bytes(base64.b64decode(data[name]))
        return True

    def sums(self) -> dict[str, float]:
        """Its reconciles and their time, its queue wait (controller-runtime's
        metrics of its PyTorchJob controller)."""
        wanted = {
            "controller_runtime_reconcile_total": "reconciles",
            "controller_runtime_reconcile_time_seconds_sum": "reconcile_s",
            "workqueue_queue_duration_seconds_sum": "queue_wait_s",
            "workqueue_queue_duration_seconds_count": "queue_gets",
        }
        out = dict.fromkeys(wanted.values(), 0.0)
        url = f"http://127.0.0.1:{self.metrics}/metrics"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as resp:
            for line in resp.read().decode().splitlines():
                name = line.partition("{")[0]
                if name in wanted and "pytorchjob" in line:
                    out[wanted[name]] += float(line.rpartition(" ")[2])
        return out

    def error_lines(self) -> int:
        self._log.flush()
        text = self.log_path.read_text(errors="replace")
        return sum("\tERROR\t" in line for line in text.splitlines())
