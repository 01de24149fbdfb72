"""``t9k run --local``: a job's replicas as processes on this machine, through
the local runner (:mod:`t9k_operator.local`)."""

from __future__ import annotations

import argparse
import sys

from t9k_operator import local
from t9k_operator.cli.common import EXIT_USAGE


def run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--local",
        action="store_true",
        help="run each replica as a process on this machine, with the environment the "
        "operator gives its pod (docs/local-run.md); the only way `t9k run` runs "
        "(`t9k submit` runs a job on the cluster)",
    )
    local.add_arguments(p)


def cmd_run(args: argparse.Namespace) -> int:
    if not args.local:
        print(
            "error: t9k run runs a job on this machine only: say --local "
            "(t9k submit -f FILE runs it on the cluster)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return local.main(args)
