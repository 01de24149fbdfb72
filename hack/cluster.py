#!/usr/bin/env python3
"""The local cluster: a real control plane on this machine with KWOK nodes.

Used by the tests, the demo and the benchmarks alike::

    hack/cluster.py up [--name t9k]      # obtain binaries, start, wait until ready
    hack/cluster.py down [--name t9k]    # stop every process, remove the state
    hack/cluster.py status [--name t9k]
    hack/cluster.py kubeconfig [--name t9k]   # print the admin kubeconfig path
    hack/cluster.py binaries             # obtain the binaries, print their folder
    hack/cluster.py up --gang volcano,coscheduling   # ... with gang schedulers too
    hack/cluster.py gang [--name t9k] volcano        # add one to a running cluster
    hack/cluster.py up --kueue                       # ... with Kueue too
    hack/cluster.py kueue [--name t9k]               # add Kueue to a running cluster
    hack/cluster.py up --apiserver-flag=--max-requests-inflight=5   # kube-apiserver flag

Parts (versions in hack/versions.env): etcd, kube-apiserver (TLS, RBAC,
default admission plugins), kube-controller-manager (garbage collection,
namespace lifecycle, service accounts, node lifecycle), kube-scheduler, and the
KWOK controller simulating the nodes' kubelets with the stages in
hack/kwok/stages.yaml, and hack/kwok/pod_logs.py giving each container a log
of its own for KWOK's kubelet endpoint to serve (``pod-logs/``). kubectl of the
same version is put beside them.

State lives in ``~/.cache/t9k-operator/clusters/<name>/``: the admin
kubeconfig is ``kubeconfig`` there, logs are ``*.log``, and ``cluster.json``
records ports and process ids so ``down`` stops exactly what ``up`` started.

Binaries are looked for, in order: ``$T9K_CLUSTER_BIN_DIR`` (a folder of
prebuilt binaries); the cache ``~/.cache/t9k-operator/bin/<versions>/``; the
official release downloads (skipped fast when offline); and last, a build with
the local Go toolchain from the Go module proxy (hack/k8s and hack/etcd are
small wrapper modules). KWOK is always built from its module's source, with
one change that makes its pod deletes a kubelet's (``KWOK_PATCHES``). Only
the standard library is used here, so this runs before the project's
virtualenv exists.

Gang schedulers (versions in hack/versions.env too) run beside kube-scheduler
on request, each for the pods naming its ``schedulerName``: the Volcano
scheduler (``volcano``) and scheduler-plugins' kube-scheduler with the
Coscheduling plugin (``scheduler-plugins-scheduler``, with the
scheduler-plugins controller filling in PodGroup status). Their binaries are
built from the Go module proxy through the wrapper modules hack/volcano and
hack/scheduler-plugins, each into its own cache folder
``~/.cache/t9k-operator/bin/<wrapper>-<version>-<digest>/`` with its CRDs in
``crds/``; ``binaries`` builds them too (``--gang none`` skips them).
Starting one installs its CRDs and waits for its health check; ``down``
stops it with the rest.

Kueue (``KUEUE_VERSION``) is added the same way: its manager
(``sigs.k8s.io/kueue/cmd/kueue``, built through hack/kueue as
``kueue-manager``) and all its CRDs, cached in
``~/.cache/t9k-operator/bin/kueue-<version>-<digest>/``; ``binaries`` builds
it too (``--no-kueue`` skips it), ``up --kueue`` or ``kueue`` starts it in the
namespace ``kueue-system`` and waits for its ``/readyz``. Its webhooks are not
registered with the API server: Workloads are created directly, and its
controllers and scheduler admit them. No job integration is enabled. Its
visibility API (pending workloads' positions) is served through the API
server's aggregation layer when its fixed port 8082 is free on this machine
(``_serve_visibility``); its self-signed serving certificate is written to
``/visibility`` (a path fixed in Kueue v0.12).

The install tests' tools are cached the same way, never started: Helm
(``HELM_VERSION``, hack/helm) and kustomize (``KUSTOMIZE_VERSION``,
hack/kustomize), and the ServiceMonitor and PrometheusRule CRDs from
prometheus-operator's module source (``PROMETHEUS_OPERATOR_VERSION``,
hack/prometheus-operator); ``binaries`` builds them too (``--no-tools`` skips
them), ``tool helm kustomize monitoring-crds`` prints their folders.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
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
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


# A folder is used only when its build finished: the mark is written last.
COMPLETE_MARK = ".complete"


# The Go module and build caches of these builds, unless the environment names
# its own: scratch, removed once every binary is built (``drop_go_caches``).
_GO_SCRATCH = {"GOMODCACHE": "gomod", "GOCACHE": "gocache"}
_GO_CACHES_LOCK = CACHE / "bin" / ".go-caches.lock"


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    for var, folder in _GO_SCRATCH.items():
        env.setdefault(var, str(CACHE / folder))
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "-mod=mod")
    return env


def drop_go_caches() -> None:
    """Remove the Go caches ``_go_env`` made under the cache (not a GOCACHE or
    GOMODCACHE the environment names: those are the user's). A cold build of
    every binary leaves about 11 GB in them (8.4 GB of build cache, 2.6 GB of
    module sources, measured in docs/benchmarks.md) that nothing reads again:
    the binaries are cached by version, and a version bump builds anew. A CI
    run with them in place ran out of disk in the image test."""
    import fcntl

    mine = [(v, CACHE / f) for v, f in _GO_SCRATCH.items() if v not in os.environ]
    if not any(path.exists() for _, path in mine):
        return
    _GO_CACHES_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(_GO_CACHES_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another run is building with the Go caches: they are left for it to remove")
            return
        for var, path in mine:
            if path.exists():
                _remove_go_cache(var, path)


def _remove_go_cache(var: str, path: Path) -> None:
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())

    def writable(func, name, _exc):  # type: ignore[no-untyped-def]
        # The module cache's folders are read-only, as Go makes them.
        os.chmod(os.path.dirname(name), 0o755)
        if os.path.isdir(name):
            os.chmod(name, 0o755)
        func(name)

    shutil.rmtree(path, onerror=writable)
    log(f"removed the Go {var} of the builds ({size / 2**30:.1f} GiB): {path}")


@contextlib.contextmanager
def _go_caches_in_use():  # type: ignore[no-untyped-def]
    """A shared lock on the Go caches for a build: ``drop_go_caches`` never
    removes them under another run's build."""
    import fcntl

    _GO_CACHES_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(_GO_CACHES_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield


def _download(dest: Path, v: dict[str, str]) -> bool:
    """Official release binaries, where the network allows. False when offline."""
    if os.environ.get("T9K_NO_DOWNLOAD") == "1":
        return False
    k8s, etcd = v["KUBERNETES_VERSION"], v["ETCD_VERSION"]
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
        for tool in (*K8S_TOOLS, "etcd"):  # kwok is always built: _build_kwok
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


def _need_go() -> None:
    if not shutil.which("go"):
        raise BuildError(
            "cluster: no Go toolchain on PATH, and no binaries to use: "
            "install Go or set T9K_CLUSTER_BIN_DIR"
        )


def _build_log(dest: Path) -> Path:
    return dest.parent / f"{dest.name.split('.tmp-')[0].lstrip('.')}.build.log"


def _build(dest: Path, v: dict[str, str]) -> None:
    _need_go()
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
    logfile = _build_log(dest)
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
    _build_kwok(dest, v, env, logfile)
    log(f"binaries built in {time.monotonic() - started:.0f}s")


# KWOK deletes a pod by its name alone (pkg/kwok/controllers/pod_controller.go,
# deleteResource). A kubelet deletes the pod it has finished with under a UID
# precondition (pkg/kubelet/status/status_manager.go, syncPod:
# ``deleteOptions.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))``),
# so its delete never removes a newer pod of the same name. KWOK plays a pod's
# delete stage from a delay queue fed by the pod's events, through a second
# goroutine: an event of the old pod that is still in that goroutine when the
# pod goes queues one more delete, which fires a second later and, by name,
# removes the replacement the operator has just created (seen on a busy machine
# as a resumed job's replica vanishing once, then created again). The build adds
# the kubelet's precondition; a delete that finds another pod under the name
# fails with a Conflict, which KWOK logs and drops.
KWOK_PATCHES = (
    (
        "pkg/kwok/controllers/pod_controller.go",
        "err := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteOpt)",
        "opt := deleteOpt\n"
        "\topt.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))\n"
        "\terr := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opt)",
    ),
)
KWOK_BUILD = hashlib.sha256(repr(KWOK_PATCHES).encode()).hexdigest()[:8]


def _module_source(
    module: str, version: str, env: dict[str, str], logfile: Path, cwd: Path | None = None
) -> Path:
    """The folder of ``module@version``'s source in the Go module cache (``go mod
    download``, its errors in ``logfile``), or a BuildError naming the module."""
    with open(logfile, "ab") as out:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=out,
        )
    try:
        return Path(json.loads(proc.stdout)["Dir"])
    except (ValueError, KeyError) as exc:
        raise BuildError(
            f"cluster: `go mod download {module}@{version}` gave no source folder "
            f"(exit {proc.returncode}, {exc.__class__.__name__}); see {logfile}"
        ) from None


def _build_kwok(dest: Path, v: dict[str, str], env: dict[str, str], logfile: Path) -> None:
    """kwok from its module's source at the pinned version, with KWOK_PATCHES."""
    version = v["KWOK_VERSION"]
    log(f"building kwok {version} (with the kubelet's UID precondition on pod deletes)")
    # Outside any module: no -mod flag (go refuses one there).
    source = _module_source("sigs.k8s.io/kwok", version, {**env, "GOFLAGS": ""}, logfile)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".kwok-src-") as tmp:
        tree = Path(tmp) / "kwok"
        shutil.copytree(source, tree)
        for path in (tree, *tree.rglob("*")):
            path.chmod(path.stat().st_mode | 0o200)  # the module cache's copy is read-only
        for rel, old, new in KWOK_PATCHES:
            file = tree / rel
            text = file.read_text()
            if text.count(old) != 1:
                raise BuildError(f"cluster: kwok {version}'s {rel} no longer has: {old}")
            file.write_text(text.replace(old, new))
        _go(
            f"kwok {version} (sigs.k8s.io/kwok/cmd/kwok, patched: hack/cluster.py KWOK_PATCHES)",
            [
                "go",
                "build",
                "-trimpath",
                "-ldflags",
                "-s -w",
                "-o",
                str(dest / "kwok"),
                "./cmd/kwok",
            ],
            tree,
            {**env, "GOFLAGS": "-mod=mod"},
            logfile,
        )


