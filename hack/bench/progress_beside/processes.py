"""The operator's processes: its own and its progress front's."""

from __future__ import annotations

import contextlib
from pathlib import Path

from hack.bench.common.procstat import proc_cpu


def front_pid(operator: int) -> int:
    """The operator's progress front: its child process running front.py."""
    for task in Path(f"/proc/{operator}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                if b"front.py" in Path(f"/proc/{child}/cmdline").read_bytes():
                    return int(child)
    raise RuntimeError(f"the operator (pid {operator}) runs no progress front")


def operator_cpu(operator: int, front: int) -> float:
    """The operator's CPU seconds: its own process's and its front's."""
    return proc_cpu(operator) + proc_cpu(front)
