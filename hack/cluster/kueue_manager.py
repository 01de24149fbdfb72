"""Kueue's manager in the cluster (the add-on ``KUEUE``): its namespace, its
configuration and serving certificate (with the conversion webhook of its
CRDs, ``kueue_webhook``), and its visibility API (pending workloads' positions),
served through the API server's aggregation layer (``_serve_visibility``)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import log
from .kueue_webhook import (
    KUEUE_CERT_SECRET,
    KUEUE_NAMESPACE,
    WEBHOOK_SERVICE,
    _conversion,
    _webhook_certs,
)
from .ports import free_port
from .processes import _alive, _Launch, _wait, kubectl

MULTIKUEUE_CONFIG = Path(__file__).resolve().parents[2] / "manifests/kueue-config/multikueue.json"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_SERVICE = "kueue-visibility-server"
VISIBILITY_VERSIONS = (("v1beta2", 200), ("v1beta1", 100))  # (version, versionPriority)


WORKER_LOST_TIMEOUT = "30s"
"""MultiKueue's worker-lost timeout on the local clusters."""


def _visibility_address() -> str | None:
    """The machine's address the API server reaches Kueue's visibility server at,
    or None when it cannot serve here: the machine has no address but
    loopback, which an Endpoints may not name, or no mount namespace can be
    made. (Its port is one of its own, ``visibilityServer.bindPort`` in the
    configuration: until Kueue v0.17 it was 8082, fixed, and one cluster of a
    machine had it.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # a route's source address; nothing is sent
            address = str(s.getsockname()[0])
        except OSError:
            address = ""
    if not address or address.startswith("127."):
        return _off("this machine has no address but loopback")
    # The manager gets its in-cluster files in a mount namespace (_in_cluster).
    probe = ["unshare", "--mount", "--propagation=private", "true"]
    if shutil.which("unshare") is None or subprocess.run(probe, capture_output=True).returncode:
        return _off("no mount namespace can be made here (unshare)")
    return address


VISIBILITY_OFF = ""
"""Why this process last left Kueue's visibility API off ("" when it did not)."""


def _off(why: str) -> str | None:
    """None, the address of a visibility API left off, saying ``why``."""
    global VISIBILITY_OFF
    VISIBILITY_OFF = why
    log(f"Kueue's visibility API is off: {why}")
    return None


SERVICE_ACCOUNT_DIR = "/run/secrets/kubernetes.io/serviceaccount"  # client-go's in-cluster files
VISIBILITY_ACCOUNT = "kueue-visibility"


def _visibility_account() -> dict[str, Any]:
    """The ServiceAccount VISIBILITY_ACCOUNT, bound to cluster-admin."""
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": VISIBILITY_ACCOUNT, "namespace": KUEUE_NAMESPACE},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": VISIBILITY_ACCOUNT},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": VISIBILITY_ACCOUNT,
                        "namespace": KUEUE_NAMESPACE,
                    }
                ],
            },
        ],
    }


def _in_cluster(
    bin_dir: Path, workdir: Path, server: str
) -> tuple[dict[str, str], tuple[str, ...]]:
    """What the Kueue manager needed for its visibility server up to v0.12: that
    server (k8s.io/apiserver's delegated authentication and authorization)
    read only client-go's in-cluster configuration, never ``--kubeconfig``
    (v0.17 reads ``--kubeconfig`` too; kept, as it does no harm): the API
    server's address from ``KUBERNETES_SERVICE_HOST`` / ``_PORT`` and a token
    and CA from SERVICE_ACCOUNT_DIR. The token is the ServiceAccount
    VISIBILITY_ACCOUNT's (cluster-admin: this is a test cluster), and the files
    reach the manager alone, in a mount namespace of its own where a tmpfs
    covers /run (nothing else of this machine sees them). Returns the
    environment and the wrapper command (see ``_start``)."""
    kubeconfig = workdir / "kubeconfig"
    account = _visibility_account()
    kubectl(bin_dir, kubeconfig, "apply", "--server-side", "-f", "-", input_=json.dumps(account))
    token = kubectl(
        bin_dir,
        kubeconfig,
        "create",
        "token",
        VISIBILITY_ACCOUNT,
        f"--namespace={KUEUE_NAMESPACE}",
        "--duration=8760h",
    ).stdout.strip()
    files = workdir / "kueue" / "serviceaccount"
    files.mkdir(parents=True, exist_ok=True)
    (files / "token").write_text(token)
    shutil.copyfile(workdir / "pki" / "ca.crt", files / "ca.crt")
    (files / "namespace").write_text(KUEUE_NAMESPACE)
    host, port = urllib.parse.urlsplit(server).hostname, urllib.parse.urlsplit(server).port
    env = {"KUBERNETES_SERVICE_HOST": str(host), "KUBERNETES_SERVICE_PORT": str(port)}
    script = (
        "mount -t tmpfs tmpfs /run && "
        f"mkdir -p {SERVICE_ACCOUNT_DIR} && cp {files}/* {SERVICE_ACCOUNT_DIR}/ && "
        'exec "$@"'
    )
    return env, ("unshare", "--mount", "--propagation=private", "sh", "-c", script, "sh")


