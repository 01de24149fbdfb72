#!/usr/bin/env python3
"""The local cluster: a real control plane on this machine with KWOK nodes.

Used by the tests, the demo and the benchmarks alike::

    hack/cluster.py up [--name t9k]      # obtain binaries, start, wait until ready
    hack/cluster.py down [--name t9k]    # stop every process, remove the state
    hack/cluster.py status [--name t9k]
    hack/cluster.py kubeconfig [--name t9k]   # print the admin kubeconfig path
    hack/cluster.py binaries             # obtain the binaries, print their folder

Parts (versions in hack/versions.env): etcd, kube-apiserver (TLS, RBAC,
default admission plugins), kube-controller-manager (garbage collection,
namespace lifecycle, service accounts, node lifecycle), kube-scheduler, and the
KWOK controller simulating the nodes' kubelets with the stages in
hack/kwok/stages.yaml. kubectl of the same version is put beside them.

State lives in ``~/.cache/t9k-operator/clusters/<name>/``: the admin
kubeconfig is ``kubeconfig`` there, logs are ``*.log``, and ``cluster.json``
records ports and process ids so ``down`` stops exactly what ``up`` started.

Binaries are looked for, in order: ``$T9K_CLUSTER_BIN_DIR`` (a folder of
prebuilt binaries); the cache ``~/.cache/t9k-operator/bin/<versions>/``; the
official release downloads (skipped fast when offline); and last, a build with
the local Go toolchain from the Go module proxy (hack/k8s and hack/etcd are
small wrapper modules; KWOK installs as it is). Only the standard library is
used here, so this runs before the project's virtualenv exists.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HACK = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("T9K_CACHE_DIR", Path.home() / ".cache" / "t9k-operator"))
K8S_TOOLS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ALL_TOOLS = (*K8S_TOOLS, "etcd", "kwok")

# Fake nodes: enough for several multi-replica jobs at once, with GPUs.
NODES = 4
NODE_CAPACITY = {
    "cpu": "64",
    "memory": "512Gi",
    "pods": "110",
    "nvidia.com/gpu": "8",
    "ephemeral-storage": "1Ti",
}


def log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def versions() -> dict[str, str]:
    out = {}
    for line in (HACK / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


# --------------------------------------------------------------------------- binaries


COMPLETE_MARK = ".complete"


def _complete(folder: Path) -> bool:
    """A folder is used only when its build finished: the mark is written last."""
    return (folder / COMPLETE_MARK).exists() and all(
        os.access(folder / tool, os.X_OK) for tool in ALL_TOOLS
    )


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOMODCACHE", str(CACHE / "gomod"))
    env.setdefault("GOCACHE", str(CACHE / "gocache"))
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "-mod=mod")
    return env


def _download(dest: Path, v: dict[str, str]) -> bool:
    """Official release binaries, where the network allows. False when offline."""
    if os.environ.get("T9K_NO_DOWNLOAD") == "1":
        return False
    k8s, etcd, kwok = v["KUBERNETES_VERSION"], v["ETCD_VERSION"], v["KWOK_VERSION"]
    probe = f"https://dl.k8s.io/release/{k8s}/bin/linux/amd64/kubectl.sha256"
    try:
        urllib.request.urlopen(probe, timeout=3).read()
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        log(f"official downloads unreachable ({exc.__class__.__name__}); building from Go modules")
        return False
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".download-"))
    try:
        for tool in K8S_TOOLS:
            url = f"https://dl.k8s.io/release/{k8s}/bin/linux/amd64/{tool}"
            log(f"downloading {url}")
            urllib.request.urlretrieve(url, tmp / tool)
        for tool in ("kwok",):
            url = (
                f"https://github.com/kubernetes-sigs/kwok/releases/download/{kwok}/"
                f"{tool}-linux-amd64"
            )
            urllib.request.urlretrieve(url, tmp / tool)
        url = (
            f"https://github.com/etcd-io/etcd/releases/download/{etcd}/"
            f"etcd-{etcd}-linux-amd64.tar.gz"
        )
        urllib.request.urlretrieve(url, tmp / "etcd.tgz")
        subprocess.run(
            [
                "tar",
                "-xzf",
                tmp / "etcd.tgz",
                "-C",
                tmp,
                "--strip-components=1",
                f"etcd-{etcd}-linux-amd64/etcd",
            ],
            check=True,
        )
        for tool in ALL_TOOLS:
            (tmp / tool).chmod(0o755)
            (tmp / tool).replace(dest / tool)
        return True
    except (urllib.error.URLError, OSError, subprocess.CalledProcessError) as exc:
        log(f"download failed ({exc}); building from Go modules")
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class BuildError(SystemExit):
    pass


def _go(what: str, args: list[str], cwd: Path | None, env: dict[str, str], logfile: Path) -> None:
    """One ``go`` command, its output kept in ``logfile``; a failure names the
    binary, go's exit code and the end of what go said."""
    with open(logfile, "ab") as out:
        out.write(f"\n$ {' '.join(args)}   # {what}\n".encode())
        out.flush()
        proc = subprocess.run(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = logfile.read_text(errors="replace").splitlines()[-25:]
        raise BuildError(
            f"cluster: building {what} failed (go exited {proc.returncode}); "
            f"the end of its output ({logfile}):\n" + "\n".join(tail)
        )


def _build(dest: Path, v: dict[str, str]) -> None:
    if not shutil.which("go"):
        raise BuildError(
            "cluster: no Go toolchain on PATH, and no binaries to use: "
            "install Go or set T9K_CLUSTER_BIN_DIR"
        )
    env = _go_env()
    k8s = v["KUBERNETES_VERSION"]
    minor = k8s.lstrip("v").split(".")[1]
    ldflags = (
        "-s -w "
        f"-X k8s.io/component-base/version.gitVersion={k8s} "
        "-X k8s.io/component-base/version.gitMajor=1 "
        f"-X k8s.io/component-base/version.gitMinor={minor} "
        "-X k8s.io/component-base/version.gitTreeState=clean"
    )
    logfile = dest.parent / f"{dest.name.split('.tmp-')[0].lstrip('.')}.build.log"
    logfile.unlink(missing_ok=True)
    started = time.monotonic()
    log(
        f"building Kubernetes {k8s} (apiserver, controller-manager, scheduler, kubectl) "
        f"from Go modules: about 6 minutes cold on 2 cores; output in {logfile}"
    )
    _go(
        f"Kubernetes {k8s} (hack/k8s: kube-apiserver, kube-controller-manager, "
        "kube-scheduler, kubectl)",
        ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(dest / "k8s"), "."],
        HACK / "k8s",
        env,
        logfile,
    )
    for tool in K8S_TOOLS:
        (dest / tool).symlink_to("k8s")
    log(f"building etcd {v['ETCD_VERSION']}")
    _go(
        f"etcd {v['ETCD_VERSION']} (hack/etcd)",
        ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(dest / "etcd"), "."],
        HACK / "etcd",
        env,
        logfile,
    )
    log(f"building kwok {v['KWOK_VERSION']}")
    _go(
        f"kwok {v['KWOK_VERSION']} (sigs.k8s.io/kwok/cmd/kwok)",
        [
            "go",
            "install",
            "-trimpath",
            "-ldflags",
            "-s -w",
            f"sigs.k8s.io/kwok/cmd/kwok@{v['KWOK_VERSION']}",
        ],
        None,
        {**env, "GOBIN": str(dest), "GOFLAGS": ""},
        logfile,
    )
    log(f"binaries built in {time.monotonic() - started:.0f}s")


