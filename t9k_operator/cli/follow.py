"""``t9k wait`` and ``t9k logs``: following a job as it runs, by its state or
by its replicas' output."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import Any

from t9k_operator.cli import dispatch, render
from t9k_operator.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_TIMEOUT,
    client_for,
    name_arg,
    parse_duration,
    split_name,
    use_colour,
)
from t9k_operator.sdk import WaitTimeout, views


def wait_args(p: argparse.ArgumentParser) -> None:
    name_arg(p)
    p.add_argument(
        "--for",
        dest="until",
        default="Finished",
        choices=("Running", "Succeeded", "Finished", "Paused"),
        help="the state to wait for (default Finished: succeeded or failed)",
    )
    p.add_argument(
        "--timeout",
        type=parse_duration,
        help="give up after this long (e.g. 30s, 10m); default never",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def cmd_wait(args: argparse.Namespace) -> int:
    kind, name = split_name(args.name)
    started = time.monotonic()

    def progress(job: dict[str, Any]) -> None:
        if args.quiet:
            return
        phase = views.phase(job) or "<unknown>"
        why = views.reason(job)
        elapsed = views.human_duration(time.monotonic() - started)
        print(f"[{elapsed}] {name}: {phase}" + (f" ({why})" if why else ""), file=sys.stderr)

    with client_for(args) as client:
        try:
            job = client.wait(name, args.until, timeout=args.timeout, kind=kind, progress=progress)
        except WaitTimeout as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return EXIT_TIMEOUT
    phase = views.phase(job)
    print(f"{render.names([job]).strip()} {phase.lower() if phase else 'done'}")
    if args.until == "Finished" and phase == "Failed":
        print(
            f"error: job {name} failed: {views.reason(job)}: {views.message(job)}", file=sys.stderr
        )
        return EXIT_ERROR
    return EXIT_OK


def logs_args(p: argparse.ArgumentParser) -> None:
    name_arg(p)
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--replica", help="one replica (e.g. worker-1, master-0, launcher); default: the leader"
    )
    which.add_argument(
        "--all", action="store_true", help="every replica, interleaved, each line prefixed"
    )
    p.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep reading, across restarts, until the job ends",
    )
    p.add_argument("--since", type=parse_duration, help="only lines newer than this (e.g. 10m)")
    p.add_argument(
        "--prefix",
        action="store_true",
        help="prefix each line with its replica (default with --all)",
    )


def cmd_logs(args: argparse.Namespace) -> int:
    kind, name = split_name(args.name)
    prefix = args.prefix or args.all
    colour = use_colour(sys.stdout)
    palette = ("36", "35", "34", "33", "32", "31")
    seen: dict[str, str] = {}
    with client_for(args) as client:
        job = client.get(name, kind)
        if views.handed_over(job):  # on MultiKueue's manager: its pods are in a worker cluster
            again = _again(args, str(job["metadata"]["namespace"]))
            text = dispatch.logs_elsewhere(
                job, dispatch.readable(lambda: client.workloads(job)), again
            )
            print(f"error: {text}", file=sys.stderr)
            return EXIT_ERROR
        since = int(args.since) if args.since else None
        for line in client.logs(
            name,
            replica=args.replica,
            all_replicas=args.all,
            follow=args.follow,
            since_seconds=since,
            kind=kind,
        ):
            if line.info:
                print(f"[{line.replica}] {line.text}", file=sys.stderr)
                continue
            if prefix:
                tag = f"[{line.replica}]"
                if colour:
                    code = seen.setdefault(line.replica, palette[len(seen) % len(palette)])
                    tag = f"\x1b[{code}m{tag}\x1b[0m"
                sys.stdout.write(f"{tag} {line.text}\n")
            else:
                sys.stdout.write(line.text + "\n")
            sys.stdout.flush()
    return EXIT_OK


def _again(args: argparse.Namespace, namespace: str) -> str:
    """The same ``t9k logs`` command, for another cluster's kubeconfig or context."""
    words = ["t9k", "logs", args.name, "-n", namespace]
    words += ["--replica", args.replica] if args.replica else []
    words += ["--all"] * bool(args.all) + ["-f"] * bool(args.follow) + ["--prefix"] * args.prefix
    if args.since:
        words += ["--since", f"{args.since:g}s"]
    return shlex.join(words)
