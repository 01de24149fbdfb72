"""An integration is its folder and its registry line: in a copy of the
package without both, the operator, `t9k` and the SDK still start, a job
still runs, a job that sets a field the integration acted on is told that
nothing acts on it, and `t9k create --workdir` says so once the workdir's
folder is gone (tests/unit/removal_run.py). Every integration is tried; the
core's import contract (pyproject.toml) ignores no import of one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from t9k_operator import registry as registry_module

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ROOT / "t9k_operator" / "integrations"
CORE = "The core never imports an integration (only the registry names them)"


ALL = sorted(p.name for p in FOLDERS.iterdir() if (p / "__init__.py").exists())
NOT_ACTED_ON_WITHOUT = {
    "progress": "spec.runPolicy.progress",
    "checkpoint": "spec.runPolicy.checkpoint",
    "tensorboard": "spec.tensorboardSpec",
    # Kueue, which also takes a queue, is off at the operator's default flags.
    "gang": "spec.scheduler.t9kScheduler",
}
"""The field a job is told is not acted on, once an integration's folder is
gone (the operator at its default flags); the others leave none."""


def without(tmp_path: Path, folder: str) -> tuple[Path, str]:
    """A copy of the package without the integration ``folder`` and its
    registry line; the registry name of the integration removed."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "t9k_operator", tree / "t9k_operator")
    shutil.rmtree(tree / "t9k_operator" / "integrations" / folder)
    registry = tree / "t9k_operator" / "registry.py"
    text = registry.read_text()
    (line,) = [
        line
        for line in text.splitlines()
        if line.startswith(f"from t9k_operator.integrations.{folder}.")
    ]
    (cls,) = re.findall(r"import (\w+)$", line)
    name = getattr(registry_module, cls).name  # the Setup the line lists
    text = text.replace(line + "\n", "").replace(f"    {cls},\n", "")
    assert not re.search(rf"^\s*{cls}\b", text, re.M), f"{cls} is still listed in the registry"
    registry.write_text(text)
    return tree, name


def test_the_core_imports_no_integration_not_even_by_an_exception() -> None:
    linter = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (core,) = [c for c in linter["contracts"] if c["name"] == CORE]
    assert "ignore_imports" not in core
    assert len(ALL) >= 8


@pytest.mark.parametrize("folder", ALL)
def test_removing_an_integration_is_deleting_its_folder_and_registry_line(
    tmp_path: Path, folder: str
) -> None:
    tree, name = without(tmp_path, folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
    where = subprocess.run(
        [sys.executable, "-c", "import t9k_operator; print(t9k_operator.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert where.stdout.startswith(str(tree)), where.stdout
    operator = subprocess.run(
        [sys.executable, "-m", "t9k_operator", "--help"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert operator.returncode == 0, operator.stderr
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "unit" / "removal_run.py"),
            name,
            NOT_ACTED_ON_WITHOUT.get(folder, ""),
            "refused" if folder == "workdir" else "packed",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (ran,) = [line for line in run.stdout.splitlines() if line.startswith("ran [")]
    assert f"'{name}'" not in ran
