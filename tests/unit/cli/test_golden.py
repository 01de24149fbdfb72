"""The CLI's tables and describe screen, rendered from fixed objects
(tests/unit/cli/fixtures.py) and compared with tests/unit/cli/golden/.

After an intended change of the output: ``T9K_UPDATE_GOLDEN=1 pytest
tests/unit/cli/test_golden.py``, then review the golden files' diff. Under
``CI=true`` that variable fails the tests: CI judges the committed files, it
never writes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.api.parts import Columns
from t9k_operator.cli import render, top
from t9k_operator.integrations.checkpoint.view import checkpoint_fields
from t9k_operator.integrations.gpu_usage.usage import describe_usage
from t9k_operator.integrations.gpu_usage.view import HEADERS, cells
from t9k_operator.integrations.progress.view import progress_fields
from t9k_operator.sdk import views
from tests.conftest import in_ci
from tests.unit.cli import fixtures as f

GOLDEN = Path(__file__).with_name("golden")


def _top_jobs_with_usage() -> str:
    jobs = [f.MNIST, f.LLM, f.MS]
    rows = views.job_usage(jobs, f.PODS, f.NOW)
    return top.top_jobs(rows, False, [Columns(HEADERS, cells(rows, jobs, f.GPU_USAGE))])


def _describe(
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    events: list[dict[str, Any]],
    gpu: str | None = None,
    **kw: Any,
) -> str:
    """``t9k describe`` at NOW, with the integrations' head lines as ``t9k``
    gathers them: the progress, then the checkpoint, after Restarts (in
    registry order), ``gpu`` usage after the GPUs."""
    fields = {"Restarts": progress_fields(job, f.NOW) + checkpoint_fields(job)}
    if gpu is not None:
        fields["GPUs"] = [("GPU usage", gpu)]
    return render.describe(job, pods, events, f.NOW, fields=fields, **kw)


CASES: dict[str, Callable[[], str]] = {
    "list.txt": lambda: render.jobs_table([f.LLM, f.MNIST], f.PODS, f.NOW),
    "list-all-namespaces-wide.txt": lambda: render.jobs_table(
        views.sort_jobs([f.MNIST, f.MS, f.LLM]), f.PODS, f.NOW, all_namespaces=True, wide=True
    ),
    "describe-mnist.txt": lambda: _describe(f.MNIST, f.PODS, f.EVENTS, tensorboard=f.TENSORBOARD),
    "describe-llm.txt": lambda: _describe(f.LLM, [], []),
    "describe-ms-resnet.txt": lambda: _describe(f.MS, f.PODS, []),
    "top-nodes.txt": lambda: top.top_nodes(views.node_usage(f.NODES, f.PODS)),
    "top-jobs.txt": lambda: top.top_jobs(
        views.job_usage([f.MNIST, f.LLM, f.MS], f.PODS, f.NOW), True
    ),
    "top-jobs-gpu-usage.txt": lambda: _top_jobs_with_usage(),
    "describe-mnist-gpu-usage.txt": lambda: _describe(
        f.MNIST, f.PODS, [], gpu=describe_usage(f.MNIST_USAGE)
    ),
    "describe-mnist-checkpoint.txt": lambda: _describe(f.MNIST_CHECKPOINTED, f.PODS, []),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_matches_its_golden_file(name: str) -> None:
    text = CASES[name]()
    path = GOLDEN / name
    if os.environ.get("T9K_UPDATE_GOLDEN"):
        if in_ci():
            pytest.fail("T9K_UPDATE_GOLDEN is set under CI=true: CI never rewrites golden files")
        path.write_text(text)
    assert path.exists(), f"no golden file {path}: run with T9K_UPDATE_GOLDEN=1"
    assert text == path.read_text()


def test_colour_only_paints_and_keeps_columns_aligned() -> None:
    plain = render.jobs_table([f.LLM, f.MNIST], f.PODS, f.NOW)
    coloured = render.jobs_table([f.LLM, f.MNIST], f.PODS, f.NOW, colour=True)
    assert "\x1b[32mRunning\x1b[0m" in coloured and "\x1b[33mPending\x1b[0m" in coloured
    stripped = coloured.replace("\x1b[32m", "").replace("\x1b[33m", "").replace("\x1b[0m", "")
    assert stripped == plain
    assert "\x1b[" not in plain


def test_under_ci_updating_golden_files_fails_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(f"{__name__}.GOLDEN", tmp_path)
    monkeypatch.setenv("T9K_UPDATE_GOLDEN", "1")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"T9K_UPDATE_GOLDEN is set under CI=true"):
        test_output_matches_its_golden_file("list.txt")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.delenv("CI")
    test_output_matches_its_golden_file("list.txt")
    assert (tmp_path / "list.txt").read_text() == (
        Path(__file__).with_name("golden") / "list.txt"
    ).read_text()