@contextlib.contextmanager
def _locked(path: Path, what: str = "obtaining the binaries"):  # type: ignore[no-untyped-def]
    """An exclusive lock on ``path`` (released when the process dies), so that
    two runs (a demo and the tests, say) never build into the same folder."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another run is {what}; waiting for it ({path})")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _missing(folder: Path, tools: Iterable[str], files: Iterable[str] = ()) -> list[str]:
    return [t for t in tools if not os.access(folder / t, os.X_OK)] + [
        f for f in files if not (folder / f).is_file()
    ]


def _obtain(
    tag: str,
    what: str,
    tools: Iterable[str],
    files: Iterable[str],
    produce: Callable[[Path], None],
) -> Path:
    """``CACHE/bin/<tag>``, made by ``produce`` first when it is not complete.

    ``produce`` fills a fresh temporary folder beside the final one, which is
    marked complete and only then renamed into place, all under a lock: a
    folder is never used half-built, and a build that was interrupted leaves
    only a temporary folder, removed by the next run. ``T9K_NO_BUILD=1`` fails
    at once instead of building.
    """
    tools, files = tuple(tools), tuple(files)
    folder = CACHE / "bin" / tag

    def complete(path: Path) -> bool:
        return (path / COMPLETE_MARK).exists() and not _missing(path, tools, files)

    if complete(folder):
        return folder
    if os.environ.get("T9K_NO_BUILD") == "1":
        raise MissingBinaries(
            f"cluster: {what} not in {folder} and T9K_NO_BUILD=1: "
            "run `make binaries` (or `python3 hack/cluster.py binaries`) first"
        )
    with _locked(CACHE / "bin" / f".{tag}.lock"):
        if complete(folder):  # another run finished them while we waited
            return folder
        for stale in (CACHE / "bin").glob(f".{tag}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if folder.exists():
            log(f"{folder} is incomplete (an interrupted build?): building it again")
            shutil.rmtree(folder)
        tmp = CACHE / "bin" / f".{tag}.tmp-{os.getpid()}"
        tmp.mkdir(parents=True)
        try:
            with _go_caches_in_use():
                produce(tmp)
            missing = _missing(tmp, tools, files)
            if missing:
                raise BuildError(f"cluster: after the build, {', '.join(missing)} missing")
            (tmp / COMPLETE_MARK).write_text(tag + "\n")
            tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


class MissingBinaries(SystemExit):
    """Binaries absent with ``T9K_NO_BUILD=1``: ``main`` exits with
    ``EXIT_MISSING_BINARIES`` so that callers can tell it from a failure."""


EXIT_MISSING_BINARIES = 3


def ensure_binaries() -> Path:
    """The folder of complete binaries, obtaining them first when needed
    (see ``_obtain``). Set ``T9K_NO_BUILD=1`` to fail at once instead of
    building (the test suite does: binaries are a make prerequisite, never
    built under a test timeout).
    """
    override = os.environ.get("T9K_CLUSTER_BIN_DIR")
    if override:
        folder = Path(override)
        if not all(os.access(folder / t, os.X_OK) for t in ALL_TOOLS):
            missing = [t for t in ALL_TOOLS if not os.access(folder / t, os.X_OK)]
            raise SystemExit(f"cluster: T9K_CLUSTER_BIN_DIR={folder} lacks {', '.join(missing)}")
        return folder
    v = versions()
    tag = (
        f"k8s-{v['KUBERNETES_VERSION']}_etcd-{v['ETCD_VERSION']}"
        f"_kwok-{v['KWOK_VERSION']}-{KWOK_BUILD}"
    )

    def produce(tmp: Path) -> None:
        if _download(tmp, v):
            _need_go()
            _build_kwok(tmp, v, _go_env(), _build_log(tmp))
        else:
            _build(tmp, v)

    return _obtain(tag, "the binaries are", ALL_TOOLS, (), produce)


# ----------------------------------------------------------------------- add-ons: binaries


@dataclass(frozen=True, kw_only=True)
class Addon:
    """A program the cluster runs beside its control plane on request (a gang
    scheduler, or Kueue), built from a Go module through a wrapper module, its
    CRDs copied from the same module's source."""

    name: str  # as given on the command line
    title: str
    version_key: str  # in hack/versions.env
    module: str  # the Go module built, at that version
    wrapper: str  # its wrapper module: hack/<wrapper>
    binaries: tuple[tuple[str, str], ...]  # (binary, Go package), started in this order
    crds: tuple[tuple[str, str], ...]  # (file in the module's source, name in crds/)
    ldflags: str = "-s -w"

    @property
    def version(self) -> str:
        return versions()[self.version_key]

    @property
    def tag(self) -> str:
        """The cache folder's name: the version, and a digest of the wrapper
        module and build flags, so a changed replace line means a new build."""
        digest = hashlib.sha256(self.ldflags.encode())
        for name in ("go.mod", "go.sum"):
            digest.update((HACK / self.wrapper / name).read_bytes())
        return f"{self.wrapper}-{self.version}-{digest.hexdigest()[:10]}"

    @property
    def skip(self) -> str:
        """The ``binaries`` option that does without it."""
        return f"--no-{self.name}"


