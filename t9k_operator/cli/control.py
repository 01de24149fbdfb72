"""``t9k pause``, ``t9k resume`` and ``t9k delete``: one verb on one job, named
by ``NAME`` or ``KIND/NAME``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from t9k_operator.cli import render
from t9k_operator.cli.common import EXIT_OK, client_for, split_name


def job_verb(verb: str, past: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        kind, name = split_name(args.name)
        with client_for(args) as client:
            job = client.get(name, kind)
            getattr(client, verb)(name, job["kind"])
        print(f"{render.names([job]).strip()} {past}")
        return EXIT_OK

    return run
