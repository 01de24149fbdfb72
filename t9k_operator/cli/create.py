"""``t9k submit`` and ``t9k create``: jobs onto the cluster, from a file or from flags."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from t9k_operator.cli import render
from t9k_operator.cli.common import EXIT_OK, client_for, output_arg, print_objects
from t9k_operator.kinds.registry import KINDS
from t9k_operator.sdk import JobRequest, T9kError, build_job, workdirs


def submit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f", "--filename", required=True, help="a YAML or JSON file of jobs, or - for stdin"
    )
    workdir_arg(p)
    output_arg(p, ("json", "yaml", "name"))


def cmd_submit(args: argparse.Namespace) -> int:
    if args.filename == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(args.filename) as f:
                text = f.read()
        except OSError as exc:
            raise T9kError(f"cannot read {args.filename}: {exc.strerror}") from None
    archive = workdirs.packed(args.workdir) if args.workdir is not None else None
    with client_for(args) as client:
        applied = client.submit(text, workdir=archive)
    print_objects(applied, args.output, "submitted")
    return EXIT_OK


def create_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=[k.cli_name for k in KINDS], help="the kind of job")
    p.add_argument("name", metavar="NAME", help="the job's name")
    p.add_argument("--image", required=True, help="the training container's image")
    p.add_argument("--workers", type=int, default=1, help="number of workers (default 1)")
    p.add_argument(
        "--gpus", type=int, default=0, help="GPUs per worker (nvidia.com/gpu; default 0)"
    )
    p.add_argument("--torchrun", action="store_true", help="pytorch: launch with torchrun")
    p.add_argument("--queue", help="the queue the job waits in (gang scheduler or Kueue)")
    p.add_argument("--priority", type=int, help="priority in its queue (0-100; needs --queue)")
    p.add_argument(
        "--tensorboard",
        metavar="PVC/PATH",
        help="a TensorBoard on the logs in this claim and directory",
    )
    p.add_argument("--tensorboard-image", default=None, help="the TensorBoard's image")
    p.add_argument(
        "--annotation",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an annotation of every replica's pods (repeatable)",
    )
    p.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label of the job (repeatable)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the job, do not create it")
    workdir_arg(p)
    output_arg(p, ("json", "yaml", "name"))
    # After "--", the rest of the line is the command (main() splits it off: argparse's
    # REMAINDER would swallow the flags that follow NAME).
    p.set_defaults(argv=[])
    p.usage = "t9k create KIND NAME --image IMAGE [flags] -- COMMAND [ARGS...]"


def workdir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workdir",
        metavar="DIR",
        help="pack DIR (less what .gitignore and .t9kignore leave out) for every replica to "
        "find unpacked at its working directory, /t9k/workdir (docs/workdir.md)",
    )


def _pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key:
            raise T9kError(f"{flag} wants KEY=VALUE, not {v!r}")
        out[key] = value
    return out


def cmd_create(args: argparse.Namespace) -> int:
    command = list(args.argv)
    extra: dict[str, Any] = {}
    if args.tensorboard_image:
        extra["tensorboard_image"] = args.tensorboard_image
    manifest = build_job(
        JobRequest(
            kind=args.kind,
            name=args.name,
            image=args.image,
            command=command,
            workers=args.workers,
            gpus=args.gpus,
            namespace=None if args.dry_run and not args.namespace else args.namespace,
            torchrun=args.torchrun,
            queue=args.queue,
            priority=args.priority,
            tensorboard=args.tensorboard,
            labels=_pairs(args.label, "--label"),
            annotations=_pairs(args.annotation, "--annotation"),
            **extra,
        )
    )
    archive = workdirs.packed(args.workdir) if args.workdir is not None else None
    if args.dry_run:
        if archive is not None:
            manifest = workdirs.annotated(manifest)
        sys.stdout.write(
            render.dump([manifest], args.output if args.output in ("json", "yaml") else "yaml")
        )
        return EXIT_OK
    with client_for(args) as client:
        created = client.create(manifest, workdir=archive)
    print_objects([created], args.output, "created")
    return EXIT_OK
