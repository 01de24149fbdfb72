"""``t9k run --local --workdir DIR``: every replica runs in DIR, and where the
job names the cluster's workdir (/t9k/workdir) it names DIR, so the script a
job runs from its workdir on the cluster is the one that runs here."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from t9k_operator.local.cli import run
from t9k_operator.local.plan import LocalRunError
from tests.unit.test_local_run import sample

SCRIPT = """\
import os, sys
print(f"rank {os.environ['RANK']} in {os.getcwd()} with {' '.join(sys.argv[1:])}", flush=True)
"""


def test_the_replicas_run_in_the_workdir_which_stands_for_the_clusters(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    manifest = sample("pytorch-basic.yaml")
    out = io.StringIO()
    program = [sys.executable, "/t9k/workdir/train.py", "--data=/t9k/workdir/data"]
    code = run(manifest, program, workdir=str(tmp_path), out=out, err=io.StringIO())
    assert code == 0, out.getvalue()
    assert sorted(out.getvalue().splitlines()) == [
        f"[worker-{r}] rank {r} in {tmp_path} with --data={tmp_path}/data" for r in range(4)
    ]

    out = io.StringIO()
    code = run(manifest, [sys.executable, "train.py"], workdir=str(tmp_path), out=out)
    assert code == 0 and out.getvalue().count(f" in {tmp_path} with") == 4, out.getvalue()


def test_a_workdir_that_is_no_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LocalRunError, match=f"workdir {tmp_path}/none: not a directory"):
        run(sample("pytorch-basic.yaml"), ["true"], workdir=str(tmp_path / "none"))