def _visibility_objects(address: str, port: int) -> dict[str, Any]:
    """Kueue's visibility API's APIService, behind the Service
    ``kueue-visibility-server`` without a selector, its Endpoints naming
    ``address`` (see ``_serve_visibility``)."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": VISIBILITY_SERVICE, "namespace": KUEUE_NAMESPACE},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]},
    }
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": VISIBILITY_SERVICE, "namespace": KUEUE_NAMESPACE},
        "subsets": [
            {
                "addresses": [{"ip": address}],
                "ports": [{"name": "https", "port": port}],
            }
        ],
    }
    services = [
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": f"{version}.{VISIBILITY_GROUP}"},
            "spec": {
                "group": VISIBILITY_GROUP,
                "version": version,
                "groupPriorityMinimum": 100,
                "versionPriority": priority,
                "insecureSkipTLSVerify": True,
                "service": {"name": VISIBILITY_SERVICE, "namespace": KUEUE_NAMESPACE},
            },
        }
        # Both versions v0.17 serves; v1beta2 preferred, as in Kueue's manifests.
        for version, priority in VISIBILITY_VERSIONS
    ]
    return {"apiVersion": "v1", "kind": "List", "items": [service, endpoints, *services]}


def _serve_visibility(
    bin_dir: Path, kubeconfig: Path, address: str, port: int, workdir: Path, procs: dict[str, int]
) -> None:
    """Register Kueue's visibility API with the API server, as Kueue's own
    manifests do (an APIService, behind the Service
    ``kueue-visibility-server``), the Service here without a selector and its
    Endpoints naming this machine's ``address`` (no pods, no kube-proxy: the
    API server routes to endpoints). The server's certificate is self-signed,
    so the APIService skips verifying it, as Kueue's manifests do."""
    body = _visibility_objects(address, port)
    kubectl(bin_dir, kubeconfig, "apply", "--server-side", "-f", "-", input_=json.dumps(body))

    def available() -> bool:
        proc = kubectl(
            bin_dir,
            kubeconfig,
            "get",
            "--raw",
            f"/apis/{VISIBILITY_GROUP}/{VISIBILITY_VERSIONS[0][0]}",
            check=False,
        )
        return proc.returncode == 0

    _wait("Kueue's visibility API", available, 60, procs, workdir)


def _visibility_served(
    info: dict[str, Any],
    bin_dir: Path,
    kubeconfig: Path,
    workdir: Path,
    manager: dict[str, int],
    save: Callable[[], None],
) -> str:
    """Kueue's visibility API served at ``info["visibility"]``; what the
    ready message adds. When it is not, while the manager itself serves,
    ``info`` (in the state ``save`` writes) records why."""
    address, port = info["visibility"], int(info["visibilityPort"])
    try:
        _serve_visibility(bin_dir, kubeconfig, address, port, workdir, manager)
        return f"; visibility API at {address}:{port}"
    except SystemExit as exc:  # Kueue itself serves: only this API is missing
        if not all(_alive(p) for p in manager.values()):
            raise
        log(f"Kueue's visibility API is not served: {exc}")
        info["visibility"], info["visibilityOff"] = "", f"not served: {exc}"
        save()
    return ""


