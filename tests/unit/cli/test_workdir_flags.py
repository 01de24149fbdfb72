"""``--workdir`` on ``t9k create`` and ``t9k submit``, without a cluster: the
dry run prints the job with its workdir annotation, and a directory that
cannot be packed is refused before any request."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from t9k_operator.cli import main


def test_create_dry_run_names_the_workdir(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text("")
    code = main(
        ["--kubeconfig", "/nonexistent", "create", "pytorch", "p", "--image", "i",
         "--workdir", str(tmp_path), "--dry-run", "--", "python", "train.py"]
    )  # fmt: skip
    assert code == 0
    job = yaml.safe_load(capsys.readouterr().out)
    assert job["metadata"]["annotations"] == {"batch.tensorstack.dev/workdir": "p-workdir"}


@pytest.mark.parametrize("command", ["create", "submit"])
def test_a_workdir_that_cannot_be_packed_is_refused_first(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "out").symlink_to("/etc")
    job = tmp_path / "job.yaml"
    job.write_text("apiVersion: batch.tensorstack.dev/v1beta1\nkind: GenericJob\n")
    workdir = ["--workdir", str(tmp_path / "w")]
    args = {
        "create": ["create", "pytorch", "p", "--image", "i", *workdir, "--", "python", "x.py"],
        "submit": ["submit", "-f", str(job), *workdir],
    }[command]
    # No cluster answers at this kubeconfig: the refusal comes before any request.
    code = main(["--kubeconfig", "/nonexistent", *args])
    assert code == 1
    assert "symbolic links leave the directory" in capsys.readouterr().err
