"""The pod host's node: see the package docstring for what it reproduces and
why. The names other modules have long imported from here are re-exported."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.integration.podhost import network
from tests.integration.podhost.container_config import (
    RUNTIME_CAPABILITIES,
    SERVICE_ENV,
    kubelet_expand,
)
from tests.integration.podhost.dns import CLUSTER_DOMAIN
from tests.integration.podhost.image import NO_HOST_KEYS, STOCK, Image
from tests.integration.podhost.lifecycle import PodFailed
from tests.integration.podhost.pod import PodRun
from tests.integration.podhost.processes import ENTRY, container_process
from tests.integration.podhost.volumes import atomic_write, payload, set_volume_ownership

if TYPE_CHECKING:
    from t9k_operator.kube import KubeClient

__all__ = [
    "CLUSTER_DOMAIN",
    "ENTRY",
    "NO_HOST_KEYS",
    "RUNTIME_CAPABILITIES",
    "SERVICE_ENV",
    "STOCK",
    "Image",
    "Node",
    "PodFailed",
    "PodRun",
    "atomic_write",
    "container_process",
    "kubelet_expand",
    "payload",
    "set_volume_ownership",
]

_counter = itertools.count()


class Node:
    """One node: runs pods, holds the API objects their volumes refer to, and
    is the cluster DNS for the pods it runs."""

    def __init__(
        self,
        root: Path,
        namespace: str = "ns",
        objects: Iterable[Mapping[str, Any]] = (),
        *,
        client: KubeClient | None = None,
        host_services: Iterable[str] = (),
    ):
        """``client``: the API server kubelet talks to, for the pods' projected
        ServiceAccount tokens (TokenRequest); without one a token file holds a
        placeholder, for pods that never show it to anyone.

        ``host_services``: Services (``name.namespace``) whose endpoint is a
        process of this machine listening on 0.0.0.0, with the Service's
        port its own. The pods reach it at :attr:`host_address` (a link from
        the pods' bridge to this machine's network) by the names cluster DNS
        gives the Service, as kube-proxy would take them to it."""
        if os.geteuid() != 0:
            raise AssertionError("the pod host needs root (namespaces and mounts)")
        for tool in ("ip", "unshare", "nsenter", "setpriv", "mount"):
            if not shutil.which(tool):
                raise AssertionError(f"the pod host needs {tool}")
        self.root = root
        self.namespace = namespace
        self.client = client
        self.objects: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.claims: dict[str, Path] = {}
        for obj in objects:
            self.add(obj)
        self.tag = f"t9k{os.getpid()}n{next(_counter)}"
        self.bridge_ns = f"{self.tag}br"
        self.pods: list[PodRun] = []
        self._next_ip = 2
        self.net = network.POD_NET
        self.host_services = [tuple(str(s).split(".", 1)) for s in host_services]
        if any(len(s) != 2 for s in self.host_services):
            raise AssertionError(f"host_services are name.namespace: {list(host_services)}")
        self.host_link = f"{self.tag}h"
        self.host_address: str | None = None
        # Image layers live on a tmpfs: overlayfs refuses a lower layer that
        # lies inside another lower layer (this machine's root).
        (root / "images").mkdir(parents=True, exist_ok=True)
        network.run("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(root / "images"))
        network.add_bridge(self.bridge_ns)
        if self.host_services:
            self.net = network.link_to_host(self.bridge_ns, self.host_link)
            self.host_address = f"{self.net}.1"

    def add(self, obj: Mapping[str, Any]) -> None:
        self.objects[(obj["kind"], obj["metadata"]["name"])] = obj

    def add_claim(self, name: str, contents: Path) -> None:
        """A PersistentVolumeClaim ``name``, bound: ``contents`` stands for its
        volume, as kubelet has it mounted on the node for a pod that uses it."""
        self.claims[name] = contents

    def run_pod(
        self,
        pod: Mapping[str, Any],
        image: Image | Mapping[str, Image] = STOCK,
        env: Mapping[str, str] | None = None,
    ) -> PodRun:
        """Start ``pod`` and return once its init containers are through and
        the others started (or an init container failed); a pod that cannot
        start raises :class:`PodFailed`. ``image`` is every container's
        image, or a map from container name."""
        run = self.start_pod(pod, image, env)
        run.initialized.wait()
        if run.error is not None:
            raise run.error
        return run

    def start_pod(
        self,
        pod: Mapping[str, Any],
        image: Image | Mapping[str, Image] = STOCK,
        env: Mapping[str, str] | None = None,
    ) -> PodRun:
        """Start ``pod`` and return at once, its containers starting in the
        background as kubelet starts them (see :meth:`PodRun.status`)."""
        run = PodRun(self, pod, image, extra_env=env or {})
        self.pods.append(run)
        run.start()
        return run

    def allocate_ip(self) -> str:
        ip = f"{self.net}.{self._next_ip}"
        self._next_ip += 1
        return ip

    def refresh_dns(self) -> None:
        for p in self.pods:
            p.write_hosts()

    def close(self) -> None:
        for p in self.pods:
            p.stop()
        subprocess.run(["umount", "-l", str(self.root / "images")], capture_output=True)
        if self.host_address:
            subprocess.run(["ip", "link", "del", self.host_link], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.bridge_ns], capture_output=True)
