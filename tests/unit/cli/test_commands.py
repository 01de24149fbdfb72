"""The t9k command without a cluster: its help, flags, exit codes, durations,
the dry run, completion, and the SDK's mapping of the client's errors."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from t9k_operator import kube
from t9k_operator.cli import main
from t9k_operator.cli.commands import COMMANDS, build_parser
from t9k_operator.cli.common import parse_duration
from t9k_operator.sdk import errors
from t9k_operator.sdk.client import context_namespace


def test_help_has_every_command_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert f"    {command.name}" in out
        assert f"  {command.example}" in out
        with pytest.raises(SystemExit):
            main([command.name, "--help"])
        sub = capsys.readouterr().out
        assert f"example:\n  {command.example}" in sub
        assert "--kubeconfig" in sub and "--namespace" in sub


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "commands:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("5m", 300), ("1h30m", 5400), ("1.5s", 1.5)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5d", "m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration(text)


def test_global_flags_go_before_or_after_the_command() -> None:
    parser = build_parser()
    before = parser.parse_args(["-n", "team", "--context", "c", "list", "-A"])
    after = parser.parse_args(["list", "-A", "-n", "team", "--context", "c"])
    for args in (before, after):
        assert (args.namespace, args.context, args.all_namespaces) == ("team", "c", True)


def test_create_dry_run_prints_the_job_without_a_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    code = main(
        ["--kubeconfig", "/nonexistent", "create", "colossalai", "c", "--image", "i",
         "--workers", "2", "--gpus", "4", "--dry-run", "--", "python", "train.py", "--x"]
    )  # fmt: skip
    assert code == 0
    job = yaml.safe_load(capsys.readouterr().out)
    assert job["kind"] == "ColossalAIJob"
    assert job["spec"]["worker"]["command"] == ["train.py", "--x"]
    assert "namespace" not in job["metadata"]


def test_only_create_takes_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["logs", "x", "--", "y"])
    assert exited.value.code == 2
    assert "only t9k create and t9k run take -- COMMAND ARGS" in capsys.readouterr().err


def test_run_local_takes_the_program_after_the_dashes(tmp_path: Path) -> None:
    """`t9k run --local FILE -- COMMAND`: each replica runs COMMAND with the
    environment its pod would have; MSJob's rule decides the exit code."""
    sample = Path(__file__).parents[3] / "manifests" / "samples" / "msjob-basic.yaml"
    ok = tmp_path / "ok.py"
    ok.write_text("import os, sys; sys.exit(0 if os.environ.get('MS_ROLE') else 3)\n")
    assert main(["run", "--local", str(sample), "--", sys.executable, str(ok)]) == 0
    bad = tmp_path / "bad.py"
    bad.write_text("import sys; sys.exit(3)\n")
    assert main(["run", "--local", str(sample), "--", sys.executable, str(bad)]) != 0


def test_run_without_local_says_how(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "job.yaml"]) == 2
    assert "say --local" in capsys.readouterr().err


def test_an_error_is_one_line_on_stderr_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["create", "pytorch", "p", "--image", "i", "--workers", "0", "--", "x"])
    assert code == 1
    assert capsys.readouterr().err == "error: --workers must be at least 1\n"


def test_no_kubeconfig_is_a_connection_error(
    capsys: pytest.CaptureFixture[str], tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["--kubeconfig", "/nonexistent/kubeconfig", "list"]) == 1
    assert capsys.readouterr().err.startswith("error: cannot load Kubernetes configuration")


def test_completion_completes_commands_and_flags() -> None:
    script = build_parser()
    from t9k_operator.cli.completion import completion_script

    text = completion_script("bash", script)
    probe = 'COMP_WORDS=(t9k top ""); COMP_CWORD=2; __t9k_complete; echo "${COMPREPLY[@]}"'
    out = subprocess.run(["bash", "-c", f"{text}\n{probe}"], capture_output=True, text=True)
    assert sorted(out.stdout.split()) == sorted(
        ["--all-namespaces", "--context", "--help", "--kubeconfig", "--namespace", "-A", "-h",
         "-n", "--prometheus-url", "jobs", "nodes"]
    )  # fmt: skip
    assert "bashcompinit" in completion_script("zsh", script)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (kube.NotFound("x", status=404), errors.NotFound),
        (kube.AlreadyExists("x", status=409, reason="AlreadyExists"), errors.AlreadyExists),
        (kube.Conflict("x", status=409, reason="Conflict"), errors.Conflict),
        (kube.Invalid("x", status=422, reason="Invalid"), errors.Invalid),
        (kube.Forbidden("x", status=403), errors.Forbidden),
        (kube.Unauthorized("x", status=401), errors.Unauthorized),
        (kube.TransportError("x"), errors.ConnectionFailed),
        (kube.ApiError("cannot load"), errors.ConnectionFailed),
        (
            kube.ServerError("failed to create typed patch object (a): b", status=500),
            errors.Invalid,
        ),
        (kube.ServerError("etcd", status=500), errors.ApiRefused),
    ],
)
def test_client_errors_become_typed_sdk_errors_with_their_message(
    raised: kube.ApiError, expected: type[errors.T9kError]
) -> None:
    mapped = errors.from_api(raised)
    assert type(mapped) is expected
    assert mapped.message == raised.message


def test_the_namespace_comes_from_the_kubeconfig_context(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "config"
    path.write_text(
        yaml.safe_dump(
            {
                "current-context": "a",
                "contexts": [
                    {"name": "a", "context": {"namespace": "team-a"}},
                    {"name": "b", "context": {}},
                ],
            }
        )
    )
    assert context_namespace(str(path), None) == "team-a"
    assert context_namespace(str(path), "b") == "default"
    assert context_namespace(str(path) + ".missing", None) == "default"


def test_the_readme_shows_every_command_with_an_example() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[3] / "README.md").read_text()
    section = readme.split("\n## Using it\n", 1)[1].split("\n## ", 1)[0]
    for command in COMMANDS:
        assert f"t9k {command.name}" in section, command.name
