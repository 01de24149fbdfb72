"""What the ``t9k`` command groups share: the :class:`Command` record each
subcommand is, the exit codes, the argument helpers (a job's name, ``-o``,
durations) and the helpers that reach the cluster and print what came back."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from t9k_operator.cli import render
from t9k_operator.sdk import Client

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_TIMEOUT = 0, 1, 2, 3


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, an example, its flags and its body.

    ``t9k run`` (local runs, t9k_operator/local) joins
    :data:`~t9k_operator.cli.commands.COMMANDS` with
    its own ``add_arguments(parser)`` and ``main(args) -> int``.
    """

    name: str
    help: str
    example: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    main: Callable[[argparse.Namespace], int]


def use_colour(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR")


def client_for(args: argparse.Namespace) -> Client:
    return Client(args.kubeconfig, args.context, args.namespace)


def split_name(value: str) -> tuple[str | None, str]:
    """``NAME`` or ``KIND/NAME`` (``pytorch/mnist``, ``pytj/mnist``)."""
    kind, _, name = value.rpartition("/")
    return (kind or None), name


_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?$")


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1h30m`` as seconds."""
    match = _DURATION.match(text.strip())
    if not text.strip() or not match or not any(match.groups()):
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 30s, 5m, 1h)")
    h, m, s = match.groups()
    return int(h or 0) * 3600 + int(m or 0) * 60 + float(s or 0)


def name_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the job's name, or KIND/NAME (e.g. pytorch/mnist)")


def output_arg(p: argparse.ArgumentParser, choices: Sequence[str]) -> None:
    p.add_argument("-o", "--output", choices=choices, help="output format")


def print_objects(objs: Sequence[dict[str, Any]], fmt: str | None, verb: str) -> None:
    if fmt in ("json", "yaml"):
        sys.stdout.write(render.dump(objs, fmt))
    elif fmt == "name":
        sys.stdout.write(render.names(objs))
    else:
        for line in render.names(objs).splitlines():
            print(f"{line} {verb}")
