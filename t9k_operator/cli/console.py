"""``t9k console``: the web console's flags; its body is
:mod:`t9k_operator.console`, imported only when the command runs (the rest of
``t9k`` never loads the web server)."""

from __future__ import annotations

import argparse


def console_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="the port to listen on (default: 8890, or any free port when it is taken)",
    )
    p.add_argument(
        "--address",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only)",
    )
    p.add_argument("--no-browser", action="store_true", help="print the URL, do not open it")
    p.add_argument(
        "--secure-cookie",
        action="store_true",
        help="mark the session cookie Secure (behind a proxy that serves https)",
    )


def cmd_console(args: argparse.Namespace) -> int:
    from t9k_operator.console.serve import run

    return run(args)
