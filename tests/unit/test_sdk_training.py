"""A Python function as a job (t9k_operator/sdk/training.py): its entry
script, and the job run on this machine from the workdir it gets on the
cluster, with the packages it names installed by pip from a wheel built here."""

from __future__ import annotations

import base64
import hashlib
import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.sdk import BadJob
from t9k_operator.sdk.training import ENTRY, Training, entry_script, prepare, run_locally


def report(greeting: str, times: int = 1) -> None:
    import os

    for _ in range(times):
        print(f"{greeting} from rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}")


def uses_helper() -> None:
    import helper  # from the workdir beside the entry script

    print(helper.VALUE)


def uses_package() -> None:
    import t9ktoy

    print("package says", t9ktoy.WORD)


def tag(f: Any) -> Any:
    return f


@tag
def tagged() -> None:
    print("tagged ran")


async def waits() -> None:
    return None


def fails() -> None:
    raise SystemExit(3)


def test_the_entry_script_calls_the_function_with_its_arguments(tmp_path: Path) -> None:
    script = entry_script(report, {"greeting": "hi", "times": 2}, [])
    assert "def report(greeting: str, times: int = 1) -> None:" in script
    (tmp_path / ENTRY).write_text(script)
    proc = subprocess.run(
        [sys.executable, ENTRY],
        cwd=tmp_path,
        env={"RANK": "0", "WORLD_SIZE": "1"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hi from rank 0 of 1\nhi from rank 0 of 1\n"


def test_decorators_are_left_out(tmp_path: Path) -> None:
    script = entry_script(tagged, {}, [])
    assert "@tag" not in script
    (tmp_path / ENTRY).write_text(script)
    proc = subprocess.run([sys.executable, ENTRY], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout == "tagged ran\n", proc.stderr


def test_what_cannot_be_a_job_is_refused() -> None:
    with pytest.raises(BadJob, match="defined with def"):
        entry_script(lambda: None, {}, [])
    with pytest.raises(BadJob, match="must be JSON"):
        entry_script(report, {"greeting": object()}, [])
    with pytest.raises(BadJob, match="is async"):
        entry_script(waits, {}, [])


def test_the_job_and_its_workdir(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    manifest, archive = prepare(
        Training(uses_helper, "fn", "python:3.11", workers=2, workdir=tmp_path)
    )
    assert manifest["kind"] == "PyTorchTrainingJob"
    (spec,) = manifest["spec"]["replicaSpecs"]
    assert spec["replicas"] == 2
    assert spec["template"]["spec"]["containers"][0]["command"] == ["python", ENTRY]
    with tarfile.open(fileobj=io.BytesIO(archive.archive), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["helper.py", ENTRY]


def test_it_runs_locally_on_every_replica_alike() -> None:
    out = io.StringIO()
    training = Training(
        report, "fn", "python:3.11", workers=2, kwargs={"greeting": "hello"}, python=sys.executable
    )
    assert run_locally(training, out=out) == 0, out.getvalue()
    assert sorted(out.getvalue().splitlines()) == [
        "[worker-0] hello from rank 0 of 2",
        "[worker-1] hello from rank 1 of 2",
    ]
    failing = Training(fails, "fn", "python:3.11", python=sys.executable)
    assert run_locally(failing, out=io.StringIO()) == 3


def wheel(root: Path) -> Path:
    """A pure-Python wheel of one module, ``t9ktoy`` (built by hand: no network)."""
    files = {
        "t9ktoy.py": b"WORD = 'installed'\n",
        "t9ktoy-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: t9ktoy\nVersion: 0.1\n",
        "t9ktoy-0.1.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("t9ktoy-0.1.dist-info/RECORD,,")
    path = root / "t9ktoy-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("t9ktoy-0.1.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_the_packages_it_names_are_installed_before_it_runs(tmp_path: Path) -> None:
    out = io.StringIO()
    training = Training(
        uses_package,
        "fn",
        "python:3.11",
        workers=2,
        packages=[str(wheel(tmp_path))],
        python=sys.executable,
    )
    assert run_locally(training, out=out) == 0, out.getvalue()
    assert sorted(out.getvalue().splitlines()) == [
        "[worker-0] package says installed",
        "[worker-1] package says installed",
    ]
