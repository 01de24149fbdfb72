"""``--py-spy``: the operator sampled over a run, and its top functions."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

PROFILE_TOP = 15  # entries of --py-spy's tables, by self and by cumulative share


class PySpy:
    """``--py-spy PROGRAM``: py-spy sampling the operator from the first
    submission to the end of the run, the collapsed stacks written to
    ``out``: ``record --gil`` (only the thread holding the GIL, so the samples
    are the operator's Python work, not threads blocked reading a socket)
    ``--nonblocking`` (the process is not paused: py-spy's CPU is its own)."""

    def __init__(self, program: str, pid: int, out: Path, rate: int = 1000) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [
                *(program, "record", "--gil", "--nonblocking", "--format", "raw"),
                *("--rate", str(rate), "--pid", str(pid), "--output", str(out)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)  # attached

    def stop(self) -> tuple[dict[str, list[tuple[str, float, float]]], int]:
        """The run's :func:`profile_top` and its number of samples."""
        self.proc.send_signal(signal.SIGINT)  # py-spy writes its file and exits
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return {}, 0
        return profile_top(self.out) if self.out.exists() else ({}, 0)


def profile_top(
    path: Path, n: int = PROFILE_TOP
) -> tuple[dict[str, list[tuple[str, float, float]]], int]:
    """The functions of py-spy's collapsed stacks (``frame;frame;... count``)
    with the largest self and cumulative shares of the samples: a function is
    ``name (file)``, its lines merged; cumulative counts a stack once however
    often the function recurs in it."""
    own: Counter[str] = Counter()
    cumulative: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        # py-spy's first frame names the thread ("process ..." / "thread ..."): not code.
        frames = [f for f in frames if "(" in f and not f.startswith(("thread ", "process "))]
        if not frames:
            continue
        total += int(count)
        own[frames[-1]] += int(count)
        for f in set(frames):
            cumulative[f] += int(count)
    if not total:
        return {}, 0
    shares = {f: (own[f] / total, cumulative[f] / total) for f in cumulative}
    by_self = sorted(shares, key=lambda f: (-shares[f][0], f))[:n]
    by_cumulative = sorted(shares, key=lambda f: (-shares[f][1], f))[:n]
    return {
        "self": [(f, *shares[f]) for f in by_self],
        "cumulative": [(f, *shares[f]) for f in by_cumulative],
    }, total
