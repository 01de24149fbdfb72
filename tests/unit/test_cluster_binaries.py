"""How hack/cluster obtains the local cluster's binaries: into a temporary
folder renamed into place only when complete, under a lock, with a build
failure that names the binary. A stand-in ``go`` on PATH plays the toolchain
(it writes small executables where ``go build -o``/``go install`` would, and
answers ``go mod download -json`` with a folder of stand-in module sources),
so these run in seconds with no network."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hack.bench.job_start.kubeflow import TRAINING_OPERATOR  # the job-start bench's
from hack.cluster import ADDONS, GANGS, KWOK_BUILD, versions
from hack.cluster import TOOLS as INSTALL_TOOLS  # Helm, kustomize, prometheus-operator's CRDs

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = [sys.executable, "-m", "hack.cluster"]  # run from ROOT
TOOLS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok")

FAKE_GO = """#!/bin/bash
# Stand-in for the Go toolchain: record the call, maybe wait or fail, then
# write an executable where go would put the binary.
echo "$PWD $*" >> "$FAKE_GO_LOG"
if [ "$1 $2 $3" = "mod download -json" ]; then
  printf '{"Path": "%s", "Dir": "%s/%s"}\\n' "${4%@*}" "$FAKE_GO_SRC" "$4"
  exit 0
fi
sleep "${FAKE_GO_SLEEP:-0}"
# What a build leaves in Go's caches: the module cache's folders read-only.
mkdir -p "$GOCACHE/0a" "$GOMODCACHE/example.com/m@v1.0.0/pkg"
echo built > "$GOCACHE/0a/0a1b-d"
echo 'package pkg' > "$GOMODCACHE/example.com/m@v1.0.0/pkg/pkg.go"
chmod -R a-w "$GOMODCACHE/example.com"
if [ -n "${FAKE_GO_FAIL:-}" ] && [ "$(basename "$PWD")" = "$FAKE_GO_FAIL" ]; then
  echo "main.go:1: boom in $FAKE_GO_FAIL" >&2
  exit 1