def _create_namespace(bin_dir: Path, kubeconfig: Path) -> None:
    """Its namespace (the Secret of its certificates is applied at launch,
    ``kueue_webhook._conversion``)."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}}
    proc = kubectl(
        bin_dir, kubeconfig, "create", "-f", "-", input_=json.dumps(namespace), check=False
    )
    if proc.returncode != 0 and "AlreadyExists" not in proc.stderr:
        raise SystemExit(f"cluster: creating the Namespace for Kueue:\n{proc.stderr}")


def _kueue_config(workdir: Path, ports: dict[str, int], pki: Path, visibility: bool) -> Path:
    """The Kueue manager's configuration file (config.kueue.x-k8s.io/v1beta2),
    and the serving certificate its webhook server needs to start.

    Kueue's admission webhooks are not registered with the API server: whoever
    uses it here creates Workloads itself, so its controllers and scheduler
    are what matter; its webhook server serves the CRDs' conversion
    (``kueue_webhook``). Its internal certificate management stays on: with it
    off the manager insists on a metrics certificate under
    /etc/kueue/metrics/certs, and the visibility server on one under
    /visibility. It keeps the CA and certificate of the Secret
    ``kueue_webhook._conversion`` fills, and finds no admission webhook
    configuration to inject that CA into (an error in its log, and no harm).
    What it writes in that Secret would reach the manager only as a mounted
    volume, so the files it waits for in ``certDir`` are ours, the same
    certificate. No job integration is used:
    in v1beta2 an empty ``frameworks`` means Kueue's default (``batch/job``),
    which acts only on batch Jobs labelled with a queue, and nothing here
    makes one.
    """
    certs = workdir / "kueue" / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    _webhook_certs(pki)
    shutil.copyfile(pki / "kueue-webhook.crt", certs / "tls.crt")
    shutil.copyfile(pki / "kueue-webhook.key", certs / "tls.key")
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "leaderElection": {"leaderElect": False},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['kueue-health']}"},
        "metrics": {"bindAddress": "0"},  # off
        "webhook": {"host": "127.0.0.1", "port": ports["kueue-webhook"], "certDir": str(certs)},
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": WEBHOOK_SERVICE,
            "webhookSecretName": KUEUE_CERT_SECRET,
        },
        "clientConnection": {"qps": 50, "burst": 100},
        "manageJobsWithoutQueueName": False,
        # The on-demand visibility API (pending workloads' positions) is an
        # aggregated API server inside the manager, on a port of its own of
        # every address (visibilityServer, new in v0.17, which deprecates its
        # flag --visibility-server-port): on when the machine has an address an
        # Endpoints may name (not loopback); see _serve_visibility.
        "featureGates": {"VisibilityOnDemand": visibility},
        "visibilityServer": {"bindPort": ports["kueue-visibility"]},
    }
    # MultiKueue may dispatch every kind of the operator (the generated part of a
    # manager's configuration, docs/scheduling.md): it acts only on a
    # ClusterQueue with a MultiKueue admission check, which nothing makes but
    # the tests of MultiKueue.
    multikueue: dict[str, Any] = json.loads(MULTIKUEUE_CONFIG.read_text())["multiKueue"]
    # A worker unreachable this long loses its jobs to another worker (Kueue's
    # default, 15 minutes, is longer than a test should wait for it).
    config["multiKueue"] = {**multikueue, "workerLostTimeout": WORKER_LOST_TIMEOUT}
    conf = workdir / "kueue" / "config.yaml"
    conf.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
    return conf


def _kueue_launches(
    workdir: Path, state: dict[str, Any], kubeconfigs: dict[str, Path]
) -> list[_Launch]:
    """The Kueue manager, its visibility API on when it can serve here
    (recorded under ``kueue`` in ``state``, or why not)."""
    pki, ports = workdir / "pki", state["ports"]
    ports["kueue-health"], ports["kueue-webhook"] = free_port(), free_port()
    ports["kueue-visibility"] = free_port()
    address = _visibility_address()
    state["kueue"]["visibility"] = address or ""
    state["kueue"]["visibilityPort"] = ports["kueue-visibility"]
    if not address:
        state["kueue"]["visibilityOff"] = VISIBILITY_OFF
    bin_dir, kubeconfig = Path(state["bin_dir"]), workdir / "kubeconfig"
    _conversion(bin_dir, kubeconfig, pki, ports["kueue-webhook"])
    conf = _kueue_config(workdir, ports, pki, bool(address))
    env: dict[str, str] = {}
    wrap: tuple[str, ...] = ()
    if address:
        env, wrap = _in_cluster(bin_dir, workdir, state["server"])
    return [
        _Launch(
            "kueue-manager",
            [
                f"--config={conf}",
                f"--kubeconfig={kubeconfigs['kueue-manager']}",
                "--zap-log-level=2",  # each Workload's reconciles and status changes
            ],
            # readyz: its certificates are in place and its webhook server
            # serves; the controllers start right then.
            f"http://127.0.0.1:{ports['kueue-health']}/readyz",
            env,
            wrap,
        )
    ]
