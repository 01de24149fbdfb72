"""The progress bench's command line: the parts asked for, in order."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import hack.bench.progress as package

from .connections import part_connections
from .hang import part_hang
from .load import part_fairness, part_scale


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(
        prog="python -m hack.bench.progress", description=(package.__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--parts", default="connections,hang,fairness,scale")
    p.add_argument("--reporters", default="1,8,32", help="connections: counts of reporters")
    p.add_argument("--seconds", type=float, default=5.0, help="connections: seconds a count")
    p.add_argument("--fair-seconds", type=float, default=30.0)
    p.add_argument("--scale-seconds", type=float, default=120.0)
    p.add_argument("--ramp", type=float, default=240.0, help="scale: seconds ranks connect over")
    p.add_argument("--scale-pods", type=int, default=1250, help="scale: pods of 8 ranks")
    args = p.parse_args(argv)
    parts = args.parts.split(",")
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="t9k-bench-progress-") as tmp:
        if "connections" in parts:
            counts = [int(x) for x in args.reporters.split(",")]
            part_connections(Path(tmp), counts, args.seconds)
        if "hang" in parts:
            part_hang()
        if "fairness" in parts:
            part_fairness(Path(tmp), args.fair_seconds)
        if "scale" in parts:
            part_scale(Path(tmp), args.scale_seconds, args.ramp, args.scale_pods)
    return 0
