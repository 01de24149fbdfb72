"""The lock files (requirements/*.txt, hack/release/lock.py): they agree with
pyproject.toml's ranges, and every install the project makes goes through
them, hash-checked, so a new upload to PyPI changes nothing until it is
locked. (A day came when the image test failed because `make image` resolved
a certifi released after the cached root filesystem was built: two builds of
the same commit installed different files.)"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from tests import hack_scripts

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lock() -> ModuleType:
    return hack_scripts.load("release.lock")


@pytest.fixture(scope="module")
def rootfs() -> ModuleType:
    return hack_scripts.load("release.rootfs")


def test_the_locks_agree_with_pyproject(lock: ModuleType) -> None:
    assert lock.check() == []
    operator = lock.read_lock(lock.OPERATOR_LOCK)
    dev = lock.read_lock(lock.DEV_LOCK)
    # Every runtime dependency and the build backend ship in the image, and the
    # tests run the very versions the image has.
    assert {"kubernetes", "pydantic", "cachetools", "setuptools"} <= set(operator)
    assert {"pytest", "pytest-mock", "ruff", "mypy", "pip"} <= set(dev)
    assert all(dev[name].version == pin.version for name, pin in operator.items())
    for pin in dev.values():
        assert pin.hashes, pin.name
        assert all(re.fullmatch("[0-9a-f]{64}", h) for h in pin.hashes), pin.name


def test_check_names_what_is_wrong(lock: ModuleType, tmp_path: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    operator = tmp_path / "operator.txt"
    dev = tmp_path / "dev.txt"
    shutil.copy(lock.OPERATOR_LOCK, operator)
    shutil.copy(lock.DEV_LOCK, dev)
    assert lock.check(project, operator, dev) == []

    # A dependency pyproject.toml gains but nobody locked.
    grown = {**project, "project": {**project["project"]}}
    grown["project"]["dependencies"] = [*project["project"]["dependencies"], "rich>=13"]
    problems = lock.check(grown, operator, dev)
    assert problems == ["operator.txt: rich (rich>=13 in pyproject.toml) is not pinned"]

    # A range pyproject.toml narrows past the pin.
    narrowed = {**project, "project": {**project["project"]}}
    narrowed["project"]["dependencies"] = [
        "cachetools>=99" if d.startswith("cachetools") else d
        for d in project["project"]["dependencies"]
    ]
    pinned = lock.read_lock(operator)["cachetools"].version
    assert f"operator.txt: cachetools=={pinned} is outside cachetools>=99" in lock.check(
        narrowed, operator, dev
    )

    # The two files disagreeing, and a pin without hashes.
    text = dev.read_text()
    dev.write_text(text.replace(f"cachetools=={pinned} ", "cachetools==1.0 ", 1))
    assert f"dev.txt: cachetools is 1.0, operator.txt has {pinned}" in lock.check(
        project, operator, dev
    )
    operator.write_text("cachetools==1.0\n")
    assert "operator.txt: cachetools has no hash" in lock.check(project, operator, dev)
    operator.unlink()
    assert "operator.txt: missing or empty" in lock.check(project, operator, dev)


def test_render_reads_back(lock: ModuleType, tmp_path: Path) -> None:
    pins = {
        "a-b": lock.Pin("a-b", "1.0", ["1" * 64, "2" * 64], {"c"}),
        "c": lock.Pin("c", "2.0.post1", ["3" * 64], set()),
    }
    path = lock.ROOT / "requirements" / "x.txt"
    text = lock.render(path, "A test.", pins, {"c"})
    assert "a-b==1.0 \\\n    --hash=sha256:" + "1" * 64 + " \\\n" in text
    assert "    # via c\n" in text and "    # via pyproject.toml\n" in text
    (tmp_path / "x.txt").write_text(text)
    back = lock.read_lock(tmp_path / "x.txt")
    assert {n: (p.version, p.hashes) for n, p in back.items()} == {
        "a-b": ("1.0", ["1" * 64, "2" * 64]),
        "c": ("2.0.post1", ["3" * 64]),
    }


def run_lines(dockerfile: str) -> list[str]:
    text = re.sub(r"\\\n", " ", dockerfile)
    return [" ".join(line.split()) for line in text.splitlines() if line.startswith("RUN ")]


def test_the_image_installs_the_lock_and_nothing_else(rootfs: ModuleType) -> None:
    plan = rootfs.plan(ROOT / "Dockerfile", {})
    copies = [ins.args for ins in plan.steps if ins.op == "COPY"]
    assert copies[0] == "requirements/operator.txt /tmp/requirements.txt"
    runs = run_lines((ROOT / "Dockerfile").read_text())
    pip = [r for r in runs if "pip install" in r]
    assert len(pip) == 2
    # The dependencies, hash-checked (an unlocked one stops the build) ...
    assert "--require-hashes -r /tmp/requirements.txt" in pip[0]
    # ... then the operator alone, with the locked build backend.
    assert "--no-deps --no-build-isolation /src" in pip[1]
    assert "pip check" in pip[1]


def test_make_venv_installs_the_dev_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("$(STAMP): ", 1)[1].split("\n\n", 1)[0]
    # Installed again when the lock changes; the console's scripts built first
    # (order-only: a script changed needs no new install).
    assert recipe.startswith("pyproject.toml requirements/dev.txt | $(CONSOLE_ASSETS)\n")
    installs = [line.strip() for line in recipe.splitlines() if "pip install" in line]
    assert installs == [
        "$(PY) -m pip install -q --require-hashes -r requirements/dev.txt",
        "$(PY) -m pip install -q --no-deps --no-build-isolation -e .",
    ]
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "$(PY) -m hack.release.lock --check" in lint


def test_the_image_key_follows_the_lock(rootfs: ModuleType, tmp_path: Path) -> None:
    context = tmp_path / "ctx"
    context.mkdir()
    for name in ("Dockerfile", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, context / name)
    shutil.copytree(ROOT / "requirements", context / "requirements")
    shutil.copytree(
        ROOT / "t9k_operator", context / "t9k_operator", ignore=shutil.ignore_patterns("*.pyc")
    )
    before = rootfs.image_key(context / "Dockerfile", context, {})
    lockfile = context / "requirements" / "operator.txt"
    lockfile.write_text(lockfile.read_text() + "# touched\n")
    assert rootfs.image_key(context / "Dockerfile", context, {}) != before
