"""A handle on a local cluster, for what runs beside it (the demo, the
benchmarks, the tests): it starts, extends and stops the cluster through
this package's command line (``python3 -m hack.cluster``, a process of its
own, as a user would), and reads what ``up`` left in ``cluster.json``: the
kubeconfig, the binaries' folder, the processes, the ports, the API server's
address and CA; and it runs kubectl against the cluster."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import EXIT_MISSING_BINARIES
from .common import HACK
from .processes import _start, _stop
from .state import _save

ROOT = HACK.parent  # the command line runs from the repository root


class ClusterCommandError(RuntimeError):
    """``python3 -m hack.cluster`` failed (its log's tail, when kept, in the message)."""


class MissingBinariesError(ClusterCommandError):
    """The binaries were never built and the handle may not build them
    (``build=False``): ``make binaries`` builds them."""


class KubectlError(AssertionError):
    """kubectl exited non-zero. An AssertionError, as a failed check is: a
    caller polling the cluster for a state counts it as "not yet"."""


def cluster_command(
    *args: str, build: bool = False, echo: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python3 -m hack.cluster ARGS``; its stdout. It builds missing binaries
    only when ``build`` (else ``T9K_NO_BUILD=1``: it fails at once, with
    ``MissingBinariesError``); its log goes to this process's stderr when
    ``echo``, else it is kept for the error's message."""
    env = dict(os.environ) if build else {**os.environ, "T9K_NO_BUILD": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "hack.cluster", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=None if echo else subprocess.PIPE,
        text=True,
        env=env,
    )
    log = "(its log is above)" if echo else proc.stderr[-4000:]
    if proc.returncode == EXIT_MISSING_BINARIES and not build:
        raise MissingBinariesError(log.strip())
    if proc.returncode != 0:
        raise ClusterCommandError(
            f"hack.cluster {' '.join(args)} failed ({proc.returncode}):\n{log}"
        )
    return proc


@dataclass(frozen=True)
class GangScheduler:
    """A gang scheduler running in the cluster (``hack.cluster gang``): it
    schedules the pods whose ``spec.schedulerName`` is ``scheduler_name``."""

    name: str  # volcano | coscheduling
    scheduler_name: str
    version: str
    logs: tuple[Path, ...]


@dataclass(frozen=True)
class Kueue:
    """The Kueue manager running in the cluster (``hack.cluster kueue``): its
    controllers and scheduler admit Workloads (kueue.x-k8s.io/v1beta2) within
    their ClusterQueues' quota. Its admission webhooks are not registered, so nothing
    defaults or validates a Workload beyond its CRD's schema."""

    version: str
    namespace: str
    log: Path


@dataclass
class Cluster:
    """The local cluster ``name``. It never builds binaries unless ``build``
    (a build takes many minutes: a caller that may wait for one says so); its
    commands' log goes to stderr when ``echo``, else into their errors."""

    name: str
    build: bool = False
    echo: bool = False
    kubeconfig: Path = field(default_factory=Path)
    bin_dir: Path = field(default_factory=Path)
    server: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        name: str,
        apiserver_flags: Sequence[str] = (),
        *,
        fresh: bool = False,
        build: bool = False,
        echo: bool = False,
    ) -> Cluster:
        """The cluster ``name`` running, its kube-apiserver with
        ``apiserver_flags`` added (one running with other ones is recreated;
        with ``fresh`` any running one is)."""
        cluster = cls(name, build=build, echo=echo)
        cluster.up(*(f"--apiserver-flag={flag}" for flag in apiserver_flags), fresh=fresh)
        return cluster

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``python3 -m hack.cluster ARGS --name NAME`` (see :func:`cluster_command`)."""
        return cluster_command(*args, "--name", self.name, build=self.build, echo=self.echo)

    def up(self, *flags: str, fresh: bool = False) -> None:
        """Start it with ``hack.cluster up``'s ``flags`` (gang schedulers,
        Kueue, kube-apiserver flags), taken down first when ``fresh``."""
        if fresh:
            self.down()
        self.kubeconfig = Path(self.command("up", *flags).stdout.strip().splitlines()[-1])
        state = self.state()
        self.bin_dir = Path(state["bin_dir"])
        self.server = state["server"]
        self.ports = {k: int(v) for k, v in state["ports"].items()}
        self.pids = {k: int(v) for k, v in state["pids"].items()}

    def down(self) -> None:
        """Every process stopped, the state removed."""
        self.command("down")

    def stop(self) -> None:
        """``down``, whatever it meets (a teardown's last step)."""
        subprocess.run(
            [sys.executable, "-m", "hack.cluster", "down", "--name", self.name],
            cwd=ROOT,
            check=False,
        )

    def state(self) -> dict[str, Any]:
        """What ``cluster.json`` records now."""
        state: dict[str, Any] = json.loads((self.kubeconfig.parent / "cluster.json").read_text())
        return state

    @contextmanager
    def apiserver_down(self) -> Iterator[None]:
        """Its kube-apiserver stopped for the ``with`` block (every client of it
        meets refused connections, as when a cluster's API server is lost), then
        started again with the same command line and waited for; ``down``
        stops the new one."""
        workdir = self.kubeconfig.parent
        pid = self.pids["kube-apiserver"]
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[1:-1]
        _stop([pid], workdir)
        try:
            yield
        finally:
            started = _start(self.bin_dir, "kube-apiserver", args, workdir)
            state = self.state()
            state["pids"]["kube-apiserver"] = self.pids["kube-apiserver"] = started
            _save(workdir, state)
            deadline = time.monotonic() + 60
            while self.kubectl("get", "--raw", "/readyz", check=False).returncode != 0:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name}'s kube-apiserver did not come back in 60 s")
                time.sleep(0.5)

    @property
    def ca_file(self) -> Path:
        return self.kubeconfig.parent / "pki" / "ca.crt"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"

    def kubectl(
        self, *args: str, input_: str | None = None, check: bool = True, capture: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """kubectl as the cluster's admin; its output kept unless not ``capture``
        (then it goes to this process's); ``KubectlError`` when it fails and ``check``."""
        proc = subprocess.run(
            [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=input_,
            text=True,
            capture_output=capture,
        )
        if check and proc.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)} failed:\n{proc.stderr or ''}")
        return proc

    def wait_established(self, *which: str, timeout: float = 60) -> None:
        """``kubectl wait --for=condition=Established`` on the CRDs ``which``
        names, retried while a CRD just created has no conditions yet: kubectl
        then fails at once ("status.conditions accessor error: <nil>") rather
        than waiting."""
        deadline = time.monotonic() + timeout
        while True:
            left = max(1, int(deadline - time.monotonic()))
            proc = self.kubectl(
                "wait", "--for=condition=Established", f"--timeout={left}s", *which, check=False
            )
            if proc.returncode == 0:
                return
            if "accessor error" not in proc.stderr or time.monotonic() > deadline:
                raise KubectlError(f"CRDs {' '.join(which)} not Established:\n{proc.stderr}")
            time.sleep(0.2)

    def start_gang(self, *names: str) -> dict[str, GangScheduler]:
        """Ensure the gang schedulers ``names`` run in it (started once; later
        calls find them running)."""
        self.command("gang", *names)
        return {
            name: GangScheduler(
                name=name,
                scheduler_name=info["schedulerName"],
                version=info["version"],
                logs=tuple(self.kubeconfig.parent / f"{tool}.log" for tool in info["tools"]),
            )
            for name, info in self.state()["gang"].items()
            if name in names
        }

    def start_kueue(self) -> Kueue:
        """Ensure the Kueue manager runs in it, as ``start_gang``."""
        self.command("kueue")
        info = self.state()["kueue"]
        return Kueue(
            version=info["version"],
            namespace=info["namespace"],
            log=self.kubeconfig.parent / f"{info['tools'][0]}.log",
        )

    def token_kubeconfig(self, path: Path, token: str) -> Path:
        """A kubeconfig at ``path`` that authenticates with a bearer token (a
        ServiceAccount's); only its owner may read it."""
        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": self.server, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": "sa", "user": {"token": token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "local", "user": "sa"}}],
            "current-context": "sa",
        }
        path.write_text(json.dumps(doc))
        path.chmod(0o600)
        return path

    def etcd_compact(self) -> int:
        """Compact etcd at its current revision (through etcd's JSON gateway)."""

        def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            req = urllib.request.Request(
                self.etcd_url + path,
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                result: dict[str, Any] = json.loads(resp.read())
                return result

        # A range read of a key that does not exist still reports the revision.
        revision = int(
            post("/v3/kv/range", {"key": base64.b64encode(b"\0").decode()})["header"]["revision"]
        )
        post("/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision
