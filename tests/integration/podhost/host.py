"""The pod host: see the package docstring for what it reproduces and why."""

from __future__ import annotations

import base64
import contextlib
import datetime
import fcntl
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from t9k_operator.kube import NotFound
from t9k_operator.resources import CONFIGMAPS, SERVICEACCOUNTS
from tests.integration.podhost import lifecycle
from tests.integration.podhost.container_start import setpriv_ids
from tests.integration.podhost.lifecycle import Container, is_sidecar

if TYPE_CHECKING:
    from t9k_operator.kube import KubeClient

ENTRY = Path(__file__).with_name("entry.py")
# containerd's and Docker's default capability set for a container.
RUNTIME_CAPABILITIES = (
    "chown",
    "dac_override",
    "fsetid",
    "fowner",
    "mknod",
    "net_raw",
    "setgid",
    "setuid",
    "setfcap",
    "setpcap",
    "net_bind_service",
    "sys_chroot",
    "kill",
    "audit_write",
)
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Pod addresses exist only inside this test's own network namespaces...
POD_NET = "10.244.77"
# ...unless the node reaches this machine (host_services): then its pod
# network is a /24 of these, one no other node on this machine (in any
# process) has, chosen under HOST_NET_LOCK.
HOST_NETS = tuple(f"10.244.{i}" for i in range(100, 250))
HOST_NET_LOCK = Path("/run/lock/t9k-podhost-net.lock")
HOST_LINK = re.compile(r"t9k(\d+)n\d+h")  # a Node's link in the root namespace
CLUSTER_DOMAIN = "cluster.local"
SERVICE_ENV = {  # what kubelet gives every container for the API server's Service
    "KUBERNETES_SERVICE_HOST": "10.0.0.1",
    "KUBERNETES_SERVICE_PORT": "443",
    "KUBERNETES_SERVICE_PORT_HTTPS": "443",
    "KUBERNETES_PORT": "tcp://10.0.0.1:443",
    "KUBERNETES_PORT_443_TCP": "tcp://10.0.0.1:443",
    "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
    "KUBERNETES_PORT_443_TCP_PORT": "443",
    "KUBERNETES_PORT_443_TCP_ADDR": "10.0.0.1",
}
# The API's default for a serviceAccountToken projection's expirationSeconds.
TOKEN_SECONDS = 3600
_counter = itertools.count()


def _run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), check=True, text=True, capture_output=True, **kw)