@dataclass(frozen=True, kw_only=True)
class Gang(Addon):
    """A gang scheduler the cluster can run beside kube-scheduler: it schedules
    the pods whose ``spec.schedulerName`` is ``scheduler_name``, binding a
    group's pods all together or not at all."""

    scheduler_name: str

    @property
    def skip(self) -> str:
        return "--gang none"


COSCHEDULING_REQUEUE = "15s"
"""How long a pod the Coscheduling scheduler rejected stays out of its queue at
most (kube-scheduler's --pod-max-in-unschedulable-pods-duration, default 5m)."""
_VOLCANO_CRDS = "installer/helm/chart/volcano/crd/bases"
_SP_CRDS = "config/crd/bases"  # the same CRDs as manifests/{coscheduling,capacityscheduling}
GANGS = {
    "volcano": Gang(
        name="volcano",
        title="the Volcano scheduler",
        version_key="VOLCANO_VERSION",
        module="volcano.sh/volcano",
        wrapper="volcano",
        binaries=(("volcano-scheduler", "volcano.sh/volcano/cmd/scheduler"),),
        # PodGroups and Queues, and NUMA topologies: the scheduler watches them
        # (its ResourceTopology feature gate is on by default).
        crds=tuple(
            (f"{_VOLCANO_CRDS}/{f}", f)
            for f in (
                "scheduling.volcano.sh_podgroups.yaml",
                "scheduling.volcano.sh_queues.yaml",
                "nodeinfo.volcano.sh_numatopologies.yaml",
            )
        ),
        scheduler_name="volcano",
        ldflags="-s -w -X volcano.sh/volcano/pkg/version.Version={version}",
    ),
    "coscheduling": Gang(
        name="coscheduling",
        title="scheduler-plugins (Coscheduling)",
        version_key="SCHEDULER_PLUGINS_VERSION",
        module="sigs.k8s.io/scheduler-plugins",
        wrapper="scheduler-plugins",
        # The scheduler alone binds all or nothing; the controller fills in
        # the PodGroups' status (phase, running/succeeded/failed counts).
        binaries=(
            ("scheduler-plugins-scheduler", "sigs.k8s.io/scheduler-plugins/cmd/scheduler"),
            ("scheduler-plugins-controller", "sigs.k8s.io/scheduler-plugins/cmd/controller"),
        ),
        crds=tuple(
            (f"{_SP_CRDS}/{f}", f)
            for f in (
                "scheduling.x-k8s.io_podgroups.yaml",
                "scheduling.x-k8s.io_elasticquotas.yaml",
            )
        ),
        scheduler_name="scheduler-plugins-scheduler",
    ),
}

_KUEUE_CRDS = "config/components/crd/bases"
KUEUE = Addon(
    name="kueue",
    title="the Kueue manager",
    version_key="KUEUE_VERSION",
    module="sigs.k8s.io/kueue",
    wrapper="kueue",
    binaries=(("kueue-manager", "sigs.k8s.io/kueue/cmd/kueue"),),
    # All of them: its controllers watch every kind here (MultiKueue and
    # topology-aware scheduling are on by default), not only the queues and
    # Workloads the operator uses.
    crds=tuple(
        (f"{_KUEUE_CRDS}/kueue.x-k8s.io_{kind}.yaml", f"kueue.x-k8s.io_{kind}.yaml")
        for kind in (
            "admissionchecks",
            "clusterqueues",
            "cohorts",
            "localqueues",
            "multikueueclusters",
            "multikueueconfigs",
            "provisioningrequestconfigs",
            "resourceflavors",
            "topologies",
            "workloadpriorityclasses",
            "workloads",
        )
    ),
    ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion={version}",
)
# Every add-on, by name: what `binaries` builds unless told otherwise.
ADDONS: dict[str, Addon] = {**GANGS, KUEUE.name: KUEUE}


@dataclass(frozen=True, kw_only=True)
class Tool(Addon):
    """A command the install tests and ``make deploy`` run (Helm, kustomize),
    or only CRDs taken from a module's source (prometheus-operator's): built
    and cached like an add-on, never started beside the cluster."""

    @property
    def skip(self) -> str:
        return "--no-tools"


_PROMETHEUS_CRDS = "example/prometheus-operator-crd"
TOOLS: dict[str, Tool] = {
    "helm": Tool(
        name="helm",
        title="Helm",
        version_key="HELM_VERSION",
        module="helm.sh/helm/v3",
        wrapper="helm",
        binaries=(("helm", "helm.sh/helm/v3/cmd/helm"),),
        crds=(),
        ldflags="-s -w -X helm.sh/helm/v3/internal/version.version={version}",
    ),
    "kustomize": Tool(
        name="kustomize",
        title="kustomize",
        version_key="KUSTOMIZE_VERSION",
        module="sigs.k8s.io/kustomize/kustomize/v5",
        wrapper="kustomize",
        binaries=(("kustomize", "sigs.k8s.io/kustomize/kustomize/v5"),),
        crds=(),
        ldflags="-s -w -X sigs.k8s.io/kustomize/api/provenance.version={version}",
    ),
    # The ServiceMonitor and PrometheusRule kinds the chart and kustomize ship
    # (monitoring.coreos.com/v1), so that the tests can apply them.
    "monitoring-crds": Tool(
        name="monitoring-crds",
        title="prometheus-operator's CRDs",
        version_key="PROMETHEUS_OPERATOR_VERSION",
        module="github.com/prometheus-operator/prometheus-operator",
        wrapper="prometheus-operator",
        binaries=(),
        crds=tuple(
            (f"{_PROMETHEUS_CRDS}/monitoring.coreos.com_{kind}.yaml", f"{kind}.yaml")
            for kind in ("servicemonitors", "prometheusrules")
        ),
    ),
}


