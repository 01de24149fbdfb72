"""CPU seconds by process over a run, and the machine's."""

from __future__ import annotations

import contextlib
import time

from hack.bench.common.procstat import machine_cpu, proc_cpu


class CpuMeter:
    """CPU seconds by process over a run, and the machine's: who spends the
    machine's cores while jobs start (the cluster's processes from its
    cluster.json, the operator, this bench with its stand-in kubelet)."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.marks: dict[str, dict[str, float]] = {}

    def _now(self) -> dict[str, float]:
        out = {}
        for name, pid in self.pids.items():
            with contextlib.suppress(OSError):
                out[name] = proc_cpu(pid)
        out["machine"], out["machine_all"] = machine_cpu()
        out["wall"] = time.monotonic()
        return out

    def mark(self, label: str) -> None:
        self.marks[label] = self._now()

    def spent(self, since: str, until: str) -> dict[str, float]:
        a, b = self.marks.get(since), self.marks.get(until)
        if a is None or b is None:
            return {}
        return {k: b[k] - a[k] for k in b if k in a}
