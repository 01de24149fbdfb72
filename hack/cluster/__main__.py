"""The local cluster's command line: ``python3 -m hack.cluster COMMAND``,
from the repository root (the package's docstring says what each does)."""

from __future__ import annotations

import argparse
import os
import sys

import hack.cluster

from .addons import GANGS, KUEUE, TOOLS, Addon, ensure_addon_binaries, parse_gangs
from .binaries import ensure_binaries
from .cache import EXIT_MISSING_BINARIES, MissingBinaries
from .common import log
from .gotool import drop_go_caches
from .lifecycle import down, gang, kueue, status, up
from .multikueue import multikueue
from .state import state_dir


def _parser() -> argparse.ArgumentParser:
    doc = hack.cluster.__doc__ or ""
    parser = argparse.ArgumentParser(
        prog="python3 -m hack.cluster",
        description=doc.split("\n\n")[0],
        epilog="gang schedulers: "
        + ", ".join(f"{g.name} ({g.title})" for g in GANGS.values())
        + f"; and Kueue ({KUEUE.module} {KUEUE.version}, `kueue`, `up --kueue`)",
    )
    parser.add_argument(
        "command",
        choices=[
            "up",
            "down",
            "status",
            "kubeconfig",
            "binaries",
            "gang",
            "kueue",
            "multikueue",
            "tool",
        ],
    )
    parser.add_argument(
        "schedulers",
        nargs="*",
        help="gang: the gang schedulers to start (or all); "
        f"tool: the tools whose folders to print ({', '.join(TOOLS)})",
    )
    parser.add_argument("--name", default=os.environ.get("T9K_CLUSTER_NAME", "t9k"))
    parser.add_argument(
        "--gang",
        help="up: gang schedulers to start as well, comma-separated (default none); "
        "binaries: those to build as well (default all)",
    )
    parser.add_argument(
        "--kueue",
        action=argparse.BooleanOptionalAction,
        help="up: start the Kueue manager as well (default no); "
        "binaries: build it as well (default yes)",
    )
    parser.add_argument(
        "--apiserver-flag",
        action="append",
        default=[],
        metavar="FLAG",
        help="up: a flag added to kube-apiserver's, e.g. "
        "--apiserver-flag=--max-requests-inflight=5 (repeatable; a cluster running with "
        "other ones is recreated)",
    )
    parser.add_argument(
        "--tools",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="binaries: build Helm, kustomize, the monitoring CRDs and SeaweedFS too (default yes)",
    )
    return parser


def _binaries(args: argparse.Namespace) -> None:
    # stdout is the control plane's folder alone: `$(... binaries)/kubectl`.
    print(ensure_binaries(), flush=True)
    addons: list[Addon] = [*parse_gangs(args.gang or "all")]
    if args.kueue is not False:
        addons.append(KUEUE)
    if args.tools:
        addons.extend(TOOLS.values())
    for g in addons:
        log(f"{g.title}: {ensure_addon_binaries(g)}")
    # Once every binary is built: a part built now (the demo's control
    # plane) leaves the module sources to the builds of the rest.
    if len(addons) == len(GANGS) + 1 + len(TOOLS):
        drop_go_caches()


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "up":
        print(
            up(
                args.name,
                parse_gangs(args.gang or "none"),
                with_kueue=bool(args.kueue),
                apiserver_flags=args.apiserver_flag,
            )
        )
    elif args.command == "gang":
        gang(args.name, parse_gangs(args.schedulers or "all"))
    elif args.command == "kueue":
        kueue(args.name)
    elif args.command == "multikueue":
        for role, kubeconfig in multikueue(args.name).items():
            print(f"{role} {kubeconfig}")
    elif args.command == "tool":
        unknown = [t for t in args.schedulers if t not in TOOLS]
        if unknown or not args.schedulers:
            parser.error(f"tool: name one or more of {', '.join(TOOLS)}")
        for t in args.schedulers:  # one folder a line, in the order asked
            print(ensure_addon_binaries(TOOLS[t]), flush=True)
    elif args.command == "down":
        down(args.name)
    elif args.command == "status":
        return status(args.name)
    elif args.command == "kubeconfig":
        print(state_dir(args.name) / "kubeconfig")
    elif args.command == "binaries":
        _binaries(args)
    return 0


def main() -> int:
    parser = _parser()
    args = parser.parse_intermixed_args()
    if args.schedulers and args.command not in ("gang", "tool"):
        parser.error(f"{args.command} takes no schedulers (did you mean --gang?)")
    try:
        return _run(parser, args)
    except MissingBinaries as exc:
        print(exc, file=sys.stderr)
        return EXIT_MISSING_BINARIES


if __name__ == "__main__":
    sys.exit(main())