def kubelet_expand(text: str, env: Mapping[str, str]) -> str:
    """kubelet's ``$(NAME)`` expansion of a command, argument or env value:
    ``$$`` gives ``$``; ``$(NAME)`` gives NAME's value when NAME is defined and
    stays as written when it is not; any other ``$`` is kept."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "$" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2 : close]
            out.append(env.get(name, f"$({name})"))
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


class Image:
    """A container image: this machine's root file system with some paths
    removed (overlay whiteouts) and some files added."""

    def __init__(
        self,
        name: str,
        *,
        remove: Iterable[str] = (),
        files: Mapping[str, tuple[str, int]] | None = None,
        dirs: Mapping[str, int] | None = None,
        symlinks: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.remove = tuple(remove)
        self.files = dict(files or {})
        self.dirs = dict(dirs or {})
        self.symlinks = dict(symlinks or {})

    def derive(self, name: str, **changes: Any) -> Image:
        return Image(
            name,
            remove=(*self.remove, *changes.get("remove", ())),
            files={**self.files, **changes.get("files", {})},
            dirs={**self.dirs, **changes.get("dirs", {})},
            symlinks={**self.symlinks, **changes.get("symlinks", {})},
        )

    def layer(self, root: Path) -> Path:
        layer = root / "images" / self.name
        if layer.exists():
            return layer
        layer.mkdir(parents=True)

        def place(path: str) -> Path:
            # Through the lower layer's symlinked folders (Debian's /bin is
            # usr/bin): a real folder in this layer would hide the symlink.
            target = layer / os.path.realpath(os.path.dirname(path)).lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            return target / os.path.basename(path)

        for path in self.remove:
            target = place(path)
            if not target.exists():
                os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))  # a whiteout
        for path, mode in self.dirs.items():
            target = place(path)
            target.mkdir(exist_ok=True)
            target.chmod(mode)
        for path, (content, mode) in self.files.items():
            target = place(path)
            target.write_text(content)
            target.chmod(mode)
        for path, dest in self.symlinks.items():
            place(path).symlink_to(dest)
        return layer


# What a stock image with OpenSSH installed looks like: Debian's packages and
# their configuration as installed, but nothing left behind by a running
# system (no /run/sshd) and no ssh directory for root.
STOCK = Image("stock", remove=("/root/.ssh", "/run/sshd", "/root/.deepspeed_env"))
NO_HOST_KEYS = STOCK.derive(
    "stock-no-host-keys",
    remove=[
        f"/etc/ssh/ssh_host_{t}_key{s}" for t in ("rsa", "ecdsa", "ed25519") for s in ("", ".pub")
    ],
)


class PodFailed(AssertionError):
    pass


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
        self.net = POD_NET
        self.host_services = [tuple(str(s).split(".", 1)) for s in host_services]
        if any(len(s) != 2 for s in self.host_services):
            raise AssertionError(f"host_services are name.namespace: {list(host_services)}")
        self.host_link = f"{self.tag}h"
        self.host_address: str | None = None
        # Image layers live on a tmpfs: overlayfs refuses a lower layer that
        # lies inside another lower layer (this machine's root).
        (root / "images").mkdir(parents=True, exist_ok=True)
        _run("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(root / "images"))
        _run("ip", "netns", "add", self.bridge_ns)
        _run("ip", "-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", self.bridge_ns, "link", "set", "br0", "up")
        if self.host_services:
            self._link_to_host()

    def _link_to_host(self) -> None:
        """A veth from the pods' bridge to this machine's own network, on a
        pod network no other node here has: this machine is its ``.1``."""
        HOST_NET_LOCK.parent.mkdir(parents=True, exist_ok=True)
        with open(HOST_NET_LOCK, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _remove_stale_host_links()
            taken = _run("ip", "-4", "-o", "addr", "show").stdout
            taken += _run("ip", "-4", "route", "show", "table", "all").stdout
            free = [n for n in HOST_NETS if not re.search(rf"\b{re.escape(n)}\.", taken)]
            if not free:
                raise AssertionError("no free pod network for a link to this machine")
            self.net = free[0]
            self.host_address = f"{self.net}.1"
            link = self.host_link
            _run("ip", "link", "add", link, "type", "veth", "peer", "name", "host", "netns",
                 self.bridge_ns)  # fmt: skip
            _run("ip", "addr", "add", f"{self.host_address}/24", "dev", link)
            _run("ip", "link", "set", link, "up")
        _run("ip", "-n", self.bridge_ns, "link", "set", "host", "master", "br0", "up")

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

    def dns_lines(self) -> list[str]:
        lines = ["# Cluster DNS stand-in: the names the job's headless Service answers."]
        for p in self.pods:
            if p.ip and p.subdomain:
                fqdn = f"{p.hostname}.{p.subdomain}.{self.namespace}.svc.{CLUSTER_DOMAIN}"
                lines.append(f"{p.ip}\t{fqdn}\t{p.hostname}.{p.subdomain}")
        lines += self._headless_service_lines()
        if self.host_services:
            lines.append("# Service stand-ins: Services whose endpoint is this machine.")
        for name, namespace in self.host_services:
            # What cluster DNS answers (the search path makes name.namespace
            # and, in the pod's own namespace, name work too).
            names = [f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}", f"{name}.{namespace}.svc"]
            names.append(f"{name}.{namespace}")
            if namespace == self.namespace:
                names.append(name)
            lines.append("\t".join([str(self.host_address), *names]))
        return lines

    def _headless_service_lines(self) -> list[str]:
        """What cluster DNS answers for the headless Services added to the node
        (``add``) that select pods: each name, to the address of every pod it
        selects that has one (``publishNotReadyAddresses``: ready or not)."""
        lines = []
        for (kind, name), svc in sorted(self.objects.items()):
            spec = svc.get("spec") or {}
            selector = spec.get("selector") or {}
            if kind != "Service" or spec.get("clusterIP") != "None" or not selector:
                continue
            names = [
                f"{name}.{self.namespace}.svc.{CLUSTER_DOMAIN}",
                f"{name}.{self.namespace}.svc",
            ]
            names += [f"{name}.{self.namespace}", name]
            for p in self.pods:
                labels = (p.pod.get("metadata") or {}).get("labels") or {}
                if p.ip and all(labels.get(k) == v for k, v in selector.items()):
                    lines.append("\t".join([p.ip, *names]))
        if lines:
            lines.insert(0, "# Headless Services added to the node, by the pods they select.")
        return lines

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


class PodRun:
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
        self.containers: dict[str, Container] = {}
        self.mounts: list[Path] = []
        self.sandbox: subprocess.Popen[bytes] | None = None
        # Set once the init containers are through and the others started,
        # or the pod could go no further (then ``error`` says why, if it
        # could not start at all).
        self.initialized = threading.Event()
        self.error: BaseException | None = None
        self.deletion_timestamp: str | None = None
        self._lock = threading.Lock()
        self._closed = False

    # ---------------------------------------------------------------- setup

    def image_for(self, container: str) -> Image:
        if isinstance(self.images, Image):
            return self.images
        return self.images[container]

    def start(self) -> None:
        self.dir.mkdir(parents=True)
        self._network()
        self._sandbox()
        self._volumes()
        self.write_hosts()
        self.node.refresh_dns()
        (self.dir / "hostname").write_text(self.hostname + "\n")
        (self.dir / "resolv.conf").write_text(
            f"search {self.node.namespace}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} "
            f"{CLUSTER_DOMAIN}\nnameserver 127.0.0.53\noptions ndots:5\n"
        )
        threading.Thread(target=self._sync, daemon=True).start()

    # ----------------------------------------------------------- lifecycle

    def _sync(self) -> None:
        """kubelet's pod worker for this pod: the init containers in order,
        then the others, then the sidecars' stop once the others are done."""
        try:
            started = self._start_init_containers() and self._start_regular_containers()
        except BaseException as exc:  # handed to run_pod
            self.error = exc
            started = False
        finally:
            self.initialized.set()
        if started:
            self._stop_sidecars_when_done()

    def _start(self, c: Mapping[str, Any]) -> Container | None:
        with self._lock:
            if self.deletion_timestamp is not None or self._closed:
                return None  # kubelet starts nothing in a pod being deleted
            proc = self._start_container(c)
            name = c["name"]
            container = Container(c, proc, lambda: self._container_pid(name))
            self.containers[name] = container
            return container

    def _start_init_containers(self) -> bool:
        """kuberuntime_manager.go computePodActions: an init container starts
        once the one before it has succeeded, or, for a sidecar
        (``restartPolicy: Always``), has started: its process runs and its
        startupProbe, if any, has passed (the "sidecar containers" docs). A
        failed one starts nothing further."""
        for c in self.pod["spec"].get("initContainers") or []:
            container = self._start(c)
            if container is None:
                return False
            if is_sidecar(c):
                container.wait_started(self._prober(c["name"]))
                continue
            if not container.done.wait(120):
                raise PodFailed(f"{self.name}: init container {c['name']} did not end")
            if container.exit_code != 0:
                # With restartPolicy Never the pod has failed and kubelet
                # stops the sidecars it started; otherwise kubelet would run
                # this init container again (restarts are not reproduced).
                if self.pod["spec"].get("restartPolicy") == "Never":
                    self._stop_sidecars()
                return False
        return True

    def _start_regular_containers(self) -> bool:
        return all(self._start(c) is not None for c in self.pod["spec"]["containers"])

    def _prober(self, container: str) -> Callable[[list[str], float], int]:
        """An exec probe of ``container``: the command's exit code."""

        def probe(argv: list[str], timeout: float) -> int:
            try:
                return self.exec(container, argv, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                return -1

        return probe

    def _sidecars(self) -> list[Container]:
        inits = self.pod["spec"].get("initContainers") or []
        return [
            self.containers[c["name"]]
            for c in inits
            if is_sidecar(c) and c["name"] in self.containers
        ]

    def _grace(self) -> float:
        """The pod's terminationGracePeriodSeconds (30 when unset, as the API
        defaults it), never less than killContainer's minimum."""
        grace = self.pod["spec"].get(
            "terminationGracePeriodSeconds", lifecycle.DEFAULT_GRACE_SECONDS
        )
        return max(float(grace), lifecycle.MINIMUM_GRACE_SECONDS)

    def _stop_sidecars(self) -> None:
        lifecycle.stop_in_order([], self._sidecars(), self._grace())

    def _stop_sidecars_when_done(self) -> None:
        """computePodActions: once every regular container has exited and
        none is to restart (restartPolicy Never, or OnFailure and all
        succeeded), kubelet kills the pod, which stops its sidecars
        (kuberuntime_termination_order.go: after the regular containers, in
        reverse order). With Always kubelet would restart them; the pod host
        restarts nothing and leaves such a pod as it is."""
        regular = [self.containers[c["name"]] for c in self.pod["spec"]["containers"]]
        for c in regular:
            c.done.wait()
        policy = self.pod["spec"].get("restartPolicy") or "Always"
        succeeded = all(c.exit_code == 0 for c in regular)
        if self.deletion_timestamp is None and (
            policy == "Never" or (policy == "OnFailure" and succeeded)
        ):
            self._stop_sidecars()

    def delete(self, grace_seconds: float | None = None) -> None:
        """A graceful deletion of the pod, as kubelet carries it out: the pod
        gets its deletionTimestamp at once, then every running container gets
        SIGTERM and, ``grace_seconds`` later (the pod's
        terminationGracePeriodSeconds when not given, as the API server sets
        deletionGracePeriodSeconds), SIGKILL: kuberuntime_container.go
        killContainer. Sidecars stop after the others
        (kuberuntime_termination_order.go). Returns at once."""
        if grace_seconds is None:
            grace_seconds = self.pod["spec"].get(
                "terminationGracePeriodSeconds", lifecycle.DEFAULT_GRACE_SECONDS
            )
        with self._lock:
            self.deletion_timestamp = lifecycle.stamp(lifecycle.now())
        sidecars = self._sidecars()
        others = [c for c in list(self.containers.values()) if c not in sidecars]
        threading.Thread(
            target=lifecycle.stop_in_order, args=(others, sidecars, float(grace_seconds)),
            daemon=True,
        ).start()  # fmt: skip

    def status(self) -> dict[str, Any]:
        """The pod's status as kubelet reports it (kubelet_pods.go
        generateAPIPodStatus): its phase, IP and each container's status."""
        spec = self.pod["spec"]
        inits = spec.get("initContainers") or []
        init_statuses = lifecycle.statuses(inits, self.containers, has_init=bool(inits), init=True)
        regular = lifecycle.statuses(
            spec["containers"], self.containers, has_init=bool(inits), init=False
        )
        # A pod being deleted whose containers have all stopped is terminal.
        terminal = self.deletion_timestamp is not None and not any(
            c.running for c in list(self.containers.values())
        )
        status: dict[str, Any] = {
            "phase": lifecycle.phase(spec, init_statuses, regular, terminal=terminal),
            "podIP": self.ip,
            "containerStatuses": regular,
        }
        if inits:
            status["initContainerStatuses"] = init_statuses
        return status

    @property
    def phase(self) -> str:
        return str(self.status()["phase"])

    def _network(self) -> None:
        self.ip = self.node.allocate_ip()
        ns, br = self.netns, self.node.bridge_ns
        veth = f"v{self.ip.rsplit('.', 1)[1]}"
        _run("ip", "netns", "add", ns)
        _run(
            "ip", "-n", br, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns
        )
        _run("ip", "-n", br, "link", "set", veth, "master", "br0", "up")
        _run("ip", "-n", ns, "addr", "add", f"{self.ip}/24", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")

    def _sandbox(self) -> None:
        """The pod's sandbox, as the runtime's pause container: a process that
        holds the namespaces every container of the pod shares (network, IPC
        and UTS with the pod's hostname); each container joins them and gets
        mount and PID namespaces of its own."""
        self.sandbox = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "unshare", "--ipc", "--uts", "--",
             "sh", "-c", f"hostname {self.hostname} && exec sleep infinity"],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        # The pod's /dev/shm, which containerd's CRI makes per sandbox.
        shm = self.dir / "shm"
        shm.mkdir()
        _run("mount", "-t", "tmpfs", "-o", "mode=1777,size=65536k,nosuid,nodev,noexec", "shm",
             str(shm))  # fmt: skip
        self.mounts.append(shm)
        pid = self.sandbox.pid
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                    return
            if self.sandbox.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(f"{self.name}: the pod's sandbox did not start")

    def write_hosts(self) -> None:
        lines = [
            "# Kubernetes-managed hosts file.",
            "127.0.0.1\tlocalhost",
            "::1\tlocalhost ip6-localhost ip6-loopback",
            "fe00::0\tip6-localnet",
            "fe00::0\tip6-mcastprefix",
            "fe00::1\tip6-allnodes",
            "fe00::2\tip6-allrouters",
        ]
        if self.subdomain:
            fqdn = f"{self.hostname}.{self.subdomain}.{self.node.namespace}.svc.{CLUSTER_DOMAIN}"
            lines.append(f"{self.ip}\t{fqdn}\t{self.hostname}")
        else:
            lines.append(f"{self.ip}\t{self.hostname}")
        text = "\n".join([*lines, *self.node.dns_lines()]) + "\n"
        path = self.dir / "hosts"
        # In place, as a bind-mounted file must be updated to be seen.
        with open(path, "a+") as f:
            f.seek(0)
            f.truncate()
            f.write(text)

    def _volumes(self) -> None:
        for vol in self.pod["spec"].get("volumes") or []:
            target = self.dir / "volumes" / vol["name"]
            target.mkdir(parents=True)
            target.chmod(0o777)  # emptyDir's setupDir
            if "secret" in vol:
                src = vol["secret"]
                obj = self.node.objects[("Secret", src["secretName"])]
                data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
                data.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
                self._tmpfs(target)
                atomic_write(target, payload(data, src, 0o644))
            elif "configMap" in vol:
                src = vol["configMap"]
                obj = self._config_map(src) or {}
                data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
                # kubelet's MakePayload (pkg/volume/configmap/configmap.go) writes
                # binaryData's keys as files as it writes data's.
                binary = obj.get("binaryData") or {}
                data.update({k: base64.b64decode(v) for k, v in binary.items()})
                atomic_write(target, payload(data, src, 0o644))
            elif "emptyDir" in vol:
                if (vol["emptyDir"] or {}).get("medium") == "Memory":
                    self._tmpfs(target)
            elif "persistentVolumeClaim" in vol:
                # kubelet mounts the claim's volume for the pod; the volume's
                # readOnly makes that mount read-only, whatever the containers ask.
                src = vol["persistentVolumeClaim"]
                contents = self.node.claims.get(src["claimName"])
                if contents is None:
                    raise PodFailed(
                        f"{self.name}: claim {src['claimName']} does not exist "
                        "(the scheduler leaves such a pod Pending)"
                    )
                _run("mount", "--bind", str(contents), str(target))
                self.mounts.append(target)
                if src.get("readOnly"):
                    _run("mount", "-o", "remount,bind,ro", str(target))
            elif "projected" in vol:
                self._tmpfs(target)
                files, owners = self._projected(vol["projected"])
                atomic_write(target, files)
                for rel, uid in owners.items():
                    # The AtomicWriter's chown of a file whose projection has an FsUser.
                    os.chown(target / "..data" / rel, uid, -1)
            else:
                raise AssertionError(f"the pod host cannot make volume {vol}")
            fs_group = (self.pod["spec"].get("securityContext") or {}).get("fsGroup")
            if fs_group is not None and "persistentVolumeClaim" not in vol:
                # kubelet's SetVolumeOwnership (pkg/volume/volume_linux.go):
                # Secret, ConfigMap and projected volumes are read-only ones.
                set_volume_ownership(target, int(fs_group), read_only="emptyDir" not in vol)

    def _projected(
        self, source: Mapping[str, Any]
    ) -> tuple[dict[str, tuple[bytes, int]], dict[str, int]]:
        """The projected volume's files, and the owner of those kubelet
        chowns (a token's, to the pod's FsUser)."""
        mode = source.get("defaultMode", 0o644)
        files: dict[str, tuple[bytes, int]] = {}
        owners: dict[str, int] = {}
        fields = {"metadata.name": self.name, "metadata.namespace": self.node.namespace}
        for src in source.get("sources") or []:
            if "serviceAccountToken" in src:
                projection = src["serviceAccountToken"]
                # pkg/volume/projected/projected.go collectData: the token file
                # is 0600 when the pod has an FsUser or an fsGroup (fsGroup's
                # SetVolumeOwnership then makes it 0640), else defaultMode; it
                # is owned by the FsUser when there is one.
                fs_user = self.fs_user()
                fs_group = (self.pod["spec"].get("securityContext") or {}).get("fsGroup")
                token_mode = 0o600 if fs_user is not None or fs_group is not None else mode
                files[projection["path"]] = (self._token(projection), token_mode)
                if fs_user is not None:
                    owners[projection["path"]] = fs_user
            elif "configMap" in src:
                obj = self._config_map(src["configMap"])
                if obj is None:
                    continue  # optional and missing: kubelet projects nothing of it
                data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
                files.update(payload(data, src["configMap"], mode))
            elif "downwardAPI" in src:
                for item in src["downwardAPI"]["items"]:
                    value = fields[item["fieldRef"]["fieldPath"]]
                    files[item["path"]] = (value.encode(), item.get("mode", mode))
            else:
                raise AssertionError(f"the pod host cannot project {src}")
        return files, owners

    def _config_map(self, source: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The ConfigMap a volume source names: given to the node, else (with a
        client) read from the API server as kubelet reads it. A missing one is
        None when ``optional``; else the pod cannot start (kubelet holds it in
        ContainerCreating)."""
        name = source["name"]
        obj = self.node.objects.get(("ConfigMap", name))
        if obj is None and self.node.client is not None:
            try:
                obj = self.node.client.get(CONFIGMAPS, name, self.node.namespace)
            except NotFound:
                obj = None
        if obj is None and not source.get("optional"):
            raise PodFailed(f"{self.name}: configmap {name} not found (the pod cannot start)")
        return obj

    def _token(self, projection: Mapping[str, Any]) -> bytes:
        """The ServiceAccount token kubelet asks for (pkg/volume/projected,
        pkg/kubelet/token): a TokenRequest for the pod's ServiceAccount, for
        the projection's ``audience`` (none given: the API server's own) and
        ``expirationSeconds``, bound to the pod by name and uid. Without a
        client, a placeholder."""
        client = self.node.client
        if client is None:
            return b"pod-host-token"
        meta = self.pod["metadata"]
        if not meta.get("uid"):
            raise AssertionError(
                f"{self.name}: a token is bound to the pod's uid: give the pod as the API has it"
            )
        spec: dict[str, Any] = {
            "expirationSeconds": int(projection.get("expirationSeconds", TOKEN_SECONDS)),
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        }
        if projection.get("audience"):
            spec["audiences"] = [projection["audience"]]
        account = self.pod["spec"].get("serviceAccountName") or "default"
        namespace = meta.get("namespace") or self.node.namespace
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        path = SERVICEACCOUNTS.path(namespace, account, "token")
        answer = client.request("POST", path, body=body)
        return str(answer["status"]["token"]).encode()

    def fs_user(self) -> int | None:
        """kubelet's FsUserFrom (pkg/volume/util): the runAsUser every
        container (init ones too) runs as, when each has one set (its own or
        the pod's) and they agree; else none."""
        pod_sc = self.pod["spec"].get("securityContext") or {}
        users: set[int] = set()
        for c in [*(self.pod["spec"].get("initContainers") or []), *self.pod["spec"]["containers"]]:
            uid = (c.get("securityContext") or {}).get("runAsUser", pod_sc.get("runAsUser"))
            if uid is None:
                return None
            users.add(int(uid))
        return users.pop() if len(users) == 1 else None

    def _tmpfs(self, target: Path) -> None:
        _run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(target))
        self.mounts.append(target)

    # ---------------------------------------------------------- containers

    def user(self, c: Mapping[str, Any]) -> dict[str, Any]:
        """The container's uid, gid and supplementary groups: its
        securityContext over the pod's (``runAsUser``, ``runAsGroup``), the
        pod's ``supplementalGroups`` and ``fsGroup``; root by default (these
        images name no user). A uid the image's /etc/passwd lacks gets gid 0,
        as containerd gives it."""
        pod_sc = self.pod["spec"].get("securityContext") or {}
        sc = c.get("securityContext") or {}
        uid = int(sc.get("runAsUser", pod_sc.get("runAsUser", 0)))
        if (sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True) and uid == 0:
            # kubelet refuses to start it: CreateContainerConfigError.
            raise PodFailed(f"{self.name}/{c['name']}: runAsNonRoot and the image runs as root")
        entry = next((e for e in _passwd() if e[1] == uid), None)
        gid = int(sc.get("runAsGroup", pod_sc.get("runAsGroup", entry[2] if entry else 0)))
        groups = [int(g) for g in pod_sc.get("supplementalGroups") or []]
        if "fsGroup" in pod_sc:
            groups.append(int(pod_sc["fsGroup"]))
        return {
            "uid": uid,
            "gid": gid,
            "groups": sorted(set(groups)),
            "home": entry[3] if entry else "/",
        }

    def container_env(self, c: Mapping[str, Any], home: str) -> dict[str, str]:
        """kubelet's makeEnvironmentVariables: ``envFrom`` sources in order (a
        key with '=' is skipped; ``prefix`` prepended), then ``env`` (values
        ``$(NAME)``-expanded against what came before), then the Service
        variables not already set; ``HOSTNAME``, ``HOME`` and the image's
        ``PATH`` under them (``home``: the user's, :meth:`user`)."""
        env: dict[str, str] = {"PATH": IMAGE_PATH, "HOSTNAME": self.hostname, "HOME": home}
        fields = {
            "metadata.name": self.name,
            "metadata.namespace": self.node.namespace,
            "status.podIP": self.ip,
        }
        declared: dict[str, str] = {}
        for source in c.get("envFrom") or []:
            declared.update(self._env_from(c, source))
        for item in c.get("env") or []:
            if "valueFrom" in item:
                ref = (item["valueFrom"].get("fieldRef") or {}).get("fieldPath")
                if ref not in fields:
                    raise AssertionError(f"the pod host cannot resolve env {item}")
                value = fields[ref]
            else:
                value = kubelet_expand(str(item.get("value", "")), {**SERVICE_ENV, **declared})
            declared[item["name"]] = value
        env.update(SERVICE_ENV)
        env.update(declared)
        env.update(self.extra_env)
        return env

    def _env_from(self, c: Mapping[str, Any], source: Mapping[str, Any]) -> dict[str, str]:
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            if key not in source:
                continue
            ref = source[key]
            obj = self.node.objects.get((kind, ref["name"]))
            if obj is None:
                if ref.get("optional"):
                    return {}
                raise PodFailed(
                    f"{self.name}/{c['name']}: {kind.lower()} {ref['name']} not found "
                    "(CreateContainerConfigError)"
                )
            data = {k: str(v) for k, v in (obj.get("data") or {}).items()}
            if kind == "Secret":
                data = {k: base64.b64decode(v).decode() for k, v in data.items()}
                data.update(obj.get("stringData") or {})
            prefix = source.get("prefix", "")
            return {prefix + k: v for k, v in data.items() if "=" not in prefix + k}
        raise AssertionError(f"the pod host cannot read envFrom {source}")

    def _container_spec(self, c: Mapping[str, Any]) -> dict[str, Any]:
        user = self.user(c)
        env = self.container_env(c, user["home"])
        argv = [kubelet_expand(a, env) for a in [*(c.get("command") or []), *(c.get("args") or [])]]
        if not c.get("command"):
            raise AssertionError(
                f"{self.name}/{c['name']}: the pod host's images have no entrypoint"
            )
        mounts = []
        volumes = {v["name"]: v for v in self.pod["spec"].get("volumes") or []}
        for m in c.get("volumeMounts") or []:
            if m["name"] not in volumes:
                raise PodFailed(f"{self.name}/{c['name']}: no volume {m['name']}")
            src = self.dir / "volumes" / m["name"]
            if m.get("subPath"):
                src = Path(os.path.realpath(src / m["subPath"]))
            mounts.append(
                {"source": str(src), "path": m["mountPath"], "readOnly": bool(m.get("readOnly"))}
            )
        scratch = self.dir / "containers" / c["name"]
        scratch.mkdir(parents=True)
        return {
            "scratch": str(scratch),
            "layer": str(self.image_for(c["name"]).layer(self.node.root)),
            "hostname": self.hostname,
            "hosts": str(self.dir / "hosts"),
            "hostnameFile": str(self.dir / "hostname"),
            "resolv": str(self.dir / "resolv.conf"),
            "mounts": mounts,
            "workingDir": c.get("workingDir") or "/",
            "argv": argv,
            "env": env,
            "user": user,
            "shm": str(self.dir / "shm"),
            "capabilities": list(RUNTIME_CAPABILITIES),
        }

    def _start_container(self, c: Mapping[str, Any]) -> subprocess.Popen[bytes]:
        spec = self._container_spec(c)
        spec_file = self.dir / f"{c['name']}.json"
        spec_file.write_text(json.dumps(spec))
        log = open(self.dir / f"{c['name']}.log", "wb")  # noqa: SIM115 - handed to the child
        assert self.sandbox is not None
        proc = subprocess.Popen(
            [
                "nsenter",
                "-t",
                str(self.sandbox.pid),
                "--net",
                "--ipc",
                "--uts",
                "--",
                "unshare",
                "--mount",
                "--pid",
                "--fork",
                "--propagation",
                "private",
                "--",
                sys.executable,
                str(ENTRY),
                str(spec_file),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        return proc

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
        pid = container_process(self.containers[container].proc.pid, timeout=10)
        if pid is None:
            raise AssertionError(f"{self.name}/{container}: no container process")
        return pid

    def handles(self, container: str, sig: int) -> bool:
        """Whether the container's pid 1 has set a handler for ``sig`` (its
        SigCgt mask in /proc). Until it has, the kernel drops any signal but
        SIGKILL sent to it from outside its PID namespace, from kubelet as from
        here: a SIGTERM sent before a shell has run its ``trap`` is lost."""
        pid = self._container_pid(container)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
        return False

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
        caps = ",".join(f"+{c}" for c in RUNTIME_CAPABILITIES)
        return subprocess.run(
            [
                "nsenter",
                "-t",
                str(pid),
                "-m",
                "-u",
                "-i",
                "-n",
                "-p",
                "-r",
                "-w",
                "--",
                "/usr/bin/setpriv",
                *setpriv_ids(spec["user"]),
                f"--bounding-set=-all,{caps}",
                "--",
                *argv,
            ],
            env={**spec["env"], **(env or {})},
            text=True,
            capture_output=True,
            timeout=timeout,
        )

    def stop(self) -> None:
        with self._lock:
            self._closed = True
        out = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True)
        for pid in out.stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        procs = [c.proc for c in self.containers.values()]
        for proc in [*procs, *([self.sandbox] if self.sandbox else [])]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        for target in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(target)], capture_output=True)
        self.mounts.clear()
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True)


