"""The import contracts in pyproject.toml catch what they are meant to: an
import of the kube client into the engine, a kind, an integration's build or
plan step or the pipeline's contract or plan breaks the pure packages'
contract, and so does an integration importing the pipeline's apply step; an
import of the servers into the engine breaks the reconcilers' layers; an
integration imported by the pipeline breaks the core's contract, and by
another integration their independence; the kube client in the foundation
breaks the plumbing's, in the CLI or the SDK in the operator theirs; the SDK's
client imported by one of its parts (its logs) breaks the SDK's layers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


PURE = "Pure: builders, api, kinds, engine, integration steps, pipeline plan"
PIPELINE = "t9k_operator.reconcilers.pipeline"


def named_in(name: str) -> set[str]:
    """The modules the contract ``name`` of pyproject.toml names (sources and forbidden)."""
    linter = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (found,) = [c for c in linter["contracts"] if c["name"] == name]
    return {*found["source_modules"], *found["forbidden_modules"]}


@pytest.mark.parametrize(
    "module",
    [
        "reconcilers/engine/planner.py",
        "kinds/contract.py",
        "integrations/gang/integration.py",
        "reconcilers/pipeline/contract.py",
        "reconcilers/pipeline/plan.py",
    ],
)
def test_a_kube_import_in_a_pure_package_breaks_the_purity_contract(
    tmp_path: Path, module: str
) -> None:
    tree = copy_of_the_package(tmp_path)
    assert lint_imports(tree).returncode == 0
    path = tree / "t9k_operator" / module
    path.write_text(path.read_text() + "\nfrom t9k_operator.kube import KubeClient  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{PURE} BROKEN" in proc.stdout
    dotted = "t9k_operator." + module.removesuffix(".py").replace("/", ".")
    assert f"{dotted} -> t9k_operator.kube" in proc.stdout


def test_an_integration_importing_the_apply_step_breaks_the_purity_contract(
    tmp_path: Path,
) -> None:
    tree = copy_of_the_package(tmp_path)
    gang = tree / "t9k_operator" / "integrations" / "gang" / "integration.py"
    assert f"from {PIPELINE}.contract import" in gang.read_text()  # the contract is its to use
    assert f"{PURE} KEPT" in lint_imports(tree).stdout
    gang.write_text(gang.read_text() + f"\nfrom {PIPELINE}.children import Writer  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{PURE} BROKEN" in proc.stdout
    said = " ".join(proc.stdout.split())  # unwrapped
    assert f"is not allowed to import {PIPELINE}.children:" in said  # itself, not only its client


def test_every_module_of_the_pipeline_is_pure_or_the_apply_step() -> None:
    """A new module of the pipeline is named in the purity contract: a pure
    source, or a part of the apply step the pure packages may not import."""
    named = named_in(PURE)
    package = ROOT / "t9k_operator" / "reconcilers" / "pipeline"
    modules = {f"{PIPELINE}.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    assert modules == {m for m in named if m.startswith(f"{PIPELINE}.")}


def test_the_engine_importing_the_servers_breaks_the_reconcilers_layers(tmp_path: Path) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "Reconcilers: controllers -> serving -> pipeline -> engine"
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    rules = tree / "t9k_operator" / "reconcilers" / "engine" / "planner.py"
    rules.write_text(rules.read_text() + "\nfrom t9k_operator.reconcilers import serving  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout


@pytest.mark.parametrize("module", ["plan.py", "job.py"])
def test_the_pipeline_importing_an_integration_breaks_its_contract(
    tmp_path: Path, module: str
) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "The core never imports an integration (only the registry names them)"
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    path = tree / "t9k_operator" / "reconcilers" / "pipeline" / module
    path.write_text(
        path.read_text() + "\nfrom t9k_operator.integrations.kueue import integration  # noqa\n"
    )
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout
    dotted = f"{PIPELINE}.{module.removesuffix('.py')}"
    said = " ".join(proc.stdout.split())  # unwrapped
    assert f"{dotted} -> t9k_operator.integrations.kueue.integration" in said


def test_an_integration_importing_another_breaks_their_independence(tmp_path: Path) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "No integration imports another (each is removed by deleting its folder)"
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    path = tree / "t9k_operator" / "integrations" / "kueue" / "integration.py"
    path.write_text(
        path.read_text() + "\nfrom t9k_operator.integrations.gang import build  # noqa\n"
    )
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout


def test_a_kube_import_in_the_foundation_breaks_the_plumbing_layers(tmp_path: Path) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "Plumbing layers: runtime -> informers -> kube -> foundation"
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    clock = tree / "t9k_operator" / "foundation" / "clock.py"
    clock.write_text(clock.read_text() + "\nfrom t9k_operator.kube import KubeClient  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout
    assert "t9k_operator.foundation.clock -> t9k_operator.kube" in proc.stdout


def test_the_cli_importing_the_kube_client_breaks_its_contract(tmp_path: Path) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "The CLI reaches the cluster only through the SDK"
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    render = tree / "t9k_operator" / "cli" / "render.py"
    render.write_text(render.read_text() + "\nfrom t9k_operator.kube import KubeClient  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout
    assert "t9k_operator.cli.render -> t9k_operator.kube" in proc.stdout


def test_the_sdk_reads_the_kinds_but_importing_the_reconcilers_breaks_its_contract(
    tmp_path: Path,
) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "The SDK is a client, not the operator"
    sdk_build = tree / "t9k_operator" / "sdk" / "build.py"
    assert "from t9k_operator.kinds" in sdk_build.read_text()  # the one kind descriptor
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    sdk_build.write_text(
        sdk_build.read_text() + "\nfrom t9k_operator.reconcilers.pipeline import job  # noqa\n"
    )
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout
    assert "t9k_operator.sdk.build -> t9k_operator.reconcilers" in proc.stdout


def test_the_sdk_logs_importing_the_client_breaks_the_sdk_layers(tmp_path: Path) -> None:
    """The cycle client -> logs -> client, even as an import for the type checker only."""
    tree = copy_of_the_package(tmp_path)
    contract = "The SDK's client stands on its parts, which never import it"
    logs = tree / "t9k_operator" / "sdk" / "logs.py"
    assert "from t9k_operator.sdk.client import" not in logs.read_text()
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    logs.write_text(
        logs.read_text()
        + "\nfrom typing import TYPE_CHECKING  # noqa\n"
        + "\nif TYPE_CHECKING:\n    from t9k_operator.sdk.client import Client  # noqa\n"
    )
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout
    assert "t9k_operator.sdk.logs -> t9k_operator.sdk.client" in proc.stdout


def test_the_operator_importing_the_sdk_breaks_its_contract(tmp_path: Path) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "The operator does not import the t9k command or its SDK"
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    manager = tree / "t9k_operator" / "manager.py"
    manager.write_text(manager.read_text() + "\nfrom t9k_operator.sdk import Client  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout


def test_the_reporter_importing_the_project_breaks_its_contract(tmp_path: Path) -> None:
    tree = copy_of_the_package(tmp_path)
    contract = "The progress reporter stands alone (a training copies it next to its script)"
    assert f"{contract} KEPT" in lint_imports(tree).stdout
    path = tree / "t9k_operator" / "report.py"
    path.write_text(path.read_text() + "\nfrom t9k_operator.objects import Obj  # noqa\n")
    proc = lint_imports(tree)
    assert f"{contract} BROKEN" in proc.stdout