def parse_gangs(spec: str | Iterable[str]) -> list[Gang]:
    """``volcano,coscheduling`` (or a list of such), ``all`` or ``none``."""
    words = [spec] if isinstance(spec, str) else list(spec)
    names = [n.strip() for w in words for n in w.split(",") if n.strip()]
    if names == ["none"]:
        return []
    if names == ["all"]:
        return list(GANGS.values())
    unknown = [n for n in names if n not in GANGS]
    if unknown:
        raise SystemExit(
            f"cluster: unknown gang scheduler {', '.join(map(repr, unknown))}: "
            f"choose from {', '.join(GANGS)} (or all)"
        )
    return [GANGS[n] for n in dict.fromkeys(names)]


def _build_addon(dest: Path, g: Addon) -> None:
    if not shutil.which("go"):
        raise BuildError(
            f"cluster: no Go toolchain on PATH to build {g.title}: install Go, or "
            f"do without it (`python3 hack/cluster.py binaries {g.skip}`)"
        )
    version, wrapper = g.version, HACK / g.wrapper
    if f"{g.module} {version}" not in (wrapper / "go.mod").read_text():
        raise BuildError(
            f"cluster: hack/{g.wrapper}/go.mod does not require {g.module} {version} "
            f"({g.version_key} in hack/versions.env): update the wrapper module"
        )
    env = _go_env()
    logfile = dest.parent / f"{g.tag}.build.log"
    logfile.unlink(missing_ok=True)
    started = time.monotonic()
    log(
        f"building {g.title} {version} from Go modules (hack/{g.wrapper}): "
        f"a few minutes cold on 2 cores; output in {logfile}"
    )
    for binary, package in g.binaries:
        _go(
            f"{binary} {version} (hack/{g.wrapper}: {package})",
            [
                "go",
                "build",
                "-trimpath",
                "-ldflags",
                g.ldflags.format(version=version),
                "-o",
                str(dest / binary),
                package,
            ],
            wrapper,
            env,
            logfile,
        )
    # The CRDs come from the same module's source, copied beside the binaries:
    # starting the scheduler later needs neither Go nor the module cache.
    source = _module_source(g.module, version, env, logfile, cwd=wrapper)
    (dest / "crds").mkdir()
    for path, name in g.crds:
        if not (source / path).is_file():
            raise BuildError(f"cluster: {g.module}@{version} has no {path}")
        shutil.copyfile(source / path, dest / "crds" / name)
    log(f"{g.title} built in {time.monotonic() - started:.0f}s")


def ensure_addon_binaries(g: Addon) -> Path:
    """``CACHE/bin/<g.tag>``: the add-on's binaries and, in ``crds/``, its
    CRDs; built first when needed, the same way as ``ensure_binaries``."""
    return _obtain(
        g.tag,
        f"the binaries of {g.title} are",
        [b for b, _ in g.binaries],
        [f"crds/{name}" for _, name in g.crds],
        lambda tmp: _build_addon(tmp, g),
    )


# --------------------------------------------------------------------------- PKI

FRONT_PROXY = "front-proxy-client"


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
        "pod-logs": ("/O=system:masters/CN=kwok-pod-logs", None),
        # The API server's client certificate towards aggregated API servers
        # (Kueue's visibility API), whose name they accept request headers from.
        "front-proxy-client": (f"/CN={FRONT_PROXY}", None),
    }
    for name, (subject, ext) in certs.items():
        issue_cert(pki, name, subject, ext)
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def issue_cert(pki: Path, name: str, subject: str, ext: str | None = None) -> None:
    """``<name>.crt`` and ``.key`` in ``pki``, signed by the cluster's CA."""
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


