"""A Deployment of ours (the operator's, the console's) run for real on this
machine: each replica from the image's root filesystem (hack/release/rootfs),
as kubelet and runc would start it (incluster_entry.py says how the
container is made).

Each replica is a pod with a network namespace of its own, where the
``kubernetes`` Service's address reaches the local API server
(incluster_network.py). Unless the pod says
``automountServiceAccountToken: false``, its ServiceAccount volume holds a
real token of its ServiceAccount (TokenRequest), the cluster's CA and the
namespace; its own volumes are made as kubelet makes them
(incluster_volumes.py).

Needs root, ``ip`` (iproute2) and ``unshare`` (util-linux).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from t9k_operator.kube import KubeClient
from tests.integration.cluster import wait_for
from tests.integration.incluster_network import PodNetwork
from tests.integration.incluster_volumes import pod_volumes, service_account
from tests.integration.operator_process import parse_metric
from tests.integration.podhost.host import SERVICE_ENV

ENTRY = Path(__file__).with_name("incluster_entry.py")
# Where the entry finds container_start.py (standard library only, so never
# through the tests package).
PODHOST = Path(__file__).resolve().with_name("podhost")
# The container's namespaces (its network's is the pod's), then the runtime.
UNSHARE = ("unshare", "--mount", "--uts", "--ipc", "--pid", "--fork", "--propagation", "private",
           "--", sys.executable, str(ENTRY))  # fmt: skip
_counter = itertools.count()


def _run(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True)


def entry_env() -> dict[str, str]:
    """This process's environment for the entry, with :data:`PODHOST` first
    on its module path. The container gets only its spec's env."""
    paths = [str(PODHOST), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


class DeploymentPod:
    """One replica of the Deployment ``deployment`` (its pod template),
    started from the image folder ``image`` (hack/release/rootfs's output):
    ``token`` is its ServiceAccount's (``None`` when the pod mounts none),
    ``client`` reads the ConfigMaps its volumes name, as kubelet does."""

    def __init__(
        self,
        deployment: Mapping[str, Any],
        image: Path,
        workdir: Path,
        *,
        token: str | None,
        ca: bytes,
        api_server: tuple[str, int],
        client: KubeClient | None = None,
    ) -> None:
        if os.geteuid() != 0:
            raise AssertionError("running a Deployment's pod needs root (namespaces, mounts)")
        for tool in ("ip", "unshare", "mount"):
            if not shutil.which(tool):
                raise AssertionError(f"running a Deployment's pod needs {tool}")
        meta, template = deployment["metadata"], deployment["spec"]["template"]
        self.namespace = meta["namespace"]
        self.name = f"{meta['name']}-{secrets.token_hex(5)[:10]}-{secrets.token_hex(3)[:5]}"
        self.dir = workdir / self.name
        self.dir.mkdir(parents=True)
        index = next(_counter)
        config = json.loads((image / "config.json").read_text())
        pod_spec = template["spec"]
        (container,) = pod_spec["containers"]
        self.container = container
        self.ports = {p["name"]: p["containerPort"] for p in container.get("ports") or []}
        self.net = PodNetwork(
            f"t9kop{os.getpid()}r{index}", f"10.244.99.{2 + index % 250}", api_server
        )
        self._files()
        mounts, self.mounts = pod_volumes(
            self.dir, pod_spec, container, namespace=self.namespace, client=client
        )
        if pod_spec.get("automountServiceAccountToken", True):
            if token is None:
                raise AssertionError(f"{self.name} mounts its ServiceAccount's token: give one")
            mounts.insert(0, service_account(self.dir / "sa", token, ca, self.namespace))
            self.mounts.append(self.dir / "sa")
        elif token is not None:
            raise AssertionError(f"{self.name} mounts no ServiceAccount token")
        spec = self._spec(image, config, pod_spec, mounts)
        (self.dir / "scratch").mkdir()
        (self.dir / "spec.json").write_text(json.dumps(spec, indent=2))
        self.log_path = self.dir / "container.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.net.name, *UNSHARE, str(self.dir / "spec.json")],
                env=entry_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    # -- setup -------------------------------------------------------------------

    def _spec(
        self,
        image: Path,
        config: Mapping[str, Any],
        pod_spec: Mapping[str, Any],
        mounts: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """The container's spec for the entry: the pod's files and volumes
        (``mounts``), the image's configuration overridden by the container's."""
        container = self.container
        security = {**(pod_spec.get("securityContext") or {}), **container["securityContext"]}
        uid, gid = self._user(config, security)
        return {
            "scratch": str(self.dir / "scratch"),
            "image": str(image / "root"),
            "hostname": self.name,
            "hosts": str(self.dir / "hosts"),
            "hostnameFile": str(self.dir / "hostname"),
            "resolv": str(self.dir / "resolv.conf"),
            "mounts": mounts,
            "readOnlyRoot": bool(security.get("readOnlyRootFilesystem")),
            "workingDir": container.get("workingDir") or config.get("WorkingDir") or "/",
            "uid": uid,
            "gid": gid,
            "argv": [
                *(container.get("command") or config.get("Entrypoint") or []),
                *(container.get("args") or config.get("Cmd") or []),
            ],
            "env": self._env(config, container),
        }

    def _files(self) -> None:
        """kubelet's /etc/hostname, /etc/hosts and /etc/resolv.conf for the pod."""
        (self.dir / "hostname").write_text(self.name + "\n")
        (self.dir / "hosts").write_text(
            "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
            f"::1\tlocalhost ip6-localhost ip6-loopback\n{self.net.ip}\t{self.name}\n"
        )
        (self.dir / "resolv.conf").write_text(
            f"search {self.namespace}.svc.cluster.local svc.cluster.local cluster.local\n"
            "nameserver 127.0.0.53\noptions ndots:5\n"
        )

    @staticmethod
    def _user(config: Mapping[str, Any], security: Mapping[str, Any]) -> tuple[int, int]:
        image_user, _, image_group = str(config.get("User") or "0").partition(":")
        uid = int(security.get("runAsUser", image_user))
        gid = int(security.get("runAsGroup", image_group or 0))
        if security.get("runAsNonRoot") and uid == 0:
            raise AssertionError("runAsNonRoot with user 0: kubelet refuses to start it")
        return uid, gid

    def _env(self, config: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, str]:
        env = dict(item.split("=", 1) for item in config.get("Env") or [])
        env.update(HOSTNAME=self.name, HOME="/")  # uid 65532 has no passwd entry
        env.update(SERVICE_ENV)
        fields = {"metadata.namespace": self.namespace, "metadata.name": self.name}
        for item in container.get("env") or []:
            if "valueFrom" in item:
                env[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
            else:
                env[item["name"]] = str(item.get("value", ""))
        return env

    # -- queries -----------------------------------------------------------------

    def port(self, port: int | str) -> int:
        """A container port given by number or by name, as a probe or a
        Service's ``targetPort`` gives it."""
        return self.ports[port] if isinstance(port, str) else int(port)

    def get(self, path: str, port: int | str | None = None) -> tuple[int, str]:
        """An HTTP GET on the pod's own address, from inside its network; by
        default on the readiness probe's port."""
        probe = self.container["readinessProbe"]["httpGet"]
        return self.net.get(self.port(probe["port"] if port is None else port), path)

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return parse_metric(self.get("/metrics", "metrics")[1], name, labels)

    def post_tls(self, port: int, ca: bytes, host: str, path: str) -> tuple[int, bytes]:
        """An HTTPS POST (no body) to the pod's ``port`` from inside its network,
        the server's certificate checked against ``ca`` for the name ``host``:
        the status, and the certificate the server presented (DER)."""
        return self.net.post_tls(port, ca, host, path)

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the container's readiness probe (an ``httpGet``) succeeds:
        a status kubelet counts as success (200 to 399)."""
        probe = self.container["readinessProbe"]["httpGet"]

        def ready() -> bool:
            assert self.proc.poll() is None, f"{self.name} exited early:\n{self.logs()}"
            try:
                return 200 <= self.get(probe["path"], probe["port"])[0] < 400
            except OSError:
                return False

        wait_for(ready, timeout, f"{self.name} /readyz", interval=0.3)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def container_pid(self) -> int:
        """The host pid of the container's process (pid 1 in its namespace)."""

        def found() -> int | None:
            todo = [self.proc.pid]
            while todo:
                pid = todo.pop()
                with contextlib.suppress(OSError):
                    status = Path(f"/proc/{pid}/status").read_text()
                    nspid = next(ln for ln in status.splitlines() if ln.startswith("NSpid:"))
                    exe = Path(f"/proc/{pid}/cmdline").read_bytes()
                    if nspid.split()[-1] == "1" and str(ENTRY).encode() not in exe:
                        return pid
                    for task in Path(f"/proc/{pid}/task").iterdir():
                        todo += [int(c) for c in (task / "children").read_text().split()]
            return None

        pid: int = wait_for(found, 10, f"{self.name}'s container process")
        return pid

    def terminate(self) -> None:
        """What kubelet does first to stop a container: SIGTERM to its pid 1."""
        os.kill(self.container_pid(), signal.SIGTERM)

    def wait(self, timeout: float) -> int:
        """The container's exit code (``unshare --fork`` passes it on)."""
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            for pid in self.net.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        for target in self.mounts:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)
        self.net.close()


def run_image(
    root: Path,
    config: Mapping[str, Any],
    args: list[str],
    workdir: Path,
    *,
    entrypoint: list[str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``docker run --read-only --network none IMAGE ARGS`` for the image whose
    filesystem is ``root`` and whose configuration (an OCI image config's
    ``User``, ``Env``, ``Entrypoint``, ``WorkingDir``) is ``config``: the
    entrypoint (or ``entrypoint``) with ``args``, as the image's user, on a
    read-only root, no capabilities, no network but loopback."""
    user, _, group = str(config.get("User") or "0").partition(":")
    workdir.mkdir(parents=True)
    (workdir / "scratch").mkdir()
    for name, text in (
        ("hosts", "127.0.0.1\tlocalhost\n"),
        ("hostname", "t9k-image\n"),
        ("resolv.conf", ""),
    ):
        (workdir / name).write_text(text)
    spec = {
        "scratch": str(workdir / "scratch"),
        "image": str(root),
        "hostname": "t9k-image",
        "hosts": str(workdir / "hosts"),
        "hostnameFile": str(workdir / "hostname"),
        "resolv": str(workdir / "resolv.conf"),
        "mounts": [],
        "readOnlyRoot": True,
        "workingDir": config.get("WorkingDir") or "/",
        "uid": int(user),
        "gid": int(group or 0),
        "argv": [*(entrypoint or config.get("Entrypoint") or []), *args],
        "env": dict(item.split("=", 1) for item in config.get("Env") or []),
    }
    (workdir / "spec.json").write_text(json.dumps(spec))
    return subprocess.run(
        ["unshare", "--net", *UNSHARE[1:], str(workdir / "spec.json")],
        env=entry_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
    )