@contextlib.contextmanager
def _locked(path: Path):  # type: ignore[no-untyped-def]
    """An exclusive lock on ``path`` (released when the process dies), so that
    two runs (a demo and the tests, say) never build into the same folder."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another run is obtaining the binaries; waiting for it ({path})")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def ensure_binaries() -> Path:
    """The folder of complete binaries, obtaining them first when needed.

    Binaries are built (or downloaded) into a fresh temporary folder beside the
    final one, marked complete, and only then renamed into place, all under a
    lock: a folder is never used half-built, and a build that was interrupted
    leaves only a temporary folder, removed by the next run. Set
    ``T9K_NO_BUILD=1`` to fail at once instead of building (the test suite
    does: binaries are a make prerequisite, never built under a test timeout).
    """
    override = os.environ.get("T9K_CLUSTER_BIN_DIR")
    if override:
        folder = Path(override)
        if not all(os.access(folder / t, os.X_OK) for t in ALL_TOOLS):
            missing = [t for t in ALL_TOOLS if not os.access(folder / t, os.X_OK)]
            raise SystemExit(f"cluster: T9K_CLUSTER_BIN_DIR={folder} lacks {', '.join(missing)}")
        return folder
    v = versions()
    tag = f"k8s-{v['KUBERNETES_VERSION']}_etcd-{v['ETCD_VERSION']}_kwok-{v['KWOK_VERSION']}"
    folder = CACHE / "bin" / tag
    if _complete(folder):
        return folder
    if os.environ.get("T9K_NO_BUILD") == "1":
        raise SystemExit(
            f"cluster: the binaries are not in {folder} and T9K_NO_BUILD=1: "
            "run `make binaries` (or `python3 hack/cluster.py binaries`) first"
        )
    with _locked(CACHE / "bin" / f".{tag}.lock"):
        if _complete(folder):  # another run finished them while we waited
            return folder
        for stale in (CACHE / "bin").glob(f".{tag}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if folder.exists():
            log(f"{folder} is incomplete (an interrupted build?): building it again")
            shutil.rmtree(folder)
        tmp = CACHE / "bin" / f".{tag}.tmp-{os.getpid()}"
        tmp.mkdir(parents=True)
        try:
            if not _download(tmp, v):
                _build(tmp, v)
            if not all(os.access(tmp / t, os.X_OK) for t in ALL_TOOLS):
                missing = [t for t in ALL_TOOLS if not os.access(tmp / t, os.X_OK)]
                raise BuildError(f"cluster: after the build, {', '.join(missing)} missing")
            (tmp / COMPLETE_MARK).write_text(tag + "\n")
            tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


# --------------------------------------------------------------------------- PKI


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(pki: Path) -> None:
    pki.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "3650",
        "-subj",
        "/CN=t9k-local-ca",
        cwd=pki,
    )
    sans = (
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc,"
        "DNS:kubernetes.default.svc.cluster.local"
    )
    certs = {
        "apiserver": ("/CN=kube-apiserver", sans),
        "admin": ("/O=system:masters/CN=kubernetes-admin", None),
        "controller-manager": ("/CN=system:kube-controller-manager", None),
        "scheduler": ("/CN=system:kube-scheduler", None),
        "kwok": ("/O=system:masters/CN=kwok-controller", None),
    }
    for name, (subject, ext) in certs.items():
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
            cwd=pki,
        )
        extra = []
        if ext:
            (pki / f"{name}.ext").write_text(ext + "\n")
            extra = ["-extfile", f"{name}.ext"]
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "3650",
            *extra,
            cwd=pki,
        )
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def write_kubeconfig(path: Path, server: str, pki: Path, user: str) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "t9k-local",
                "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": b64(f"{user}.crt"),
                    "client-key-data": b64(f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "t9k-local", "context": {"cluster": "t9k-local", "user": user}}],
        "current-context": "t9k-local",
    }
    # JSON is YAML: kubectl and every client read it.
    path.write_text(json.dumps(doc, indent=2) + "\n")
    path.chmod(0o600)


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def state_dir(name: str) -> Path:
    return CACHE / "clusters" / name


def _start(bin_dir: Path, tool: str, args: list[str], workdir: Path) -> int:
    logf = open(workdir / f"{tool}.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [str(bin_dir / tool), *args],
        stdout=logf,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=workdir,
        start_new_session=True,
    )
    logf.close()
    return proc.pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours is not alive.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _ours(pid: int, workdir: Path) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(workdir)
    except OSError:
        return False


def _https_get(url: str, pki: Path, timeout: float = 2.0) -> tuple[int, bytes]:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _wait(what: str, check, timeout: float, procs: dict[str, int], workdir: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for tool, pid in procs.items():
            if not _alive(pid):
                tail = (workdir / f"{tool}.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"cluster: {tool} exited while waiting for {what}:\n{tail}")
        try:
            if check():
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        time.sleep(0.2)
    raise SystemExit(
        f"cluster: timed out after {timeout:.0f}s waiting for {what} (logs in {workdir})"
    )


def kubectl(
    bin_dir: Path, kubeconfig: Path, *args: str, input_: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=input_,
        text=True,
        capture_output=True,
        check=check,
    )


def up(name: str) -> Path:
    workdir = state_dir(name)
    if (workdir / "cluster.json").exists():
        state = json.loads((workdir / "cluster.json").read_text())
        if all(_alive(p) and _ours(p, workdir) for p in state["pids"].values()):
            log(f"cluster {name!r} already running")
            return workdir / "kubeconfig"
        log(f"cluster {name!r} is partly down; recreating it")
        down(name)
    bin_dir = ensure_binaries()
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    pki = workdir / "pki"
    make_pki(pki)
    ports = {k: free_port() for k in ("etcd", "etcd_peer", "apiserver", "kwok")}
    server = f"https://127.0.0.1:{ports['apiserver']}"
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, server, pki, "admin")
    for component in ("controller-manager", "scheduler", "kwok"):
        write_kubeconfig(workdir / f"{component}.kubeconfig", server, pki, component)
    procs: dict[str, int] = {}
    state = {"name": name, "ports": ports, "pids": procs, "bin_dir": str(bin_dir), "server": server}

    def save() -> None:
        (workdir / "cluster.json").write_text(json.dumps(state, indent=2) + "\n")

    try:
        etcd_url = f"http://127.0.0.1:{ports['etcd']}"
        peer_url = f"http://127.0.0.1:{ports['etcd_peer']}"
        procs["etcd"] = _start(
            bin_dir,
            "etcd",
            [
                "--name=t9k",
                f"--data-dir={workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=t9k={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
                "--quota-backend-bytes=4294967296",
            ],
            workdir,
        )
        save()
        _wait(
            "etcd",
            lambda: urllib.request.urlopen(f"{etcd_url}/health", timeout=1).status == 200,
            30,
            procs,
            workdir,
        )
        procs["kube-apiserver"] = _start(
            bin_dir,
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={ports['apiserver']}",
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
                "--profiling=false",
                "--v=1",
            ],
            workdir,
        )
        save()
        _wait(
            "kube-apiserver",
            lambda: _https_get(f"{server}/readyz", pki)[0] == 200,
            60,
            procs,
            workdir,
        )
        procs["kube-controller-manager"] = _start(
            bin_dir,
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
                "--v=1",
            ],
            workdir,
        )
        procs["kube-scheduler"] = _start(
            bin_dir,
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
            workdir,
        )
        procs["kwok"] = _start(
            bin_dir,
            "kwok",
            [
                f"--kubeconfig={workdir / 'kwok.kubeconfig'}",
                f"--config={HACK / 'kwok' / 'stages.yaml'}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.0/16",
                f"--server-address=127.0.0.1:{ports['kwok']}",
            ],
            workdir,
        )
        save()
        nodes = []
        for i in range(NODES):
            nodes.append(
                {
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
            )
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

        _wait("nodes Ready", nodes_ready, 60, procs, workdir)
        _wait(
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
            procs,
            workdir,
        )
    except BaseException:
        save()
        down(name, quiet=True)
        raise
    log(
        f"cluster {name!r} ready in {time.monotonic() - started:.1f}s: "
        f"{server}, kubeconfig {kubeconfig}"
    )
    return kubeconfig


def down(name: str, quiet: bool = False) -> None:
    workdir = state_dir(name)
    state_file = workdir / "cluster.json"
    if not state_file.exists():
        if not quiet:
            log(f"cluster {name!r} is not running")
        shutil.rmtree(workdir, ignore_errors=True)
        return
    pids = json.loads(state_file.read_text()).get("pids", {})
    # Reverse start order: kwok and the controllers first, etcd last.
    order = [p for p in reversed(list(pids.values())) if _alive(p) and _ours(p, workdir)]
    for pid in order:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in order):
        _reap()
        time.sleep(0.1)
    for pid in order:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    _reap()
    shutil.rmtree(workdir, ignore_errors=True)
    if not quiet:
        log(f"cluster {name!r} stopped")


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def status(name: str) -> int:
    workdir = state_dir(name)
    state_file = workdir / "cluster.json"
    if not state_file.exists():
        print(f"cluster {name!r}: not running")
        return 1
    state = json.loads(state_file.read_text())
    ok = True
    for tool, pid in state["pids"].items():
        alive = _alive(pid) and _ours(pid, workdir)
        ok &= alive
        print(f"{tool:26} pid {pid:>7}  {'running' if alive else 'DOWN'}")
    print(f"server      {state['server']}\nkubeconfig  {workdir / 'kubeconfig'}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up", "down", "status", "kubeconfig", "binaries"])
    parser.add_argument("--name", default=os.environ.get("T9K_CLUSTER_NAME", "t9k"))
    args = parser.parse_args()
    if args.command == "up":
        print(up(args.name))
    elif args.command == "down":
        down(args.name)
    elif args.command == "status":
        return status(args.name)
    elif args.command == "kubeconfig":
        print(state_dir(args.name) / "kubeconfig")
    elif args.command == "binaries":
        print(ensure_binaries())
    return 0


if __name__ == "__main__":
    sys.exit(main())