PORT_TRIES = 3
"""Starts of a cluster whose process found a port taken: :func:`free_port`
closes the port it found, and any connection of this machine's may take it
before the process binds it."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def state_dir(name: str) -> Path:
    return CACHE / "clusters" / name


def _start(
    bin_dir: Path,
    tool: str,
    args: list[str],
    workdir: Path,
    env: dict[str, str] | None = None,
    program: list[str] | None = None,
    wrap: Sequence[str] = (),
) -> int:
    """``bin_dir/tool args`` (or ``program args``) in its own process group,
    in ``workdir``, logging to ``<tool>.log`` there (``wrap``: a command that
    execs it, given before it)."""
    logf = open(workdir / f"{tool}.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [*wrap, *(program or [str(bin_dir / tool)]), *args],
        stdout=logf,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=workdir,
        env=env,
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
    last = ""
    while time.monotonic() < deadline:
        for tool, pid in procs.items():
            if not _alive(pid):
                tail = (workdir / f"{tool}.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"cluster: {tool} exited while waiting for {what}:\n{tail}")
        try:
            if check():
                return
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last = f"; the last attempt: {str(exc).strip()[:500]}"
        time.sleep(0.2)
    raise SystemExit(
        f"cluster: timed out after {timeout:.0f}s waiting for {what} (logs in {workdir}){last}"
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


def start_pod_logs(
    bin_dir: Path, kubeconfig: Path, workdir: Path, server: str, procs: dict[str, int]
) -> None:
    """Each container's own log, as KWOK's kubelet endpoint serves it: the
    ``Logs`` definition (hack/kwok/logs.yaml) installed, and hack/kwok/pod_logs.py
    started, which writes every pod's container logs under ``pod-logs/`` (the
    lines of hack/kwok/container.log, each with the pod's and the container's
    names) and names them in the pod's ``Logs`` object. Returns once it has
    made those of the pods already there."""
    kubectl(bin_dir, kubeconfig, "apply", "-f", str(HACK / "kwok" / "logs.yaml"))
    kubectl(
        bin_dir,
        kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/logs.kwok.x-k8s.io",
    )
    ready = workdir / "pod-logs.ready"
    ready.unlink(missing_ok=True)
    procs["pod-logs"] = _start(
        bin_dir,
        "pod-logs",
        [
            f"--server={server}",
            f"--pki={workdir / 'pki'}",
            f"--dir={workdir / 'pod-logs'}",
            f"--template={HACK / 'kwok' / 'container.log'}",
            f"--ready={ready}",
        ],
        workdir,
        program=[sys.executable, str(HACK / "kwok" / "pod_logs.py")],
    )
    _wait("the pods' logs", ready.exists, 30, procs, workdir)


def up(
    name: str,
    gangs: Iterable[Gang] = (),
    with_kueue: bool = False,
    apiserver_flags: Iterable[str] = (),
) -> Path:
    """Start the cluster ``name`` (when it is not running) and the gang
    schedulers ``gangs`` in it, and Kueue when ``with_kueue`` (those not
    running yet). ``apiserver_flags`` are added to kube-apiserver's (the tests'
    and benchmarks' way to shape it, e.g. ``--max-requests-inflight=5``); a
    cluster running with other ones is recreated."""
    addons: list[Addon] = [*gangs, *([KUEUE] if with_kueue else [])]
    extra = list(apiserver_flags)
    workdir = state_dir(name)
    if (workdir / "cluster.json").exists():
        state = json.loads((workdir / "cluster.json").read_text())
        pids = state["pids"]
        running = all(t in pids and _alive(pids[t]) and _ours(pids[t], workdir) for t in CORE_PROCS)
        if running and state.get("apiserver_flags", []) == extra:
            log(f"cluster {name!r} already running")
            start_addons(name, addons)
            return workdir / "kubeconfig"
        why = "is partly down" if not running else "runs with other kube-apiserver flags"
        log(f"cluster {name!r} {why}; recreating it")
        down(name)
    bin_dir = ensure_binaries()
    for g in addons:  # missing or failing binaries before the cluster starts
        ensure_addon_binaries(g)
    for attempt in range(1, PORT_TRIES + 1):
        try:
            return _start_cluster(name, workdir, bin_dir, addons, extra)
        except SystemExit as exc:  # torn down already
            if "address already in use" not in str(exc) or attempt == PORT_TRIES:
                raise
            log(
                f"cluster {name!r}: a port chosen for it was taken before its process "
                f"bound it ({attempt}/{PORT_TRIES}); starting it again on others"
            )
    raise AssertionError("unreachable")


def _start_cluster(
    name: str, workdir: Path, bin_dir: Path, addons: list[Addon], extra: list[str]
) -> Path:
    """Start the cluster's processes on free ports, its nodes and ``addons``;
    all torn down again if any does not start."""
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
    state = {
        "name": name,
        "ports": ports,
        "pids": procs,
        "bin_dir": str(bin_dir),
        "server": server,
        "apiserver_flags": extra,
    }

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
                # A node whose kubelet stops renewing its lease is marked not
                # ready after 20 s, not 50 s: the lost-node tests wait for it.
                # KWOK renews every 5 s (a quarter of its lease duration, below),
                # so a busy machine has four renewals to spare.
                "--node-monitor-grace-period=20s",
                "--node-monitor-period=2s",
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
        start_pod_logs(bin_dir, kubeconfig, workdir, server, procs)
        save()
        # Port-forwards to port 6006 (a TensorBoard's) get hack/kwok/tensorboard_stub.py.
        forward_config = workdir / "kwok-portforward.yaml"
        forward_config.write_text(
            (HACK / "kwok" / "portforward.yaml")
            .read_text()
            .replace("@PYTHON@", sys.executable)
            .replace("@STUB@", str(HACK / "kwok" / "tensorboard_stub.py"))
        )
        procs["kwok"] = _start(
            bin_dir,
            "kwok",
            [
                f"--kubeconfig={workdir / 'kwok.kubeconfig'}",
                f"--config={HACK / 'kwok' / 'stages.yaml'}",
                # Container logs: each pod's Logs object (start_pod_logs), served on
                # its kubelet endpoint over TLS with the API server's certificate
                # (127.0.0.1 is in it), which every node reports as its InternalIP
                # and daemonEndpoints port.
                "--enable-crds=Logs",
                f"--config={forward_config}",
                "--node-ip=127.0.0.1",
                f"--node-port={ports['kwok']}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--node-lease-duration-seconds=20",
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
        log(
            f"cluster {name!r} ready in {time.monotonic() - started:.1f}s: "
            f"{server}, kubeconfig {kubeconfig}"
        )
        start_addons(name, addons)
    except BaseException:
        with contextlib.suppress(OSError, ValueError):  # keep what start_addons recorded
            recorded = json.loads((workdir / "cluster.json").read_text())["pids"]
            for tool, pid in recorded.items():
                procs.setdefault(tool, pid)
        save()
        down(name, quiet=True)
        raise
    return kubeconfig


# ----------------------------------------------------------------------- add-ons: processes


# The control plane's processes; add-ons come and go beside them.
CORE_PROCS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "pod-logs",
    "kwok",
)

VOLCANO_CONF = """\
# The local cluster's Volcano scheduler (written by hack/cluster.py).
# enqueue admits a PodGroup (phase Pending -> Inqueue), allocate places its
# pods and binds them only once minMember of them fit, backfill places pods
# that request no resources. No preemption or reclaim: tests stay predictable.
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority     # groups, then pods, in the order of their PriorityClass
  - name: gang         # minMember pods of a group bound together, or none
  - name: conformance  # critical system pods are never evicted
- plugins:
  - name: drf          # dominant-resource fairness between groups
  - name: predicates   # kube-scheduler's node filters: resources, affinity, taints
  - name: proportion   # the queues' shares, by weight
  - name: nodeorder    # kube-scheduler's node scores
