"""A ``t9k console`` process for the console's integration tests: started as a
user starts it (its console script), its output into a file, and the address
it prints read from there."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.integration.cluster import Cluster

T9K = Path(sys.executable).with_name("t9k")
URL = re.compile(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)")


@contextlib.contextmanager
def printing(
    command: Sequence[str],
    out: Path,
    printed: re.Pattern[str],
    *,
    seconds: float,
    env: Mapping[str, str] | None = None,
) -> Iterator[re.Match[str]]:
    """``command`` started, its output (stdout and stderr) into ``out``: the
    first match of ``printed`` in it (the test fails if the process ends, or
    ``seconds`` pass, before); the process is stopped on leaving."""
    with out.open("w") as sink:
        proc = subprocess.Popen(
            list(command), stdout=sink, stderr=subprocess.STDOUT, text=True, env=env
        )
    try:
        deadline = time.monotonic() + seconds
        while not (match := printed.search(out.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"{Path(command[0]).name} printed no {printed.pattern}:\n{out.read_text()}"
                )
            time.sleep(0.1)
        yield match
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def t9k_console(
    cluster: Cluster, namespace: str, out: Path
) -> contextlib.AbstractContextManager[re.Match[str]]:
    """``t9k console --no-browser`` as a user starts it (the admin kubeconfig):
    the match of :data:`URL` (base URL, token) once it prints it, that is once
    its informers have listed and it listens."""
    command = [str(T9K), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace]
    return printing([*command, "console", "--no-browser", "--port", "0"], out, URL, seconds=60)
