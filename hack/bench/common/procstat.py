"""What the benchmarks read of a process or the machine from /proc."""

from __future__ import annotations

import os
from pathlib import Path


def proc_cpu(pid: int) -> float:
    """A process's CPU seconds (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_kib(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` figure in KiB (``VmRSS``, ``VmHWM``); 0 when absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def machine_cpu() -> tuple[float, float]:
    """The whole machine's (busy, all) CPU seconds since boot, over every core
    (``/proc/stat``; idle and iowait are not busy)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]
    return (sum(ticks[:8]) - idle) / hz, sum(ticks[:8]) / hz
