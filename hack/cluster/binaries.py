"""The control plane's binaries: etcd, Kubernetes' (kube-apiserver,
kube-controller-manager, kube-scheduler, kubectl) and KWOK, in the cache
folder of their versions; downloaded where the network allows, else built
from the Go module proxy (hack/third_party/k8s and hack/third_party/etcd are
small wrapper modules).
KWOK is always built from its module's source, with ``KWOK_PATCHES``."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from .cache import _obtain
from .common import ALL_TOOLS, K8S_TOOLS, THIRD_PARTY, log, versions
from .gotool import BuildError, _go, _go_env, _module_source, _need_go


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
        f"Kubernetes {k8s} (hack/third_party/k8s: kube-apiserver, kube-controller-manager, "
        "kube-scheduler, kubectl)",
        ["go", "build", "-trimpath", "-ldflags", ldflags, "-o", str(dest / "k8s"), "."],
        THIRD_PARTY / "k8s",
        env,
        logfile,
    )
    for tool in K8S_TOOLS:
        (dest / tool).symlink_to("k8s")
    log(f"building etcd {v['ETCD_VERSION']}")
    _go(
        f"etcd {v['ETCD_VERSION']} (hack/third_party/etcd)",
        ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(dest / "etcd"), "."],
        THIRD_PARTY / "etcd",
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
            f"kwok {version} (sigs.k8s.io/kwok/cmd/kwok, patched: "
            "hack/cluster/binaries.py KWOK_PATCHES)",
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