"""


@dataclass
class _Launch:
    tool: str
    args: list[str]
    health: str  # an http(s) URL answering 200 once the process serves
    env: dict[str, str] = field(default_factory=dict)
    wrap: tuple[str, ...] = ()  # a command that execs the tool (see _start)


KUEUE_NAMESPACE = "kueue-system"
KUEUE_CERT_SECRET = "kueue-webhook-server-cert"  # Kueue's default name for it
VISIBILITY_PORT = 8082  # Kueue's visibility server's, fixed (pkg/visibility/server.go)
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
VISIBILITY_SERVICE = "kueue-visibility-server"


def _visibility_address() -> str | None:
    """The machine's address the API server reaches Kueue's visibility server at,
    or None when it cannot serve here: VISIBILITY_PORT is taken (another
    cluster's Kueue has it), the machine has no address but loopback, which
    an Endpoints may not name, or no mount namespace can be made."""
    try:
        with socket.socket() as s:
            # As Go's listeners (Kueue's among them) do on Linux, so a connection
            # of a cluster before, left in TIME_WAIT on the port, is no "taken".
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("0.0.0.0", VISIBILITY_PORT))
    except OSError:
        return _off(f"port {VISIBILITY_PORT} is taken")
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


def _in_cluster(
    bin_dir: Path, workdir: Path, server: str
) -> tuple[dict[str, str], tuple[str, ...]]:
    """What the Kueue manager needs for its visibility server: that server
    (k8s.io/apiserver's delegated authentication and authorization) reads only
    client-go's in-cluster configuration, never ``--kubeconfig``: the API
    server's address from ``KUBERNETES_SERVICE_HOST`` / ``_PORT`` and a token
    and CA from SERVICE_ACCOUNT_DIR. The token is the ServiceAccount
    VISIBILITY_ACCOUNT's (cluster-admin: this is a test cluster), and the files
    reach the manager alone, in a mount namespace of its own where a tmpfs
    covers /run (nothing else of this machine sees them). Returns the
    environment and the wrapper command (see ``_start``)."""
    kubeconfig = workdir / "kubeconfig"
    account = {
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


def _serve_visibility(
    bin_dir: Path, kubeconfig: Path, address: str, workdir: Path, procs: dict[str, int]
) -> None:
    """Register Kueue's visibility API with the API server, as Kueue's own
    manifests do (an APIService, behind the Service
    ``kueue-visibility-server``), the Service here without a selector and its
    Endpoints naming this machine's ``address`` (no pods, no kube-proxy: the
    API server routes to endpoints). The server's certificate is self-signed,
    so the APIService skips verifying it, as Kueue's manifests do."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": VISIBILITY_SERVICE, "namespace": KUEUE_NAMESPACE},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": VISIBILITY_PORT}]},
    }
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": VISIBILITY_SERVICE, "namespace": KUEUE_NAMESPACE},
        "subsets": [
            {
                "addresses": [{"ip": address}],
                "ports": [{"name": "https", "port": VISIBILITY_PORT}],
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
        for version, priority in (("v1beta1", 100),)  # the one version v0.12 serves
    ]
    body = {"apiVersion": "v1", "kind": "List", "items": [service, endpoints, *services]}
    kubectl(bin_dir, kubeconfig, "apply", "--server-side", "-f", "-", input_=json.dumps(body))

    def available() -> bool:
        proc = kubectl(
            bin_dir,
            kubeconfig,
            "get",
            "--raw",
            f"/apis/{VISIBILITY_GROUP}/v1beta1",
            check=False,
        )
        return proc.returncode == 0

    _wait("Kueue's visibility API", available, 60, procs, workdir)


def _kueue_config(workdir: Path, ports: dict[str, int], pki: Path, visibility: bool) -> Path:
    """The Kueue manager's configuration file (config.kueue.x-k8s.io/v1beta1),
    and the serving certificate its webhook server needs to start.

    Kueue's webhooks are not registered with the API server: whoever uses it
    here creates Workloads itself, so its controllers and scheduler are what
    matter. Its internal certificate management stays on, only because with
    it off the manager insists on a metrics certificate under
    /etc/kueue/metrics/certs: it then fills in the Secret ``_prepare``
    creates, and finds no webhook configuration to inject the CA into (an
    error in its log, and no harm). The certificate it writes in that Secret
    would reach the manager only as a mounted volume, so the files it waits
    for in ``certDir`` are ours, signed by the cluster's CA. No job
    integrations (``frameworks: []``): it manages no batch Jobs or pods of its
    own accord, and needs no other operator's CRDs.
    """
    certs = workdir / "kueue" / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    if not (pki / "kueue-webhook.crt").exists():
        issue_cert(
            pki, "kueue-webhook", "/CN=kueue-webhook", "subjectAltName=IP:127.0.0.1,DNS:localhost"
        )
    shutil.copyfile(pki / "kueue-webhook.crt", certs / "tls.crt")
    shutil.copyfile(pki / "kueue-webhook.key", certs / "tls.key")
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "leaderElection": {"leaderElect": False},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['kueue-health']}"},
        "metrics": {"bindAddress": "0"},  # off
        "webhook": {"host": "127.0.0.1", "port": ports["kueue-webhook"], "certDir": str(certs)},
        "internalCertManagement": {"enable": True},
        "clientConnection": {"qps": 50, "burst": 100},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": []},
        # The on-demand visibility API (pending workloads' positions) is an
        # aggregated API server inside the manager, on its fixed port
        # VISIBILITY_PORT of every address: on only when that port is free
        # (one cluster of the machine has it) and the machine has an address
        # an Endpoints may name (not loopback); see _serve_visibility.
        "featureGates": {"VisibilityOnDemand": visibility},
    }
    conf = workdir / "kueue" / "config.yaml"
    conf.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
    return conf


def _launches(g: Addon, workdir: Path, state: dict[str, Any]) -> list[_Launch]:
    """The processes of ``g``, their configuration files written in ``workdir``,
    each with its own client certificate (``system:masters``, as KWOK's)."""
    pki = workdir / "pki"
    kubeconfigs = {}
    for tool, _ in g.binaries:
        if not (pki / f"{tool}.crt").exists():
            issue_cert(pki, tool, f"/O=system:masters/CN={tool}")
        kubeconfigs[tool] = workdir / f"{tool}.kubeconfig"
        write_kubeconfig(kubeconfigs[tool], state["server"], pki, tool)
    ports = state["ports"]
    if g.name == "volcano":
        ports["volcano-healthz"], ports["volcano-metrics"] = free_port(), free_port()
        # A folder of its own: Volcano reloads the file on any change in its
        # folder, and the state folder's logs change all the time.
        conf = workdir / "volcano" / "scheduler.conf"
        conf.parent.mkdir(exist_ok=True)
        conf.write_text(VOLCANO_CONF)
        return [
            _Launch(
                "volcano-scheduler",
                [
                    f"--kubeconfig={kubeconfigs['volcano-scheduler']}",
                    f"--scheduler-conf={conf}",
                    f"--scheduler-name={g.scheduler_name}",
                    "--leader-elect=false",
                    "--enable-healthz=true",
                    f"--healthz-address=127.0.0.1:{ports['volcano-healthz']}",
                    f"--listen-address=127.0.0.1:{ports['volcano-metrics']}",
                    f"--cache-dump-dir={conf.parent}",
                    "--v=2",
                ],
                f"http://127.0.0.1:{ports['volcano-healthz']}/healthz",
            )
        ]
    if g.name == "coscheduling":
        ports["scheduler-plugins"] = free_port()
        ports["scheduler-plugins-controller-probe"] = free_port()
        ports["scheduler-plugins-controller-metrics"] = free_port()
        if not (pki / "scheduler-plugins-serving.crt").exists():
            issue_cert(
                pki,
                "scheduler-plugins-serving",
                "/CN=scheduler-plugins-scheduler",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
            )
        kubeconfig = str(kubeconfigs["scheduler-plugins-scheduler"])
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "clientConnection": {"kubeconfig": kubeconfig},
            "profiles": [
                {
                    "schedulerName": g.scheduler_name,
                    "plugins": {
                        # Coscheduling at every extension point it implements
                        # (PreFilter, PostFilter, Permit, Reserve, ...), and
                        # as the queue's sort, which keeps a group's pods together.
                        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                        "queueSort": {
                            "enabled": [{"name": "Coscheduling"}],
                            "disabled": [{"name": "*"}],
                        },
                    },
                    # A group's pods wait at Permit at most this long for the rest.
                    "pluginConfig": [
                        {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}
                    ],
                }
            ],
        }
        conf = workdir / "scheduler-plugins-scheduler.yaml"
        conf.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
        return [
            _Launch(
                "scheduler-plugins-scheduler",
                [
                    f"--config={conf}",
                    f"--authentication-kubeconfig={kubeconfig}",
                    f"--authorization-kubeconfig={kubeconfig}",
                    # The API server has no front proxy: no request-header CA to look up.
                    "--authentication-skip-lookup=true",
                    "--bind-address=127.0.0.1",
                    f"--secure-port={ports['scheduler-plugins']}",
                    f"--tls-cert-file={pki / 'scheduler-plugins-serving.crt'}",
                    f"--tls-private-key-file={pki / 'scheduler-plugins-serving.key'}",
                    # Coscheduling rejects a whole group in PostFilter when one of
                    # its pods does not fit ("optimistic rejection"), and the
                    # rejected pods then wait for a Pod add or a PodGroup event
                    # only: a node freed by another job's ending does not requeue
                    # them (Coscheduling registers no such event). Without this
                    # they wait for the queue's flush of unschedulable pods, 5
                    # minutes by default, after the cluster has room (seen in CI:
                    # a waiting job not started 90 s after the GPUs were free).
                    # docs/scheduling.md recommends the same to platform teams.
                    f"--pod-max-in-unschedulable-pods-duration={COSCHEDULING_REQUEUE}",
                    "--v=2",
                ],
                # readyz: served once the informers have synced.
                f"https://127.0.0.1:{ports['scheduler-plugins']}/readyz",
            ),
            _Launch(
                "scheduler-plugins-controller",
                [
                    f"--probeAddr=127.0.0.1:{ports['scheduler-plugins-controller-probe']}",
                    f"--metricsAddr=127.0.0.1:{ports['scheduler-plugins-controller-metrics']}",
                    "--qps=50",
                    "--burst=100",
                ],
                f"http://127.0.0.1:{ports['scheduler-plugins-controller-probe']}/healthz",
            ),
        ]
    if g.name == "kueue":
        ports["kueue-health"], ports["kueue-webhook"] = free_port(), free_port()
        address = _visibility_address()
        state["kueue"]["visibility"] = address or ""
        if not address:
            state["kueue"]["visibilityOff"] = VISIBILITY_OFF
        conf = _kueue_config(workdir, ports, pki, bool(address))
        env: dict[str, str] = {}
        wrap: tuple[str, ...] = ()
        if address:
            env, wrap = _in_cluster(Path(state["bin_dir"]), workdir, state["server"])
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
    raise AssertionError(g.name)


