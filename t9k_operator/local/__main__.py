"""``python -m t9k_operator.local FILE [options] [-- COMMAND ARGS...]``, until
``t9k run --local`` takes its place."""

from __future__ import annotations

import argparse
import sys

from t9k_operator.local import add_arguments, main

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        prog="python -m t9k_operator.local",
        description="Run a job's replicas as local processes (see docs/local-run.md).",
    )
    add_arguments(parser)
    # Intermixed: options may also come between FILE and `-- COMMAND ARGS`.
    sys.exit(main(parser.parse_intermixed_args()))
