"""The cluster's nodes: fake ones, their kubelets simulated by the KWOK
controller with the stages in hack/third_party/kwok/stages.yaml, and
hack/third_party/kwok/pod_logs.py giving each container a log of its own for
KWOK's kubelet endpoint to serve (``pod-logs/``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .common import THIRD_PARTY
from .control_plane import _Boot
from .processes import _start, _wait, kubectl

# Fake nodes: enough for several multi-replica jobs at once, with GPUs.
NODES = 4
NODE_CAPACITY = {
    "cpu": "64",
    "memory": "512Gi",
    "pods": "110",
    "nvidia.com/gpu": "8",
    "ephemeral-storage": "1Ti",
}


def start_pod_logs(
    bin_dir: Path, kubeconfig: Path, workdir: Path, server: str, procs: dict[str, int]
) -> None:
    """Each container's own log, as KWOK's kubelet endpoint serves it: the
    ``Logs`` definition (hack/third_party/kwok/logs.yaml) installed, and
    hack/third_party/kwok/pod_logs.py started, which writes every pod's
    container logs under ``pod-logs/`` (the lines of
    hack/third_party/kwok/container.log, each with the pod's and the
    container's names) and names them in the pod's ``Logs`` object. Returns once it has
    made those of the pods already there."""
    kubectl(bin_dir, kubeconfig, "apply", "-f", str(THIRD_PARTY / "kwok" / "logs.yaml"))
    kubectl(
        bin_dir,
        kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/logs.kwok.x-k8s.io",
    )
    ready = workdir / "pod-logs.ready"
    ready.unlink(missing_ok=True)
    procs["pod-logs"] = _start(
        bin_dir,
        "pod-logs",
        [
            f"--server={server}",
            f"--pki={workdir / 'pki'}",
            f"--dir={workdir / 'pod-logs'}",
            f"--template={THIRD_PARTY / 'kwok' / 'container.log'}",
            f"--ready={ready}",
        ],
        workdir,
        program=[sys.executable, str(THIRD_PARTY / "kwok" / "pod_logs.py")],
    )
    _wait("the pods' logs", ready.exists, 30, procs, workdir)


def _start_kwok(b: _Boot) -> None:
    """The KWOK controller, managing the nodes annotated as fake (not waited for)."""
    workdir, pki, port = b.workdir, b.pki, b.ports["kwok"]
    # Port-forwards to port 6006 (a TensorBoard's) get
    # hack/third_party/kwok/tensorboard_stub.py.
    forward_config = workdir / "kwok-portforward.yaml"
    forward_config.write_text(
        (THIRD_PARTY / "kwok" / "portforward.yaml")
        .read_text()
        .replace("@PYTHON@", sys.executable)
        .replace("@STUB@", str(THIRD_PARTY / "kwok" / "tensorboard_stub.py"))
    )
    b.start(
        "kwok",
        [
            f"--kubeconfig={workdir / 'kwok.kubeconfig'}",
            f"--config={THIRD_PARTY / 'kwok' / 'stages.yaml'}",
            # Container logs: each pod's Logs object (start_pod_logs), served on
            # its kubelet endpoint over TLS with the API server's certificate
            # (127.0.0.1 is in it), which every node reports as its InternalIP
            # and daemonEndpoints port.
            "--enable-crds=Logs",
            f"--config={forward_config}",
            "--node-ip=127.0.0.1",
            f"--node-port={port}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--node-lease-duration-seconds=20",
            "--cidr=10.244.0.0/16",
            f"--server-address=127.0.0.1:{port}",
        ],
    )


def _node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"kwok-node-{i}",
            "annotations": {
                "kwok.x-k8s.io/node": "fake",
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "kubernetes.io/hostname": f"kwok-node-{i}",
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {"capacity": NODE_CAPACITY, "allocatable": NODE_CAPACITY},
    }


def _add_nodes(b: _Boot) -> None:
    """The NODES fake nodes, once KWOK has them Ready; then until the
    controller-manager has made the default service account."""
    bin_dir, kubeconfig = b.bin_dir, b.kubeconfig
    nodes = [_node(i) for i in range(NODES)]
    kubectl(
        bin_dir,
        kubeconfig,
        "apply",
        "-f",
        "-",
        input_=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}),
    )

    def nodes_ready() -> bool:
        out = kubectl(bin_dir, kubeconfig, "get", "nodes", "-o", "json", check=False)
        items = json.loads(out.stdout or "{}").get("items", [])
        ready = [
            n
            for n in items
            for c in n.get("status", {}).get("conditions", [])
            if c["type"] == "Ready" and c["status"] == "True"
        ]
        return len(ready) == NODES

    b.wait("nodes Ready", nodes_ready, 60)
    b.wait(
        "the default service account (controller-manager up)",
        lambda: (
            kubectl(
                bin_dir,
                kubeconfig,
                "get",
                "serviceaccount",
                "default",
                "-n",
                "default",
                check=False,
            ).returncode
            == 0
        ),
        60,
    )