def _healthy(url: str, pki: Path) -> bool:
    if url.startswith("https:"):
        return _https_get(url, pki)[0] == 200
    with urllib.request.urlopen(url, timeout=2) as resp:
        return bool(resp.status == 200)


def _install_crds(g: Addon, folder: Path, bin_dir: Path, kubeconfig: Path) -> None:
    crds = str(folder / "crds")
    kubectl(bin_dir, kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", crds)
    proc = kubectl(
        bin_dir,
        kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "-f",
        crds,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"cluster: the CRDs of {g.title} are not Established:\n{proc.stderr}")


def _default_queue(bin_dir: Path, kubeconfig: Path) -> bool:
    """Volcano's Queue ``default``, where PodGroups naming no queue go. The
    scheduler would create it too, on its first start; this way it is there
    before any pod is."""
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1, "reclaimable": True},
    }
    proc = kubectl(bin_dir, kubeconfig, "create", "-f", "-", input_=json.dumps(queue), check=False)
    if proc.returncode == 0 or "AlreadyExists" in proc.stderr:
        return True
    raise ValueError(proc.stderr)  # retried by _wait: discovery may lag the CRD


def _stop(pids: Iterable[int], workdir: Path) -> None:
    """SIGTERM each process group (of ours), SIGKILL what is left after 10 s."""
    order = [p for p in pids if _alive(p) and _ours(p, workdir)]
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


def _running_state(name: str) -> dict[str, Any]:
    workdir = state_dir(name)
    state_file = workdir / "cluster.json"
    state: dict[str, Any] = (
        json.loads(state_file.read_text()) if state_file.exists() else {"pids": {}}
    )
    pids = state["pids"]
    if not all(t in pids and _alive(pids[t]) and _ours(pids[t], workdir) for t in CORE_PROCS):
        raise SystemExit(
            f"cluster: cluster {name!r} is not running: "
            f"`python3 hack/cluster.py up --name {name}` first"
        )
    return state


def gang(name: str, gangs: Iterable[Gang]) -> None:
    """Start gang schedulers in the running cluster ``name``, beside its
    kube-scheduler (see ``start_addons``); for Volcano, the Queue ``default``
    is created too. Each is recorded under ``gang`` in ``cluster.json``."""
    start_addons(name, gangs)


def kueue(name: str) -> None:
    """Start the Kueue manager in the running cluster ``name`` (see
    ``start_addons``), in its namespace ``kueue-system``, created first.
    It is recorded under ``kueue`` in ``cluster.json``."""
    start_addons(name, [KUEUE])


def _record(state: dict[str, Any], g: Addon) -> tuple[dict[str, Any], str]:
    """Where ``cluster.json`` records ``g``: gang schedulers under ``gang``."""
    if isinstance(g, Gang):
        return state.setdefault("gang", {}), g.name
    return state, g.name


def _prepare(g: Addon, bin_dir: Path, kubeconfig: Path, workdir: Path) -> None:
    """What must exist in the cluster before ``g`` starts, beside its CRDs."""
    if g.name == "volcano":
        _wait(
            "Volcano's Queue default",
            lambda: _default_queue(bin_dir, kubeconfig),
            30,
            {},
            workdir,
        )
    if g.name == "kueue":
        # Its namespace, and there the (empty) Secret its certificate
        # management fills in: it never creates that Secret itself.
        objects = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": KUEUE_CERT_SECRET, "namespace": KUEUE_NAMESPACE},
            },
        ]
        for obj in objects:  # the namespace first: a List is not applied in order
            proc = kubectl(
                bin_dir, kubeconfig, "create", "-f", "-", input_=json.dumps(obj), check=False
            )
            if proc.returncode != 0 and "AlreadyExists" not in proc.stderr:
                raise SystemExit(f"cluster: creating {obj['kind']} for Kueue:\n{proc.stderr}")