fi
out=""
prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
[ "$1" = install ] && out="$GOBIN/kwok"
# What kwok was built from (KWOK_PATCHES applied), for the tests to read.
kwok_src=pkg/kwok/controllers/pod_controller.go
if [ -f "$kwok_src" ]; then cp "$kwok_src" "$FAKE_GO_LOG.kwok"; fi
printf '#!/bin/sh\\necho fake\\n' > "$out"
chmod +x "$out"
"""


# ADDONS: the gang schedulers (GANGS) and Kueue.
KWOK = f"sigs.k8s.io/kwok@{versions()['KWOK_VERSION']}"
# The line of kwok's source that KWOK_PATCHES rewrites, as the module has it.
KWOK_DELETE = (
    "\terr := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteOpt)\n"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    src = tmp_path / "modsrc"  # what the module cache would hold: the add-ons' CRDs
    for g in [*ADDONS.values(), *INSTALL_TOOLS.values()]:
        for path, _ in g.crds:
            crd = src / f"{g.module}@{g.version}" / path
            crd.parent.mkdir(parents=True, exist_ok=True)
            crd.write_text(f"# {g.name} {path}\n")
    kwok = src / KWOK / "pkg" / "kwok" / "controllers" / "pod_controller.go"
    kwok.parent.mkdir(parents=True)
    kwok.write_text(f"func (c *PodController) deleteResource() error {{\n{KWOK_DELETE}}}\n")
    for path in (src / KWOK, *(src / KWOK).rglob("*")):  # read-only, as in the module cache
        path.chmod(path.stat().st_mode & ~0o222)
    return {
        **{k: v for k, v in os.environ.items() if k not in ("T9K_CLUSTER_BIN_DIR", "T9K_NO_BUILD")},
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "T9K_CACHE_DIR": str(tmp_path / "cache"),
        "T9K_NO_DOWNLOAD": "1",
        "FAKE_GO_LOG": str(tmp_path / "go.log"),
        "FAKE_GO_SRC": str(src),
    }


def binaries(
    env: dict[str, str],
    *args: str,
    gang: str = "none",
    kueue: bool = False,
    tools: bool = False,
    **extra: str,
) -> subprocess.CompletedProcess[str]:
    """``python3 -m hack.cluster binaries``; the control plane's alone unless
    ``gang``, ``kueue`` or ``tools``."""
    return subprocess.run(
        [
            *CLUSTER,
            "binaries",
            "--gang",
            gang,
            "--kueue" if kueue else "--no-kueue",
            "--tools" if tools else "--no-tools",
            *args,
        ],
        cwd=ROOT,
        env={**env, **extra},
        capture_output=True,
        text=True,
        timeout=60,
    )


def go_calls(env: dict[str, str]) -> list[str]:
    path = Path(env["FAKE_GO_LOG"])
    return path.read_text().splitlines() if path.exists() else []


def test_builds_into_place_complete(env: dict[str, str]) -> None:
    result = binaries(env)
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip())
    assert all(os.access(folder / t, os.X_OK) for t in TOOLS)
    assert (folder / ".complete").exists()
    assert [
        p.name for p in folder.parent.iterdir() if p.name.startswith(".") and "tmp" in p.name
    ] == []
    assert len(go_calls(env)) == 4  # k8s, etcd, kwok's source, kwok
    again = binaries(env)
    assert again.stdout == result.stdout and len(go_calls(env)) == 4  # cached: no build


def test_kwok_is_built_deleting_pods_under_a_uid_precondition(env: dict[str, str]) -> None:
    """As a kubelet deletes the pod it has finished with: never a newer pod of the same name."""
    result = binaries(env)
    assert result.returncode == 0, result.stderr
    built = Path(env["FAKE_GO_LOG"] + ".kwok").read_text()
    assert KWOK_DELETE not in built
    assert "opt.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))" in built
    assert "Delete(ctx, pod.Name, opt)" in built
    assert Path(result.stdout.strip()).name.endswith(f"-{KWOK_BUILD}")


def test_a_kwok_source_without_the_patched_line_fails_the_build_by_name(
    env: dict[str, str],
) -> None:
    source = Path(env["FAKE_GO_SRC"]) / KWOK / "pkg" / "kwok" / "controllers" / "pod_controller.go"
    source.parent.chmod(0o755)
    source.chmod(0o644)
    source.write_text("package controllers\n")
    result = binaries(env)
    assert result.returncode != 0
    assert "pkg/kwok/controllers/pod_controller.go no longer has" in result.stderr


def test_a_half_built_folder_is_rebuilt_not_used(env: dict[str, str]) -> None:
    first = binaries(env)
    folder = Path(first.stdout.strip())
    # What an interrupted build of the old code left: k8s, no etcd, kwok or mark.
    for name in (".complete", "etcd", "kwok"):
        (folder / name).unlink()
    result = binaries(env)
    assert result.returncode == 0, result.stderr
    assert "incomplete" in result.stderr
    assert all(os.access(folder / t, os.X_OK) for t in TOOLS) and (folder / ".complete").exists()
    assert len(go_calls(env)) == 8


def test_a_build_failure_names_the_binary_and_why(env: dict[str, str]) -> None:
    result = binaries(env, FAKE_GO_FAIL="etcd")
    assert result.returncode != 0
    assert "building etcd v3.6.16 (hack/third_party/etcd) failed (go exited 1)" in result.stderr
    assert "main.go:1: boom in etcd" in result.stderr
    cache_bin = Path(env["T9K_CACHE_DIR"]) / "bin"
    left = [p.name for p in cache_bin.iterdir() if not p.name.endswith((".lock", ".build.log"))]
    assert left == []


def test_an_interrupted_build_leaves_nothing_that_is_used(env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [*CLUSTER, "binaries", "--gang", "none", "--no-kueue"],
        cwd=ROOT,
        env={**env, "FAKE_GO_SLEEP": "30"},
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while not go_calls(env) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, 9)
    proc.wait()
    cache_bin = Path(env["T9K_CACHE_DIR"]) / "bin"
    assert not any(p.name.startswith("k8s-") and p.is_dir() for p in cache_bin.iterdir())
    result = binaries(env)
    assert result.returncode == 0, result.stderr
    assert not [p for p in cache_bin.iterdir() if ".tmp-" in p.name]


def test_concurrent_runs_build_once(env: dict[str, str]) -> None:
    procs = [
        subprocess.Popen(
            [*CLUSTER, "binaries", "--gang", "none", "--no-kueue", "--no-tools"],
            cwd=ROOT,
            env={**env, "FAKE_GO_SLEEP": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert outs[0][0] == outs[1][0]
    assert len(go_calls(env)) == 4  # one build, not two into the same folder
    assert any("waiting for it" in err for _, err in outs)


def test_no_build_fails_at_once_with_the_remedy(env: dict[str, str]) -> None:
    result = binaries(env, T9K_NO_BUILD="1")
    assert result.returncode != 0
    assert "run `make binaries`" in result.stderr
    assert go_calls(env) == []


def test_gang_schedulers_build_into_their_own_folders_with_their_crds(
    env: dict[str, str],
) -> None:
    result = binaries(env, gang="all")  # what `make binaries` runs
    assert result.returncode == 0, result.stderr
    core = Path(result.stdout.strip())  # stdout stays the control plane's folder alone
    assert all(os.access(core / t, os.X_OK) for t in TOOLS)
    cache_bin = core.parent
    for g in GANGS.values():
        folder = cache_bin / g.tag
        assert folder.name.startswith(f"{g.wrapper}-{g.version}-")
        assert str(folder) in result.stderr
        assert (folder / ".complete").exists()
        assert all(os.access(folder / b, os.X_OK) for b, _ in g.binaries)
        for path, name in g.crds:
            assert (folder / "crds" / name).read_text() == f"# {g.name} {path}\n"
    assert not [p for p in cache_bin.iterdir() if ".tmp-" in p.name]
    calls = go_calls(env)
    builds = [c for c in calls if " build " in c]
    assert len(builds) == 3 + 1 + 2  # k8s, etcd, kwok; volcano; scheduler-plugins' two
    assert any(c.startswith(str(ROOT / "hack" / "third_party" / "volcano") + " ") for c in builds)
    again = binaries(env, gang="all")
    assert again.returncode == 0 and len(go_calls(env)) == len(calls)  # cached


def test_missing_gang_binaries_with_no_build_exit_3_with_the_remedy(
    env: dict[str, str],
) -> None:
    assert binaries(env).returncode == 0  # the control plane's alone
    calls = len(go_calls(env))
    result = binaries(env, gang="volcano", T9K_NO_BUILD="1")
    assert result.returncode == 3, result.stderr
    assert "the binaries of the Volcano scheduler are not in" in result.stderr
    assert "run `make binaries`" in result.stderr
    assert len(go_calls(env)) == calls


def test_a_gang_build_failure_names_the_binary_and_leaves_no_folder(
    env: dict[str, str],
) -> None:
    result = binaries(env, gang="coscheduling", FAKE_GO_FAIL="scheduler-plugins")
    assert result.returncode != 0
    assert (
        "building scheduler-plugins-scheduler v0.34.7 (hack/third_party/scheduler-plugins: "
        "sigs.k8s.io/scheduler-plugins/cmd/scheduler) failed (go exited 1)"
    ) in result.stderr
    assert "main.go:1: boom in scheduler-plugins" in result.stderr
    cache_bin = Path(env["T9K_CACHE_DIR"]) / "bin"
    assert not [
        p
        for p in cache_bin.iterdir()
        if p.name.startswith(("scheduler-plugins", "."))
        and not p.name.endswith((".lock", ".build.log"))
    ]


def test_unknown_gang_scheduler_is_named() -> None:
    result = subprocess.run(
        [*CLUSTER, "gang", "--name", "no-such", "slurm"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "unknown gang scheduler 'slurm': choose from volcano, coscheduling" in result.stderr


def test_kueue_builds_into_its_own_folder_with_all_its_crds_by_default(
    env: dict[str, str],
) -> None:
    result = subprocess.run(  # no --kueue: what `make binaries` runs
        [*CLUSTER, "binaries", "--gang", "none", "--no-tools"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    kueue = ADDONS["kueue"]
    folder = Path(result.stdout.strip()).parent / kueue.tag
    assert folder.name.startswith(f"kueue-{kueue.version}-")
    assert str(folder) in result.stderr
    assert (folder / ".complete").exists() and os.access(folder / "kueue-manager", os.X_OK)
    assert sorted(p.name for p in (folder / "crds").iterdir()) == [
        f"kueue.x-k8s.io_{kind}.yaml"
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
    ]
    builds = [c for c in go_calls(env) if " build " in c]
    assert len(builds) == 3 + 1  # k8s, etcd, kwok; kueue
    assert builds[-1].startswith(str(ROOT / "hack" / "third_party" / "kueue") + " ")
    assert f"sigs.k8s.io/kueue/pkg/version.GitVersion={kueue.version}" in builds[-1]
    assert binaries(env, T9K_NO_BUILD="1").returncode == 0  # --no-kueue: not looked at
    calls = len(go_calls(env))
    assert binaries(env, kueue=True, T9K_NO_BUILD="1").returncode == 0  # cached
    assert len(go_calls(env)) == calls


def test_missing_kueue_binaries_with_no_build_exit_3_with_the_remedy(
    env: dict[str, str],
) -> None:
    assert binaries(env).returncode == 0
    result = binaries(env, kueue=True, T9K_NO_BUILD="1")
    assert result.returncode == 3, result.stderr
    assert "the binaries of the Kueue manager are not in" in result.stderr


def test_install_tools_build_into_their_folders_and_tool_prints_them(
    env: dict[str, str],
) -> None:
    result = binaries(env, tools=True)
    assert result.returncode == 0, result.stderr
    proc = subprocess.run(
        [*CLUSTER, "tool", "helm", "kustomize", "monitoring-crds"],
        cwd=ROOT,
        env={**env, "T9K_NO_BUILD": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    helm, kustomize, crds = (Path(line) for line in proc.stdout.split())
    assert os.access(helm / "helm", os.X_OK) and os.access(kustomize / "kustomize", os.X_OK)
    assert helm.name.startswith(f"helm-{INSTALL_TOOLS['helm'].version}-")
    assert sorted(p.name for p in (crds / "crds").iterdir()) == [
        "prometheusrules.yaml",
        "servicemonitors.yaml",
    ]


def test_missing_install_tools_with_no_build_exit_3_with_the_remedy(env: dict[str, str]) -> None:
    result = subprocess.run(
        [*CLUSTER, "tool", "helm"],
        cwd=ROOT,
        env={**env, "T9K_NO_BUILD": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3, result.stderr
    assert "the binaries of Helm are not in" in result.stderr and "make binaries" in result.stderr


def test_wrapper_modules_require_the_pinned_versions() -> None:
    for g in [*ADDONS.values(), *INSTALL_TOOLS.values(), TRAINING_OPERATOR]:
        go_mod = (ROOT / "hack" / "third_party" / g.wrapper / "go.mod").read_text()
        assert f"{g.module} {g.version}" in go_mod, g.wrapper
        assert (ROOT / "hack" / "third_party" / g.wrapper / "go.sum").exists()


def test_make_obtains_binaries_before_pytest_starts() -> None:
    out = subprocess.run(
        ["make", "-n", "test"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MAKEFLAGS": ""},
    ).stdout.splitlines()
    build = next(i for i, line in enumerate(out) if "-m hack.cluster binaries" in line)
    pytest_line = next(i for i, line in enumerate(out) if "bin/pytest" in line)
    assert build < pytest_line


def _make_n(target: str) -> list[str]:
    out = subprocess.run(
        ["make", "-n", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MAKEFLAGS": ""},
    ).stdout.splitlines()
    return [line for line in out if "-m hack.cluster binaries" in line]


@pytest.mark.parametrize("target", ["demo", "cluster"])
def test_the_demo_and_a_plain_cluster_build_the_control_plane_alone(target: str) -> None:
    """The gang schedulers, Kueue, Helm and kustomize wait for whatever uses
    them (``up --gang``, ``up --kueue``, ``tool``, ``make deploy``)."""
    (line,) = _make_n(target)
    assert line.endswith("-m hack.cluster binaries --gang none --no-kueue --no-tools"), line


def test_make_test_still_builds_everything_first() -> None:
    (line,) = _make_n("test")
    assert line.endswith("-m hack.cluster binaries"), line


def test_the_go_caches_of_the_builds_are_removed_once_all_are_built(
    env: dict[str, str],
) -> None:
    """A cold build leaves about 11 GB in Go's caches, which nothing reads
    again; kept beside the test run, they once filled a CI machine's disk."""
    cache = Path(env["T9K_CACHE_DIR"])
    failed = binaries(env, FAKE_GO_FAIL="etcd")
    assert failed.returncode != 0
    # A failed build keeps them, for the retry.
    assert (cache / "gocache").is_dir() and (cache / "gomod").is_dir()
    # The control plane alone (the demo's) keeps them for the builds of the rest.
    core = binaries(env)
    assert core.returncode == 0, core.stderr
    assert (cache / "gocache").is_dir() and (cache / "gomod").is_dir()
    result = binaries(env, gang="all", kueue=True, tools=True)
    assert result.returncode == 0, result.stderr
    assert not (cache / "gocache").exists() and not (cache / "gomod").exists()
    assert "removed the Go GOCACHE" in result.stderr
    folder = Path(result.stdout.strip())
    assert all(os.access(folder / t, os.X_OK) for t in TOOLS)


def test_go_caches_the_environment_names_are_left_alone(
    env: dict[str, str], tmp_path: Path
) -> None:
    mine = {"GOCACHE": str(tmp_path / "my-gocache"), "GOMODCACHE": str(tmp_path / "my-gomod")}
    result = binaries(env, **mine)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "my-gocache" / "0a" / "0a1b-d").is_file()
    assert (tmp_path / "my-gomod" / "example.com" / "m@v1.0.0" / "pkg" / "pkg.go").is_file()
    assert "removed the Go" not in result.stderr


def test_the_cluster_package_imports_only_the_standard_library() -> None:
    """`make binaries` and `make cluster` run it with the system's python3,
    before the project's virtualenv exists (``-S -s -E``: no site-packages)."""
    for path in sorted((ROOT / "hack" / "cluster").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or name.startswith("hack.cluster"), (
                    f"{path.name} imports {name}"
                )
    proc = subprocess.run(
        [sys.executable, "-S", "-s", "-E", "-m", "hack.cluster", "kubeconfig", "--name", "x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("/clusters/x/kubeconfig")
