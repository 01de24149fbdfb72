"""The import contracts in pyproject.toml catch what they are meant to: an
import of the kube client into the engine breaks "Builders and the engine stay
pure"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True
    )


def copy_of_the_package(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "t9k_operator", tree / "t9k_operator")
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def test_a_kube_import_in_the_engine_breaks_the_purity_contract(tmp_path: Path) -> None:
    tree = copy_of_the_package(tmp_path)
    assert lint_imports(tree).returncode == 0
    engine = tree / "t9k_operator" / "reconcilers" / "engine.py"
    engine.write_text(engine.read_text() + "\nfrom t9k_operator.kube import KubeClient  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert "Builders and the engine stay pure (no runtime plumbing) BROKEN" in proc.stdout
    assert "t9k_operator.reconcilers.engine -> t9k_operator.kube" in proc.stdout