def start_addons(name: str, addons: Iterable[Addon]) -> None:
    """Start ``addons`` in the running cluster ``name``; those already running
    are left alone. Returns once each serves its health check, with its CRDs
    Established. Their pids join ``cluster.json``, so ``down`` stops them;
    each logs to ``<tool>.log`` in the cluster's state folder."""
    addons = list(addons)
    if not addons:
        return
    workdir = state_dir(name)

    def running(g: Addon, pids: dict[str, int]) -> bool:
        return all(t in pids and _alive(pids[t]) and _ours(pids[t], workdir) for t, _ in g.binaries)

    pids = _running_state(name)["pids"]
    # The binaries of every one to start, before starting any.
    folders = {g.name: ensure_addon_binaries(g) for g in addons if not running(g, pids)}
    with _locked(workdir / ".addons.lock", "starting add-ons"):
        state = _running_state(name)
        pids: dict[str, int] = state["pids"]
        bin_dir, kubeconfig = Path(state["bin_dir"]), workdir / "kubeconfig"

        def save() -> None:
            (workdir / "cluster.json").write_text(json.dumps(state, indent=2) + "\n")

        for g in addons:
            tools = [tool for tool, _ in g.binaries]
            if running(g, pids):
                log(f"{g.title} already running in cluster {name!r}")
                continue
            _stop([pids.pop(t) for t in tools if t in pids], workdir)  # what is left of a crash
            started = time.monotonic()
            folder = folders.get(g.name) or ensure_addon_binaries(g)  # or it died meanwhile
            _install_crds(g, folder, bin_dir, kubeconfig)
            _prepare(g, bin_dir, kubeconfig, workdir)
            holder, key = _record(state, g)
            info: dict[str, Any] = {"version": g.version, "bin_dir": str(folder), "tools": tools}
            if isinstance(g, Gang):
                info["schedulerName"] = g.scheduler_name
                what = f"schedulerName {g.scheduler_name}"
            else:
                info["namespace"] = KUEUE_NAMESPACE
                what = f"namespace {KUEUE_NAMESPACE}"
            holder[key] = info
            try:
                for launch in _launches(g, workdir, state):
                    # $KUBECONFIG too: the scheduler-plugins controller reads only
                    # that, and a plugin of Volcano's builds a client from it (else
                    # from ~/.kube/config, which may name some other cluster).
                    env = {
                        **os.environ,
                        "KUBECONFIG": str(workdir / f"{launch.tool}.kubeconfig"),
                        **launch.env,
                    }
                    pids[launch.tool] = _start(
                        folder, launch.tool, launch.args, workdir, env=env, wrap=launch.wrap
                    )
                    save()
                    _wait(
                        f"{launch.tool} to serve {launch.health}",
                        lambda url=launch.health: _healthy(url, workdir / "pki"),
                        60,
                        {launch.tool: pids[launch.tool]},
                        workdir,
                    )
            except BaseException:
                _stop([pids.pop(t) for t in tools if t in pids], workdir)
                holder.pop(key, None)
                save()
                raise
            if g.name == "kueue" and info.get("visibility"):
                manager = {t: pids[t] for t in tools}
                try:
                    _serve_visibility(bin_dir, kubeconfig, info["visibility"], workdir, manager)
                    what += f"; visibility API at {info['visibility']}:{VISIBILITY_PORT}"
                except SystemExit as exc:  # Kueue itself serves: only this API is missing
                    if not all(_alive(p) for p in manager.values()):
                        raise
                    log(f"Kueue's visibility API is not served: {exc}")
                    info["visibility"], info["visibilityOff"] = "", f"not served: {exc}"
                    save()
            log(
                f"{g.title} {g.version} ready in {time.monotonic() - started:.1f}s "
                f"({what}; logs {workdir}/{tools[0]}.log)"
            )


def down(name: str, quiet: bool = False) -> None:
    workdir = state_dir(name)
    state_file = workdir / "cluster.json"
    if not state_file.exists():
        if not quiet:
            log(f"cluster {name!r} is not running")
        shutil.rmtree(workdir, ignore_errors=True)
        return
    pids = json.loads(state_file.read_text()).get("pids", {})
    # Reverse start order: add-ons, kwok and the controllers first, etcd last.
    _stop(reversed(list(pids.values())), workdir)
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
        print(f"{tool:28} pid {pid:>7}  {'running' if alive else 'DOWN'}")
    print(f"server      {state['server']}\nkubeconfig  {workdir / 'kubeconfig'}")
    for g, info in state.get("gang", {}).items():
        print(
            f"gang        {g} {info['version']}: schedulerName {info['schedulerName']}, "
            f"logs {', '.join(t + '.log' for t in info['tools'])}"
        )
    if "kueue" in state:
        info = state["kueue"]
        print(
            f"kueue       {info['version']}: namespace {info['namespace']}, "
            f"logs {', '.join(t + '.log' for t in info['tools'])}"
        )
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="gang schedulers: "
        + ", ".join(f"{g.name} ({g.title})" for g in GANGS.values())
        + f"; and Kueue ({KUEUE.module} {KUEUE.version}, `kueue`, `up --kueue`)",
    )
    parser.add_argument(
        "command",
        choices=["up", "down", "status", "kubeconfig", "binaries", "gang", "kueue", "tool"],
    )
    parser.add_argument(
        "schedulers",
        nargs="*",
        help="gang: the gang schedulers to start (or all); "
        f"tool: the tools whose folders to print ({', '.join(TOOLS)})",
    )
    parser.add_argument("--name", default=os.environ.get("T9K_CLUSTER_NAME", "t9k"))
    parser.add_argument(
        "--gang",
        help="up: gang schedulers to start as well, comma-separated (default none); "
        "binaries: those to build as well (default all)",
    )
    parser.add_argument(
        "--kueue",
        action=argparse.BooleanOptionalAction,
        help="up: start the Kueue manager as well (default no); "
        "binaries: build it as well (default yes)",
    )
    parser.add_argument(
        "--apiserver-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="up: a flag added to kube-apiserver's, e.g. "
        "--apiserver-flag=--max-requests-inflight=5 (repeatable; a cluster running with "
        "other ones is recreated)",
    )
    parser.add_argument(
        "--tools",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="binaries: build Helm, kustomize and the monitoring CRDs as well (default yes)",
    )
    args = parser.parse_intermixed_args()
    if args.schedulers and args.command not in ("gang", "tool"):
        parser.error(f"{args.command} takes no schedulers (did you mean --gang?)")
    try:
        if args.command == "up":
            print(
                up(
                    args.name,
                    parse_gangs(args.gang or "none"),
                    with_kueue=bool(args.kueue),
                    apiserver_flags=args.apiserver_flag,
                )
            )
        elif args.command == "gang":
            gang(args.name, parse_gangs(args.schedulers or "all"))
        elif args.command == "kueue":
            kueue(args.name)
        elif args.command == "tool":
            unknown = [t for t in args.schedulers if t not in TOOLS]
            if unknown or not args.schedulers:
                parser.error(f"tool: name one or more of {', '.join(TOOLS)}")
            for t in args.schedulers:  # one folder a line, in the order asked
                print(ensure_addon_binaries(TOOLS[t]), flush=True)
        elif args.command == "down":
            down(args.name)
        elif args.command == "status":
            return status(args.name)
        elif args.command == "kubeconfig":
            print(state_dir(args.name) / "kubeconfig")
        elif args.command == "binaries":
            # stdout is the control plane's folder alone: `$(... binaries)/kubectl`.
            print(ensure_binaries(), flush=True)
            addons: list[Addon] = [*parse_gangs(args.gang or "all")]
            if args.kueue is not False:
                addons.append(KUEUE)
            if args.tools:
                addons.extend(TOOLS.values())
            for g in addons:
                log(f"{g.title}: {ensure_addon_binaries(g)}")
            # Once every binary is built: a part built now (the demo's control
            # plane) leaves the module sources to the builds of the rest.
            if len(addons) == len(GANGS) + 1 + len(TOOLS):
                drop_go_caches()
    except MissingBinaries as exc:
        print(exc, file=sys.stderr)
        return EXIT_MISSING_BINARIES
    return 0


if __name__ == "__main__":
    sys.exit(main())
