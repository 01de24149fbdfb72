"""The control plane's start: its PKI, ports and kubeconfigs, then etcd,
kube-apiserver (TLS, RBAC, default admission plugins, the aggregation layer),
kube-controller-manager (garbage collection, namespace lifecycle, service
accounts, node lifecycle) and kube-scheduler."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .pki import FRONT_PROXY, make_pki, write_kubeconfig
from .ports import free_port
from .processes import _https_get, _start, _wait
from .state import _save


@dataclass
class _Boot:
    """A cluster's start under way: its state folder, the binaries' folder,
    and its state as ``cluster.json`` records it (saved as each process
    starts, so that ``down`` stops whatever did)."""

    workdir: Path
    bin_dir: Path
    state: dict[str, Any]

    @property
    def ports(self) -> dict[str, int]:
        ports: dict[str, int] = self.state["ports"]
        return ports

    @property
    def procs(self) -> dict[str, int]:
        procs: dict[str, int] = self.state["pids"]
        return procs

    @property
    def server(self) -> str:
        return str(self.state["server"])

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    def save(self) -> None:
        _save(self.workdir, self.state)

    def start(self, tool: str, args: list[str]) -> None:
        """``tool`` started (see ``_start``) and recorded."""
        self.procs[tool] = _start(self.bin_dir, tool, args, self.workdir)

    def wait(self, what: str, check: Callable[[], object], timeout: float) -> None:
        """Until ``check`` holds (see ``_wait``), while every process lives."""
        _wait(what, check, timeout, self.procs, self.workdir)


def _boot(name: str, workdir: Path, bin_dir: Path, extra: list[str]) -> _Boot:
    """The start of the cluster ``name``: its PKI, free ports, and the
    kubeconfigs of the admin and of each component, in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    pki = workdir / "pki"
    make_pki(pki)
    ports = {k: free_port() for k in ("etcd", "etcd_peer", "apiserver", "kwok")}
    server = f"https://127.0.0.1:{ports['apiserver']}"
    write_kubeconfig(workdir / "kubeconfig", server, pki, "admin")
    for component in ("controller-manager", "scheduler", "kwok"):
        write_kubeconfig(workdir / f"{component}.kubeconfig", server, pki, component)
    state = {
        "name": name,
        "ports": ports,
        "pids": {},
        "bin_dir": str(bin_dir),
        "server": server,
        "apiserver_flags": extra,
    }
    return _Boot(workdir, bin_dir, state)


def _start_etcd(b: _Boot) -> str:
    """etcd, once it is healthy; its client URL."""
    etcd_url = f"http://127.0.0.1:{b.ports['etcd']}"
    peer_url = f"http://127.0.0.1:{b.ports['etcd_peer']}"
    b.start(
        "etcd",
        [
            "--name=t9k",
            f"--data-dir={b.workdir / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=t9k={peer_url}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
            "--quota-backend-bytes=4294967296",
        ],
    )
    b.save()
    b.wait(
        "etcd",
        lambda: urllib.request.urlopen(f"{etcd_url}/health", timeout=1).status == 200,
        30,
    )
    return etcd_url


def _apiserver_args(b: _Boot, etcd_url: str, extra: list[str]) -> list[str]:
    pki = b.pki
    return [
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={b.ports['apiserver']}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        # Config maps are watched straight from etcd (no watch cache), so an
        # etcd compaction yields a genuine 410 Gone to a watch that resumes
        # from a compacted revision: the informer tests provoke exactly that.
        "--watch-cache-sizes=configmaps#0",
        # Pod logs come from KWOK's kubelet endpoint at the nodes' InternalIP
        # (a KWOK node's Hostname resolves nowhere).
        "--kubelet-preferred-address-types=InternalIP",
        # The aggregation layer (Kueue's visibility API): the API server
        # proxies to an APIService's endpoints (there is no kube-proxy),
        # authenticating with front-proxy-client, whose user headers the
        # aggregated server trusts (it reads them from the ConfigMap
        # kube-system/extension-apiserver-authentication).
        f"--requestheader-client-ca-file={pki / 'ca.crt'}",
        f"--requestheader-allowed-names={FRONT_PROXY}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
        "--enable-aggregator-routing=true",
        # /debug/pprof only for the bench's --pprof (T9K_APISERVER_PROFILING=1).
        f"--profiling={str(bool(os.environ.get('T9K_APISERVER_PROFILING'))).lower()}",
        "--v=1",
        *extra,
    ]


def _start_apiserver(b: _Boot, etcd_url: str, extra: list[str]) -> None:
    """kube-apiserver, with ``extra`` flags, once it is ready."""
    b.start("kube-apiserver", _apiserver_args(b, etcd_url, extra))
    b.save()
    b.wait(
        "kube-apiserver",
        lambda: _https_get(f"{b.server}/readyz", b.pki)[0] == 200,
        60,
    )


def _start_controllers(b: _Boot) -> None:
    """kube-controller-manager and kube-scheduler (not waited for)."""
    workdir, pki = b.workdir, b.pki
    b.start(
        "kube-controller-manager",
        [
            f"--kubeconfig={workdir / 'controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={workdir / 'controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={workdir / 'controller-manager.kubeconfig'}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            "--controllers=*",
            "--concurrent-gc-syncs=5",
            # A node whose kubelet stops renewing its lease is marked not
            # ready after 20 s, not 50 s: the lost-node tests wait for it.
            # KWOK renews every 5 s (a quarter of its lease duration, below),
            # so a busy machine has four renewals to spare.
            "--node-monitor-grace-period=20s",
            "--node-monitor-period=2s",
            "--v=1",
        ],
    )
    b.start(
        "kube-scheduler",
        [
            f"--kubeconfig={workdir / 'scheduler.kubeconfig'}",
            f"--authentication-kubeconfig={workdir / 'scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={workdir / 'scheduler.kubeconfig'}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--leader-elect=false",
            "--v=1",
        ],
    )
