"""Test-side handle on the local cluster started by hack/cluster."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hack.cluster import EXIT_MISSING_BINARIES  # binaries not built, T9K_NO_BUILD=1
from t9k_operator.kube import KubeClient, NotFound, Resource
from t9k_operator.resources import CONFIGMAPS, NAMESPACES, SERVICEACCOUNTS

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = [sys.executable, "-m", "hack.cluster"]  # run from ROOT


class MissingBinaries(RuntimeError):
    """Binaries were never built (`make binaries` was not run)."""


def cluster_script(*args: str) -> subprocess.CompletedProcess[str]:
    """``python3 -m hack.cluster ARGS``, never building (``T9K_NO_BUILD=1``: binaries
    are a make prerequisite, never built under a test's timeout). Raises
    ``MissingBinaries`` when they were never built, ``RuntimeError`` when it
    fails otherwise."""
    proc = subprocess.run(
        [*CLUSTER_SCRIPT, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "T9K_NO_BUILD": "1"},
    )
    if proc.returncode == EXIT_MISSING_BINARIES:
        raise MissingBinaries(proc.stderr.strip())
    if proc.returncode != 0:
        raise RuntimeError(
            f"hack.cluster {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    return proc


@dataclass(frozen=True)
class GangScheduler:
    """A gang scheduler running in the test cluster (hack.cluster gang):
    it schedules the pods whose ``spec.schedulerName`` is ``scheduler_name``."""

    name: str  # volcano | coscheduling
    scheduler_name: str
    version: str
    logs: tuple[Path, ...]


@dataclass(frozen=True)
class Kueue:
    """The Kueue manager running in the test cluster (hack.cluster kueue):
    its controllers and scheduler admit Workloads (kueue.x-k8s.io/v1beta1)
    within their ClusterQueues' quota. Its webhooks are not registered, so
    nothing defaults or validates a Workload beyond its CRD's schema."""

    version: str
    namespace: str
    log: Path


@dataclass
class Cluster:
    name: str
    kubeconfig: Path
    bin_dir: Path
    etcd_url: str
    server: str
    ca_file: Path

    @classmethod
    def start(cls, name: str, apiserver_flags: Sequence[str] = ()) -> Cluster:
        """Start the cluster ``name``, its kube-apiserver with ``apiserver_flags``
        added (one running with other ones is recreated)."""
        # Binaries are a make prerequisite (`make binaries`): never built here,
        # under a test's timeout.
        flags = [f"--apiserver-flag={flag}" for flag in apiserver_flags]
        proc = subprocess.run(
            [*CLUSTER_SCRIPT, "up", "--name", name, *flags],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "T9K_NO_BUILD": "1"},
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"hack.cluster up failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
            )
        kubeconfig = Path(proc.stdout.strip().splitlines()[-1])
        state = json.loads((kubeconfig.parent / "cluster.json").read_text())
        return cls(
            name=name,
            kubeconfig=kubeconfig,
            bin_dir=Path(state["bin_dir"]),
            etcd_url=f"http://127.0.0.1:{state['ports']['etcd']}",
            server=state["server"],
            ca_file=kubeconfig.parent / "pki" / "ca.crt",
        )

    def _add(self, command: str, *names: str) -> dict[str, Any]:
        """``python3 -m hack.cluster <command>`` on this cluster (never building:
        ``MissingBinaries`` when the binaries were never built); the state
        it leaves in ``cluster.json``."""
        cluster_script(command, "--name", self.name, *names)
        state: dict[str, Any] = json.loads((self.kubeconfig.parent / "cluster.json").read_text())
        return state

    def start_gang(self, *names: str) -> dict[str, GangScheduler]:
        """Ensure the gang schedulers ``names`` run in this cluster (started
        once; later calls find them running). Raises ``MissingBinaries`` when
        they were never built: like the cluster's, never built here."""
        state = self._add("gang", *names)
        return {
            name: GangScheduler(
                name=name,
                scheduler_name=info["schedulerName"],
                version=info["version"],
                logs=tuple(self.kubeconfig.parent / f"{tool}.log" for tool in info["tools"]),
            )
            for name, info in state["gang"].items()
            if name in names
        }

    def start_kueue(self) -> Kueue:
        """Ensure the Kueue manager runs in this cluster, as ``start_gang``."""
        info = self._add("kueue")["kueue"]
        return Kueue(
            version=info["version"],
            namespace=info["namespace"],
            log=self.kubeconfig.parent / f"{info['tools'][0]}.log",
        )

    def stop(self) -> None:
        subprocess.run([*CLUSTER_SCRIPT, "down", "--name", self.name], cwd=ROOT, check=False)

    def kubectl(
        self, *args: str, input_: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=input_,
            text=True,
            capture_output=True,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{proc.stderr}")
        return proc

    def admin(self) -> KubeClient:
        return KubeClient.from_config(str(self.kubeconfig))

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
                raise AssertionError(f"CRDs {' '.join(which)} not Established:\n{proc.stderr}")
            time.sleep(0.2)

    def token_kubeconfig(self, path: Path, token: str) -> Path:
        """A kubeconfig that authenticates with a bearer token (a ServiceAccount's)."""
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": base64.b64encode(
                            self.ca_file.read_bytes()
                        ).decode(),
                    },
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
        import urllib.request

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


def create_namespace(client: KubeClient, prefix: str) -> str:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": f"{prefix}-"}}
    name = str(client.create(NAMESPACES, body)["metadata"]["name"])
    # What kube-controller-manager adds to every namespace, and every pod in
    # it needs before kubelet starts it: the default ServiceAccount and the
    # API server's CA (the ServiceAccount volume's projected ConfigMap).
    for resource, obj in ((SERVICEACCOUNTS, "default"), (CONFIGMAPS, "kube-root-ca.crt")):
        wait_for(lambda: _has(client, resource, obj, name), 30, f"{obj} in {name}")  # noqa: B023
    return name


def _has(client: KubeClient, resource: Any, name: str, namespace: str) -> bool:
    try:
        client.get(resource, name, namespace)
        return True
    except NotFound:
        return False


@contextlib.contextmanager
def in_background(run: Callable[[], None], stop: Callable[[], None]) -> Iterator[None]:
    """``run`` in a daemon thread for the block; then ``stop()`` and a join."""
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop()
        thread.join(5)


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail with ``what``."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except AssertionError as exc:
            last_exc = exc
        time.sleep(interval)
    detail = f": {last_exc}" if last_exc else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")


def request_token(client: KubeClient, namespace: str, name: str, seconds: int = 7200) -> str:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    resp = client.request("POST", SERVICEACCOUNTS.path(namespace, name, "token"), body=body)
    return str(resp["status"]["token"])


def delete_quietly(
    client: KubeClient, resource: Resource, name: str, namespace: str | None
) -> None:
    with contextlib.suppress(NotFound):
        client.delete(resource, name, namespace)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


def session_cluster_name() -> str:
    """The name of this test process's cluster: ``$T9K_TEST_CLUSTER`` (default
    ``t9k-test``), and under pytest-xdist the worker's id after it
    (``t9k-test-gw0``): each worker runs its share of the tests serially
    against a cluster of its own, so a test that counts on the whole cluster
    (its GPUs, its CRDs) still has it to itself."""
    name = os.environ.get("T9K_TEST_CLUSTER", "t9k-test")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"{name}-{worker}" if worker else name
