"""The options of ``t9k run --local``, and :func:`run`, the same for the SDK."""

from __future__ import annotations

import argparse
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import yaml

from t9k_operator.kinds import registry
from t9k_operator.local.plan import LocalJob, LocalRunError, plan
from t9k_operator.local.runner import TAG, Runner, describe

KINDS = frozenset(k.crd.kind for k in registry.KINDS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``t9k run --local`` (FILE, then ``-- COMMAND ARGS`` to
    replace the training program).

    argparse before Python 3.13 takes ``-- COMMAND ARGS`` only when no option
    stands between FILE and ``--``, unless the parser parses with
    ``parse_intermixed_args`` (as ``python -m t9k_operator.local`` does)."""
    parser.add_argument(
        "file",
        metavar="FILE",
        help="the job's manifest (YAML or JSON; '-' reads standard input)",
    )
    parser.add_argument(
        "program",
        metavar="-- COMMAND ARGS",
        nargs="*",
        default=[],
        help=(
            "run this instead of the job's training program, with each replica's "
            "environment: `-- python train.py --epochs 1` (see docs/local-run.md for "
            "where each kind puts it)"
        ),
    )
    parser.add_argument(
        "--python",
        metavar="PATH",
        help=(
            "the interpreter for what a launcher runs with Python (DeepSpeed's run.python and "
            "run.module, ColossalAI's worker.command); default: python on PATH"
        ),
    )
    parser.add_argument(
        "--workdir",
        metavar="DIR",
        help="the directory every replica runs in (default: the current one); where the job "
        "names /t9k/workdir, the cluster's workdir, it names DIR (docs/workdir.md)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="once the job has succeeded, how long replicas still running may take to end "
        "on their own before they are stopped (default: 3)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print each replica's command and environment, run nothing",
    )
    parser.add_argument(
        "--keep-files",
        action="store_true",
        help="keep the run's directory (hostfile, .deepspeed_env) and print its path",
    )


def load_manifest(source: str | Path | Mapping[str, Any], stdin: IO[str] | None = None) -> Any:
    """The one job in ``source``: a mapping, a path, or '-' for standard input."""
    if isinstance(source, Mapping):
        return dict(source)
    if str(source) == "-":
        text = (stdin or sys.stdin).read()
    else:
        try:
            text = Path(source).read_text()
        except OSError as exc:
            raise LocalRunError(f"cannot read {source}: {exc.strerror}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError as exc:
        raise LocalRunError(f"{source} is not YAML: {exc}") from None
    jobs = [d for d in docs if d.get("kind") in KINDS]
    if len(jobs) != 1:
        found = ", ".join(f"{d.get('kind')} {d.get('metadata', {}).get('name')}" for d in jobs)
        raise LocalRunError(
            f"{source} holds {len(jobs)} jobs{': ' + found if found else ''}; "
            f"local run takes exactly one ({', '.join(sorted(KINDS))})"
        )
    return jobs[0]


class _Ports:
    """Free ports of this machine, held until all are chosen so none repeats."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []

    def __call__(self) -> int:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        self.sockets.append(s)
        return int(s.getsockname()[1])

    def release(self) -> None:
        for s in self.sockets:
            s.close()


def default_python() -> str:
    return shutil.which("python") or shutil.which("python3") or sys.executable


def prepare(
    manifest: str | Path | Mapping[str, Any],
    program: Sequence[str] = (),
    *,
    run_dir: str,
    python: str | None = None,
    workdir: str | None = None,
) -> LocalJob:
    """The local job of ``manifest``, its files written under ``run_dir``."""
    ports = _Ports()
    try:
        job = plan(
            load_manifest(manifest),
            run_dir,
            ports,
            program=program,
            python=python or default_python(),
            workdir=workdir,
        )
    finally:
        ports.release()
    for rel, content in job.files.items():
        path = Path(run_dir) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return job


def run(
    manifest: str | Path | Mapping[str, Any],
    program: Sequence[str] = (),
    *,
    python: str | None = None,
    workdir: str | None = None,
    grace: float = 3.0,
    stop_timeout: float = 5.0,
    dry_run: bool = False,
    keep_files: bool = False,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """Run the job of ``manifest`` (a path, '-' or a parsed mapping) locally and
    return its exit code (the SDK's entry point; :func:`main` is the CLI's).
    Raises :class:`LocalRunError` when the manifest cannot be run locally."""
    err = err or sys.stderr
    if workdir is not None:
        if not Path(workdir).is_dir():
            raise LocalRunError(f"workdir {workdir}: not a directory")
        workdir = str(Path(workdir).resolve())
    run_dir = tempfile.mkdtemp(prefix="t9k-local-")
    try:
        job = prepare(manifest, program, run_dir=run_dir, python=python, workdir=workdir)
        for note in job.notes:
            err.write(f"{TAG} note: {note}\n")
        if keep_files:
            err.write(f"{TAG} the run's files are in {run_dir}\n")
        if dry_run:
            (out or sys.stdout).write(describe(job))
            return 0
        return Runner(
            job, cwd=workdir, out=out, err=err, grace=grace, stop_timeout=stop_timeout
        ).run()
    finally:
        if not keep_files:
            shutil.rmtree(run_dir, ignore_errors=True)


def main(args: argparse.Namespace) -> int:
    """``t9k run --local``: the job's exit code, or 2 when it cannot run locally."""
    program = list(args.program or [])
    if program[:1] == ["--"]:
        program = program[1:]
    try:
        return run(
            args.file,
            program,
            python=args.python,
            workdir=args.workdir,
            grace=args.grace,
            dry_run=args.dry_run,
            keep_files=args.keep_files,
        )
    except LocalRunError as exc:
        sys.stderr.write(f"{TAG} error: {exc}\n")
        return 2
