"""A Python function as a job: :meth:`Client.train` and :func:`run_locally`.

The function's source (``inspect.getsource``, so it must be defined in a
file, and self-contained: its imports inside its body) becomes an entry
script, :data:`ENTRY`, written beside the rest of the job's workdir (an
optional directory, packed as ``--workdir`` packs it). The job is the
simplest one of its kind, as ``t9k create`` writes it, running ``python
t9k_train.py`` in every replica; the script first installs the packages the
call names (``pip install --target .t9k-packages``, once per pod, the
replicas of a pod waiting on a lock), then calls the function with the
call's keyword arguments (JSON). :func:`run_locally` lays out the same
archive in a temporary directory and runs the job there with ``t9k run
--local``, so a function behaves alike on this machine and on the cluster
(docs/workdir.md).
"""

from __future__ import annotations

import inspect
import json
import os
import tempfile
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from t9k_operator.kinds.flags import JobRequest
from t9k_operator.local.cli import run as local_run
from t9k_operator.sdk.build import build_job
from t9k_operator.sdk.errors import BadJob
from t9k_operator.sdk.workdirs import Packed, part

ENTRY = "t9k_train.py"

_PRELUDE = '''\
# Written by t9k: runs {name}() as every replica of the job (docs/workdir.md).
import json
import sys

PACKAGES = {packages}
KWARGS = json.loads({kwargs})


def _install_packages():
    """The packages the job names, installed once per pod beside the script."""
    if not PACKAGES:
        return
    import fcntl
    import os
    import subprocess

    target = os.path.abspath(".t9k-packages")
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(target, ".installed")):
            subprocess.check_call(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 "--target", target, *PACKAGES]
            )
            open(os.path.join(target, ".installed"), "w").close()
    sys.path.insert(0, target)


_install_packages()

'''


@dataclass(frozen=True)
class Training:
    """What :meth:`Client.train` runs: the function, its arguments and where."""

    func: Callable[..., Any]
    name: str
    image: str
    kind: str = "pytorch"
    workers: int = 1
    gpus: int = 0
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    packages: Sequence[str] = ()
    workdir: str | os.PathLike[str] | None = None
    python: str = "python"
    """The interpreter the replicas run the script with."""


def entry_script(
    func: Callable[..., Any], kwargs: Mapping[str, Any], packages: Sequence[str]
) -> str:
    """The script that installs ``packages`` and calls ``func(**kwargs)``."""
    if not inspect.isfunction(func) or func.__name__ == "<lambda>":
        raise BadJob("train() takes a function defined with def, not a lambda or another callable")
    if inspect.iscoroutinefunction(func):
        raise BadJob(f"{func.__name__} is async: train() calls a plain function")
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        raise BadJob(f"the source of {func.__name__} cannot be read: {exc}") from None
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def "))
    try:
        encoded = json.dumps(dict(kwargs), sort_keys=True)
    except TypeError as exc:
        raise BadJob(f"the arguments of {func.__name__} must be JSON: {exc}") from None
    prelude = _PRELUDE.format(
        name=func.__name__, packages=repr(list(packages)), kwargs=repr(encoded)
    )
    body = "\n".join(lines[start:])  # without decorators: the function as written
    return f'{prelude}{body}\n\n\nif __name__ == "__main__":\n    {func.__name__}(**KWARGS)\n'


def prepare(training: Training) -> tuple[dict[str, Any], Packed]:
    """The job's manifest and its packed workdir (the entry script included)."""
    script = entry_script(training.func, training.kwargs, training.packages)
    manifest = build_job(
        JobRequest(
            kind=training.kind,
            name=training.name,
            image=training.image,
            command=[training.python, ENTRY],
            workers=training.workers,
            gpus=training.gpus,
        )
    )
    workdir = part()
    try:
        archive = workdir.pack(training.workdir, {ENTRY: script.encode()})
        workdir.check_size(archive, workdir.limit)
    except workdir.error as exc:
        raise BadJob(str(exc)) from None
    return manifest, archive


def run_locally(
    training: Training, *, out: IO[str] | None = None, err: IO[str] | None = None
) -> int:
    """Run ``training`` on this machine (``t9k run --local``) from the workdir
    it would have on the cluster; its exit code."""
    manifest, archive = prepare(training)
    with tempfile.TemporaryDirectory(prefix="t9k-train-") as root:
        part().unpack(archive, root)
        return local_run(manifest, workdir=root, out=out, err=err)
