"""One pod on the pod host: its directory, network, sandbox, volumes and
containers' processes made as kubelet and the runtime make them, and what
``kubectl`` does with a running pod (logs, exec, status, delete)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tests.integration.podhost import dns, processes
from tests.integration.podhost.container_config import container_spec
from tests.integration.podhost.image import Image
from tests.integration.podhost.lifecycle import Container
from tests.integration.podhost.network import add_pod_network
from tests.integration.podhost.volumes import make_volumes
from tests.integration.podhost.worker import PodWorker

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.podhost.host import Node


class PodRun:
    """A pod the node runs: made by :meth:`start`, its containers run by a
    :class:`PodWorker`, ended by :meth:`stop`."""

    def __init__(
        self,
        node: Node,
        pod: Mapping[str, Any],
        image: Image | Mapping[str, Image],
        extra_env: Mapping[str, str],
    ) -> None:
        self.node = node
        self.pod = pod
        self.name = pod["metadata"]["name"]
        spec = pod["spec"]
        self.hostname = spec.get("hostname") or self.name
        self.subdomain = spec.get("subdomain")
        self.images = image
        self.extra_env = dict(extra_env)
        # By uid, as kubelet's pods directory is: a replica recreated under the
        # same name is another pod (pkg/kubelet/kubelet_getters.go getPodDir).
        self.dir = node.root / "pods" / str(pod["metadata"].get("uid") or self.name)
        self.netns = f"{node.tag}p{len(node.pods)}"
        self.ip = ""
        self.mounts: list[Path] = []
        self.sandbox: subprocess.Popen[bytes] | None = None
        self.worker = PodWorker(pod, self._start_container, self._container_pid, self.exec)
        self.containers: dict[str, Container] = self.worker.containers
        self.initialized: threading.Event = self.worker.initialized

    @property
    def error(self) -> BaseException | None:
        """Why the pod could not start, once :attr:`initialized` is set."""
        return self.worker.error

    @property
    def deletion_timestamp(self) -> str | None:
        return self.worker.deletion_timestamp

    # ---------------------------------------------------------------- setup

    def image_for(self, container: str) -> Image:
        if isinstance(self.images, Image):
            return self.images
        return self.images[container]

    def start(self) -> None:
        self.dir.mkdir(parents=True)
        self.ip = self.node.allocate_ip()
        add_pod_network(self.node.bridge_ns, self.netns, self.ip)
        self._sandbox()
        make_volumes(self)
        self.write_hosts()
        self.node.refresh_dns()
        (self.dir / "hostname").write_text(self.hostname + "\n")
        (self.dir / "resolv.conf").write_text(dns.resolv_conf(self.node.namespace))
        threading.Thread(target=self.worker.run, daemon=True).start()

    def _sandbox(self) -> None:
        self.sandbox = processes.start_sandbox(self.netns, self.hostname)
        shm = self.dir / "shm"
        processes.mount_shm(shm)
        self.mounts.append(shm)
        processes.await_sandbox(self.sandbox, self.name)

    def write_hosts(self) -> None:
        dns.write_hosts(self)

    def _start_container(self, c: Mapping[str, Any]) -> subprocess.Popen[bytes]:
        spec = container_spec(self, c)
        spec_file = self.dir / f"{c['name']}.json"
        spec_file.write_text(json.dumps(spec))
        assert self.sandbox is not None
        log_file = self.dir / f"{c['name']}.log"
        return processes.start_container(self.sandbox.pid, spec_file, log_file)

    # ----------------------------------------------------------- lifecycle

    def delete(self, grace_seconds: float | None = None) -> None:
        """A graceful deletion of the pod (:meth:`PodWorker.delete`)."""
        self.worker.delete(grace_seconds)

    def status(self) -> dict[str, Any]:
        """The pod's status as kubelet reports it (:meth:`PodWorker.status`)."""
        return self.worker.status(self.ip)

    @property
    def phase(self) -> str:
        return str(self.status()["phase"])

    # ------------------------------------------------------------- queries

    def logs(self, container: str) -> str:
        return (self.dir / f"{container}.log").read_text(errors="replace")

    def wait(self, container: str, timeout: float) -> int:
        """The container's exit code, once it has ended."""
        deadline = time.monotonic() + timeout
        while container not in self.containers and time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            time.sleep(0.05)
        c = self.containers.get(container)
        if c is None or not c.done.wait(max(deadline - time.monotonic(), 0)):
            log = self.logs(container)[-3000:] if c else ""
            raise AssertionError(
                f"{self.name}/{container} still running after {timeout}s; its log:\n{log}"
            )
        assert c.exit_code is not None
        return c.exit_code

    def _container_pid(self, container: str) -> int:
        """The host pid of the container's first process (pid 1 inside)."""
        pid = processes.container_process(self.containers[container].proc.pid, timeout=10)
        if pid is None:
            raise AssertionError(f"{self.name}/{container}: no container process")
        return pid

    def handles(self, container: str, sig: int) -> bool:
        """Whether the container's pid 1 has set a handler for ``sig``. Until
        it has, the kernel drops any signal but SIGKILL sent to it from
        outside its PID namespace, from kubelet as from here: a SIGTERM sent
        before a shell has run its ``trap`` is lost."""
        return processes.handles_signal(self._container_pid(container), sig)

    def exec(
        self,
        container: str,
        argv: list[str],
        timeout: float = 60,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``kubectl exec``: run ``argv`` in the running container's namespaces and root."""
        pid = self._container_pid(container)
        spec = json.loads((self.dir / f"{container}.json").read_text())
        return processes.exec_in(pid, spec, argv, env, timeout)

    def stop(self) -> None:
        """Everything of the pod gone: its processes killed, its mounts and
        its network namespace removed."""
        self.worker.close()
        procs = [c.proc for c in self.containers.values()]
        processes.kill_pod(self.netns, [*procs, *([self.sandbox] if self.sandbox else [])])
        for target in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(target)], capture_output=True)
        self.mounts.clear()
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)
