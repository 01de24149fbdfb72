"""The benchmarks' progress lines, on stderr: stdout is their figures."""

from __future__ import annotations

import sys


def log(msg: str, who: str = "bench") -> None:
    print(f"[{who}] {msg}", file=sys.stderr, flush=True)
