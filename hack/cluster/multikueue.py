"""A MultiKueue trio of local clusters: ``python3 -m hack.cluster multikueue``
(``make cluster CLUSTERS=3``).

The running cluster ``name`` is the manager (Kueue started in it when it has
none); ``<name>-worker-1`` and ``<name>-worker-2`` are its workers, each its
own control plane with KWOK nodes and Kueue (started when not running). On each worker: the
CRDs, the operator's RBAC and ``manifests/kueue`` (the ClusterRole
``t9k-multikueue-worker`` among them), and a ServiceAccount ``multikueue`` in
``kueue-system`` bound to that role and to a role on batch Jobs (the manager's
Kueue watches the kinds of its own integrations on each worker too). On the
manager: a Secret per worker holding a kubeconfig of that ServiceAccount's
token with the worker's CA inline (what MultiKueue accepts), a
MultiKueueCluster per worker, the MultiKueueConfig ``workers`` and the
AdmissionCheck ``multikueue``. Every local cluster's Kueue runs with the
generated ``manifests/kueue-config/multikueue.json``.

What stays the user's (docs/scheduling.md): the ClusterQueues and LocalQueues
(a manager's ClusterQueue names the check in ``admissionChecksStrategy``) and
the operator on each cluster.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from .common import log
from .lifecycle import kueue, up
from .processes import kubectl
from .state import state_dir

ROOT = Path(__file__).resolve().parents[2]
WORKERS = ("worker-1", "worker-2")
KUEUE_NAMESPACE = "kueue-system"
ACCOUNT = "multikueue"
API = "kueue.x-k8s.io/v1beta2"
CHECK, CONFIG = "multikueue", "workers"


def worker_name(manager: str, worker: str) -> str:
    """The local cluster of a worker of the manager ``manager``."""
    return f"{manager}-{worker}"


def _bin_dir(name: str) -> Path:
    return Path(json.loads((state_dir(name) / "cluster.json").read_text())["bin_dir"])


def _apply(name: str, body: dict[str, Any] | None = None, *paths: str) -> None:
    kubeconfig, bin_dir = state_dir(name) / "kubeconfig", _bin_dir(name)
    for path in paths:
        kubectl(bin_dir, kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", path)
    if body is not None:
        kubectl(
            bin_dir,
            kubeconfig,
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "-",
            input_=json.dumps(body),
        )


def _binding(name: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": KUEUE_NAMESPACE}],
    }


def _worker_access(name: str) -> dict[str, Any]:
    """The worker's objects for the manager's Kueue: its ServiceAccount and bindings."""
    batch = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{ACCOUNT}-batch"},
        "rules": [
            {
                "apiGroups": ["batch"],
                "resources": ["jobs"],
                "verbs": ["get", "list", "watch", "create", "delete"],
            }
        ],
    }
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": ACCOUNT, "namespace": KUEUE_NAMESPACE},
    }
    items = [account, batch, _binding(ACCOUNT, "t9k-multikueue-worker")]
    items.append(_binding(f"{ACCOUNT}-batch", f"{ACCOUNT}-batch"))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _kubeconfig(name: str) -> str:
    """A kubeconfig of the worker ``name``'s ServiceAccount: a token, the CA inline."""
    workdir, bin_dir = state_dir(name), _bin_dir(name)
    token = kubectl(
        bin_dir,
        workdir / "kubeconfig",
        "create",
        "token",
        ACCOUNT,
        f"--namespace={KUEUE_NAMESPACE}",
        "--duration=8760h",
    ).stdout.strip()
    state = json.loads((workdir / "cluster.json").read_text())
    ca = base64.b64encode((workdir / "pki" / "ca.crt").read_bytes()).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": state["server"], "certificate-authority-data": ca}}
        ],
        "users": [{"name": ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": ACCOUNT}}],
        "current-context": name,
    }
    return json.dumps(doc)


def _manager_objects(kubeconfigs: dict[str, str]) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for worker, kubeconfig in kubeconfigs.items():
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": worker, "namespace": KUEUE_NAMESPACE},
                "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
            }
        )
        source = {"kubeConfig": {"locationType": "Secret", "location": worker}}
        items.append(
            {
                "apiVersion": API,
                "kind": "MultiKueueCluster",
                "metadata": {"name": worker},
                "spec": {"clusterSource": source},
            }
        )
    items.append(
        {
            "apiVersion": API,
            "kind": "MultiKueueConfig",
            "metadata": {"name": CONFIG},
            "spec": {"clusters": list(kubeconfigs)},
        }
    )
    parameters = {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CONFIG}
    items.append(
        {
            "apiVersion": API,
            "kind": "AdmissionCheck",
            "metadata": {"name": CHECK},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": parameters},
        }
    )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def multikueue(name: str) -> dict[str, Path]:
    """The trio of the manager ``name`` (running already: it is left as it runs,
    Kueue added) connected to its two workers; each cluster's kubeconfig, by
    role (``manager``, ``worker-1``, ``worker-2``)."""
    kueue(name)
    out = {"manager": state_dir(name) / "kubeconfig"}
    kubeconfigs: dict[str, str] = {}
    for worker in WORKERS:
        cluster = worker_name(name, worker)
        out[worker] = up(cluster, with_kueue=True)
        _apply(
            cluster,
            None,
            str(ROOT / "manifests" / "crds"),
            str(ROOT / "manifests" / "rbac"),
            str(ROOT / "manifests" / "kueue"),
        )
        _apply(cluster, _worker_access(cluster))
        kubeconfigs[worker] = _kubeconfig(cluster)
    _apply(name, _manager_objects(kubeconfigs))
    log(f"MultiKueue: {name} dispatches to {', '.join(worker_name(name, w) for w in WORKERS)}")
    return out
