"""How hack/release/rootfs reads a Dockerfile (Docker's rules for continuation
lines, ARG scopes, substitution, ENV forms, COPY of files and folders), what
its cache key depends on, and which cached folders it prunes. The build
itself (debootstrap, chroot) runs in tests/integration/test_in_cluster.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests import hack_scripts

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rootfs() -> ModuleType:
    return hack_scripts.load("release.rootfs")


def test_the_project_dockerfile_is_one_stage_on_a_debian_base(rootfs: ModuleType) -> None:
    plan = rootfs.plan(ROOT / "Dockerfile", {})
    assert rootfs.debian_suite(plan.base) == "bookworm"
    assert {ins.op for ins in plan.steps} <= {
        "ARG", "RUN", "COPY", "ENV", "WORKDIR", "USER", "ENTRYPOINT", "CMD", "LABEL",
    }  # fmt: skip
    # A build argument picks another base, as `docker build --build-arg` does.
    other = rootfs.plan(ROOT / "Dockerfile", {"BASE": "debian:trixie-slim"})
    assert rootfs.debian_suite(other.base) == "trixie"


def test_parse_joins_continuations_and_drops_comments(rootfs: ModuleType) -> None:
    text = (
        "# syntax comment\nARG A=1\nFROM debian:bookworm\nRUN one \\\n"
        "# a comment inside\n  two \\\n  three\n\nUSER 1:2\n"
    )
    ops = [(i.op, i.args, i.line) for i in rootfs.parse(text)]
    assert ops == [
        ("ARG", "A=1", 2),
        ("FROM", "debian:bookworm", 3),
        ("RUN", "one two three", 4),
        ("USER", "1:2", 9),
    ]


def test_substitution_and_env_forms(rootfs: ModuleType) -> None:
    env = {"PATH": "/bin", "EMPTY": ""}
    assert rootfs.substitute("/opt/x:$PATH", env) == "/opt/x:/bin"
    assert rootfs.substitute("${PATH}:${NOPE:-/d}:${EMPTY:-e}:$NOPE.", env) == "/bin:/d:e:."
    assert rootfs.pairs('A=1 B="two words" C=$PATH', env) == [
        ("A", "1"),
        ("B", "two words"),
        ("C", "/bin"),
    ]
    assert rootfs.pairs("LEGACY some value", env) == [("LEGACY", "some value")]
    assert rootfs.exec_form('["t9k-operator", "--x"]') == ["t9k-operator", "--x"]
    assert rootfs.exec_form("echo $HOME") == ["/bin/sh", "-c", "echo $HOME"]


@pytest.mark.parametrize(
    "base",
    ["python:3.11-slim", "ubuntu:24.04", "debian:bookworm@sha256:00", "quay.io/debian:bookworm"],
)
def test_a_base_it_cannot_make_is_refused(rootfs: ModuleType, base: str) -> None:
    with pytest.raises(SystemExit, match="only debian:<suite>"):
        rootfs.debian_suite(base)


def test_a_second_stage_is_refused(rootfs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm AS a\nFROM debian:bookworm\n")
    with pytest.raises(SystemExit, match="one stage only"):
        rootfs.plan(tmp_path / "Dockerfile", {})


def test_copy_follows_dockers_rules(rootfs: ModuleType, tmp_path: Path) -> None:
    ctx, root = tmp_path / "ctx", tmp_path / "root"
    (ctx / "pkg" / "__pycache__").mkdir(parents=True)
    (ctx / "pkg" / "mod.py").write_text("x = 1\n")
    (ctx / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (ctx / "a.toml").write_text("a\n")
    (ctx / "b.md").write_text("b\n")
    root.mkdir()
    rootfs.copy_step(root, ctx, "a.toml b.md /src/", {}, "/")
    rootfs.copy_step(root, ctx, "pkg /src/pkg", {}, "/")  # a folder: its contents
    rootfs.copy_step(root, ctx, "a.toml renamed.toml", {}, "/work")  # relative to WORKDIR
    assert (root / "src" / "a.toml").read_text() == "a\n"
    assert (root / "src" / "b.md").read_text() == "b\n"
    assert (root / "src" / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert not (root / "src" / "pkg" / "__pycache__").exists()
    assert (root / "work" / "renamed.toml").read_text() == "a\n"
    with pytest.raises(SystemExit, match="several sources"):
        rootfs.copy_step(root, ctx, "a.toml b.md /dest", {}, "/")
    with pytest.raises(SystemExit, match="outside the build context"):
        rootfs.copy_step(root, ctx, "../ctx/../x /x", {}, "/")


def test_the_key_follows_every_input(rootfs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "m.py").write_text("1\n")
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM debian:bookworm-slim\nCOPY app /app\n")
    first = rootfs.image_key(dockerfile, tmp_path, {})
    assert rootfs.image_key(dockerfile, tmp_path, {}) == first
    (tmp_path / "app" / "__pycache__").mkdir()
    (tmp_path / "app" / "__pycache__" / "m.pyc").write_bytes(b"x")
    assert rootfs.image_key(dockerfile, tmp_path, {}) == first  # caches do not count
    (tmp_path / "app" / "m.py").write_text("2\n")
    changed = rootfs.image_key(dockerfile, tmp_path, {})
    assert changed != first
    assert rootfs.image_key(dockerfile, tmp_path, {"X": "1"}) != changed
    dockerfile.write_text("FROM debian:bookworm-slim\nCOPY app /app\nUSER 1\n")
    assert rootfs.image_key(dockerfile, tmp_path, {}) != changed


def test_prune_keeps_the_recent_the_newest_and_their_bases(
    rootfs: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T9K_CACHE_DIR", str(tmp_path))
    top = tmp_path / "rootfs"
    day = 24 * 3600
    now = time.time()

    def image(name: str, age: float, base: str) -> Path:
        folder = top / name
        (folder / "root").mkdir(parents=True)
        (folder / "build.json").write_text(json.dumps({"base_folder": str(top / base)}))
        os.utime(folder / "build.json", (now - age, now - age))
        return folder

    def base(name: str, age: float) -> Path:
        folder = top / name
        (folder / "root").mkdir(parents=True)
        os.utime(folder, (now - age, now - age))
        return folder

    old_base, new_base = base("base-old", 3 * day), base("base-new", 3 * day)
    recent = image("recent", 60, "base-new")
    newest_old = [image(f"old{i}", day + i, "base-new") for i in range(2)]
    stale = [image(f"stale{i}", 2 * day + i, "base-old") for i in range(3)]
    keep = image("keep", 5 * day, "base-new")
    (top / "dead.tmp123").mkdir()
    rootfs.prune(keep)
    left = {p.name for p in top.iterdir()}
    assert left == {recent.name, *(f.name for f in newest_old), keep.name, new_base.name}
    assert old_base.name not in left and not any(f.exists() for f in stale)