def _remove_stale_host_links() -> None:
    """Links to this machine left by nodes of processes that are gone."""
    for line in _run("ip", "-o", "link", "show").stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        match = HOST_LINK.fullmatch(name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            subprocess.run(["ip", "link", "del", name], capture_output=True)


def _passwd() -> list[tuple[str, int, int, str]]:
    """The image's users (this machine's /etc/passwd): name, uid, gid, home."""
    out = []
    for line in Path("/etc/passwd").read_text().splitlines():
        parts = line.split(":")
        if len(parts) >= 7 and parts[2].isdigit() and parts[3].isdigit():
            out.append((parts[0], int(parts[2]), int(parts[3]), parts[5]))
    return out


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                children = (task / "children").read_text().split()
                for child in children:
                    found.append(int(child))
                    todo.append(int(child))
    return found


def container_process(outer: int, timeout: float) -> int | None:
    """The host pid of the container process started by ``outer`` (nsenter ->
    unshare -> (fork) the container's pid 1), once it is past the runtime's
    set-up: in its own root (entry.py chroots after every mount) and no
    longer entry.py. None if it is not within ``timeout`` seconds.

    Its command line alone does not tell: while a process is inside execve
    the kernel shows it empty, so the fork on its way to entry.py would look
    set up, and an exec into it would see this machine's /etc/hosts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in _descendants(outer):
            with contextlib.suppress(OSError):
                if _ns_pid(pid) != 1 or os.readlink(f"/proc/{pid}/root") == "/":
                    continue
                if str(ENTRY) not in Path(f"/proc/{pid}/cmdline").read_text():
                    return pid
        time.sleep(0.05)
    return None


def _ns_pid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return -1


def set_volume_ownership(target: Path, fs_group: int, *, read_only: bool) -> None:
    """What kubelet does to a volume for a pod's ``fsGroup``: every file and
    folder (symlinks too, not followed) group-owned by it, group-readable
    (and writable unless the volume is read-only), folders searchable and
    setgid so new files inherit the group."""
    for path in [target, *target.rglob("*")]:
        os.lchown(path, -1, fs_group)
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        mask = 0o440 if read_only else 0o660
        if stat.S_ISDIR(info.st_mode):
            mask |= stat.S_ISGID | 0o110
        path.chmod(stat.S_IMODE(info.st_mode) | mask)


def payload(
    data: Mapping[str, bytes], source: Mapping[str, Any], default_mode: int
) -> dict[str, tuple[bytes, int]]:
    """The files of a Secret or ConfigMap volume: ``items`` if given (each with
    its own mode or the default), else every key; ``defaultMode`` as given."""
    mode = source.get("defaultMode", default_mode)
    if source.get("items"):
        return {i["path"]: (data[i["key"]], i.get("mode", mode)) for i in source["items"]}
    return {k: (v, mode) for k, v in data.items()}


def atomic_write(target: Path, files: Mapping[str, tuple[bytes, int]]) -> None:
    """kubelet's AtomicWriter layout for a fresh volume."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("..%Y_%m_%d_%H_%M_%S.")
    ts_dir = target / f"{stamp}{secrets.randbelow(10**9)}"
    ts_dir.mkdir(mode=0o700)
    ts_dir.chmod(0o755)
    for rel, (content, mode) in files.items():
        path = ts_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_bytes(content)
        path.chmod(mode)
    (target / "..data_tmp").symlink_to(ts_dir.name)
    (target / "..data_tmp").rename(target / "..data")
    for top in sorted({rel.split("/")[0] for rel in files}):
        (target / top).symlink_to(f"..data/{top}")
