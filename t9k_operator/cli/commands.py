"""``t9k``: argparse, one function per command, kubectl's conventions.

Global flags (``--kubeconfig``, ``--context``, ``-n/--namespace``) go before
or after the command. Exit codes: 0 done; 1 the request failed (refused by
the API server, not found, the job failed); 2 bad usage; 3 ``wait`` timed out.
Errors go to stderr as ``error: <the API server's message>``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from t9k_operator import local
from t9k_operator.cli import render
from t9k_operator.cli.completion import completion_script
from t9k_operator.kinds.registry import KINDS
from t9k_operator.sdk import (
    Client,
    JobRequest,
    T9kError,
    WaitTimeout,
    build_job,
    views,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_TIMEOUT = 0, 1, 2, 3


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, an example, its flags and its body.

    ``t9k run`` (local runs, t9k_operator/local) joins :data:`COMMANDS` here with
    its own ``add_arguments(parser)`` and ``main(args) -> int``.
    """

    name: str
    help: str
    example: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    main: Callable[[argparse.Namespace], int]


# -- shared helpers ---------------------------------------------------------------------


def _colour(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _client(args: argparse.Namespace) -> Client:
    return Client(args.kubeconfig, args.context, args.namespace)


def _split_name(value: str) -> tuple[str | None, str]:
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


def _name_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the job's name, or KIND/NAME (e.g. pytorch/mnist)")


def _output(p: argparse.ArgumentParser, choices: Sequence[str]) -> None:
    p.add_argument("-o", "--output", choices=choices, help="output format")


def _print_objects(objs: Sequence[dict[str, Any]], fmt: str | None, verb: str) -> None:
    if fmt in ("json", "yaml"):
        sys.stdout.write(render.dump(objs, fmt))
    elif fmt == "name":
        sys.stdout.write(render.names(objs))
    else:
        for line in render.names(objs).splitlines():
            print(f"{line} {verb}")


# -- submit, create ---------------------------------------------------------------------


def _submit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f", "--filename", required=True, help="a YAML or JSON file of jobs, or - for stdin"
    )
    _output(p, ("json", "yaml", "name"))


def cmd_submit(args: argparse.Namespace) -> int:
    if args.filename == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(args.filename) as f:
                text = f.read()
        except OSError as exc:
            raise T9kError(f"cannot read {args.filename}: {exc.strerror}") from None
    with _client(args) as client:
        applied = client.submit(text)
    _print_objects(applied, args.output, "submitted")
    return EXIT_OK


def _create_args(p: argparse.ArgumentParser) -> None:
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
    _output(p, ("json", "yaml", "name"))
    # After "--", the rest of the line is the command (main() splits it off: argparse's
    # REMAINDER would swallow the flags that follow NAME).
    p.set_defaults(argv=[])
    p.usage = "t9k create KIND NAME --image IMAGE [flags] -- COMMAND [ARGS...]"


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
    if args.dry_run:
        sys.stdout.write(
            render.dump([manifest], args.output if args.output in ("json", "yaml") else "yaml")
        )
        return EXIT_OK
    with _client(args) as client:
        created = client.create(manifest)
    _print_objects([created], args.output, "created")
    return EXIT_OK


# -- list, describe ---------------------------------------------------------------------


def _list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-A", "--all-namespaces", action="store_true", help="jobs of every namespace")
    p.add_argument("--kind", action="append", help="only jobs of this kind (repeatable)")
    p.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="after the table, print each job again when it changes",
    )
    p.add_argument("--interval", type=parse_duration, default=2.0, help=argparse.SUPPRESS)
    _output(p, ("json", "yaml", "wide", "name"))


def cmd_list(args: argparse.Namespace) -> int:
    with _client(args) as client:
        jobs = client.list(all_namespaces=args.all_namespaces, kinds=args.kind)
        if args.output in ("json", "yaml"):
            doc = {"apiVersion": "v1", "kind": "List", "items": jobs}
            sys.stdout.write(render.dump([doc], args.output))
            return EXIT_OK
        if args.output == "name":
            sys.stdout.write(render.names(jobs))
            return EXIT_OK
        wide = args.output == "wide"
        colour = _colour(sys.stdout)
        headers = render.job_headers(args.all_namespaces, wide)
        pods = client.pods(all_namespaces=args.all_namespaces)
        rows = {_key(j): _row(j, pods, args) for j in jobs}
        if not rows and not args.watch:
            where = "any namespace" if args.all_namespaces else f"namespace {client.namespace}"
            print(f"No jobs found in {where}.", file=sys.stderr)
            return EXIT_OK
        widths = render.widths(headers, list(rows.values()))
        sys.stdout.write(render.table(headers, list(rows.values()), colour, widths=widths))
        sys.stdout.flush()
        if not args.watch:
            return EXIT_OK
        # kubectl's --watch: a job's row again when it changes (not for the
        # DURATION and AGE that tick by themselves), "deleted" when it goes.
        ticking = {headers.index("DURATION"), *([headers.index("AGE")] if wide else [])}

        def steady(row: list[str]) -> list[str]:
            return [c for i, c in enumerate(row) if i not in ticking]

        while True:
            time.sleep(args.interval)
            jobs = client.list(all_namespaces=args.all_namespaces, kinds=args.kind)
            pods = client.pods(all_namespaces=args.all_namespaces)
            now_rows = {_key(j): _row(j, pods, args) for j in jobs}
            for key, row in now_rows.items():
                if key not in rows or steady(rows[key]) != steady(row):
                    sys.stdout.write(
                        render.table(headers, [row], colour, widths=widths, header=False)
                    )
            for key in rows.keys() - now_rows.keys():
                print(f"{key[1]}/{key[2]} deleted")
            sys.stdout.flush()
            rows = now_rows


def _key(job: dict[str, Any]) -> tuple[str, str, str]:
    return (str(job["metadata"].get("namespace")), str(job["kind"]), str(job["metadata"]["name"]))


def _row(job: dict[str, Any], pods: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    summary = views.summarize(job, pods, views.now_utc())
    return render.job_row(summary, args.all_namespaces, args.output == "wide")


def _describe_args(p: argparse.ArgumentParser) -> None:
    _name_arg(p)


def cmd_describe(args: argparse.Namespace) -> int:
    kind, name = _split_name(args.name)
    with _client(args) as client:
        job = client.get(name, kind)
        pods = client.pods(job)
        events = client.events(job, pods)
        tb = None
        if (job.get("status") or {}).get("tensorboard"):
            try:
                tb = client.tensorboard(name, job["metadata"]["namespace"])
            except T9kError:
                tb = None
    sys.stdout.write(
        render.describe(
            job, pods, events, views.now_utc(), tensorboard=tb, colour=_colour(sys.stdout)
        )
    )
    return EXIT_OK


# -- wait, logs -------------------------------------------------------------------------


def _wait_args(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
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
    kind, name = _split_name(args.name)
    started = time.monotonic()

    def progress(job: dict[str, Any]) -> None:
        if args.quiet:
            return
        phase = views.phase(job) or "<unknown>"
        why = views.reason(job)
        elapsed = views.human_duration(time.monotonic() - started)
        print(f"[{elapsed}] {name}: {phase}" + (f" ({why})" if why else ""), file=sys.stderr)

    with _client(args) as client:
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


def _logs_args(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
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
    kind, name = _split_name(args.name)
    prefix = args.prefix or args.all
    colour = _colour(sys.stdout)
    palette = ("36", "35", "34", "33", "32", "31")
    seen: dict[str, str] = {}
    with _client(args) as client:
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


# -- pause, resume, delete --------------------------------------------------------------


def _simple(verb: str, past: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        kind, name = _split_name(args.name)
        with _client(args) as client:
            job = client.get(name, kind)
            getattr(client, verb)(name, job["kind"])
        print(f"{render.names([job]).strip()} {past}")
        return EXIT_OK

    return run


# -- top --------------------------------------------------------------------------------


def _top_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "what",
        choices=("nodes", "jobs"),
        help="nodes: GPUs per node and who holds them; jobs: GPUs per job",
    )
    p.add_argument(
        "-A", "--all-namespaces", action="store_true", help="top jobs: of every namespace"
    )


def cmd_top(args: argparse.Namespace) -> int:
    with _client(args) as client:
        if args.what == "nodes":
            usage = views.node_usage(client.nodes(), client.pods(all_namespaces=True))
            sys.stdout.write(render.top_nodes(usage))
            return EXIT_OK
        jobs = client.list(all_namespaces=args.all_namespaces)
        pods = client.pods(all_namespaces=args.all_namespaces)
    text = render.top_jobs(views.job_usage(jobs, pods, views.now_utc()), args.all_namespaces)
    if not text:
        print("No job holds GPUs or pods.", file=sys.stderr)
    sys.stdout.write(text)
    return EXIT_OK


# -- tensorboard, completion -------------------------------------------------------------


def _tensorboard_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name", metavar="NAME", help="the job (or TensorBoard) whose TensorBoard to open"
    )
    p.add_argument(
        "--port", type=int, default=6006, help="local port (default 6006; 0: any free one)"
    )
    p.add_argument("--address", default="127.0.0.1", help="local address to listen on")


def cmd_tensorboard(args: argparse.Namespace) -> int:
    from t9k_operator.cli.tensorboard import open_tensorboard

    with _client(args) as client:
        return open_tensorboard(client, args.name, args.address, args.port)


def _completion_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell")


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.shell, build_parser()))
    return EXIT_OK


def _run_args(p: argparse.ArgumentParser) -> None:
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


COMMANDS: tuple[Command, ...] = (
    Command(
        "submit",
        "create or update jobs from a file (server-side apply)",
        "t9k submit -f job.yaml",
        _submit_args,
        cmd_submit,
    ),
    Command(
        "create",
        "create a job from flags",
        "t9k create pytorch mnist --image pytorch/pytorch:2.1.0 --workers 4 --gpus 1 "
        "--torchrun -- train.py --epochs 3",
        _create_args,
        cmd_create,
    ),
    Command("list", "list jobs of every kind", "t9k list -A --watch", _list_args, cmd_list),
    Command(
        "describe",
        "show a job: replicas, restarts, scheduling, TensorBoard, Events",
        "t9k describe mnist",
        _describe_args,
        cmd_describe,
    ),
    Command("logs", "print a job's logs", "t9k logs mnist --all -f", _logs_args, cmd_logs),
    Command(
        "wait",
        "wait for a job to run or finish",
        "t9k wait mnist --for Succeeded --timeout 30m",
        _wait_args,
        cmd_wait,
    ),
    Command(
        "pause",
        "pause a job (its pods are deleted until resume)",
        "t9k pause mnist",
        _describe_args,
        _simple("pause", "paused"),
    ),
    Command(
        "resume",
        "resume a paused job",
        "t9k resume mnist",
        _describe_args,
        _simple("resume", "resumed"),
    ),
    Command(
        "delete",
        "delete a job and everything it owns",
        "t9k delete mnist",
        _describe_args,
        _simple("delete", "deleted"),
    ),
    Command("top", "GPUs per node or per job", "t9k top nodes", _top_args, cmd_top),
    Command(
        "tensorboard",
        "port-forward to a job's TensorBoard and print its URL",
        "t9k tensorboard mnist",
        _tensorboard_args,
        cmd_tensorboard,
    ),
    Command(
        "completion",
        "print a shell completion script",
        "source <(t9k completion bash)",
        _completion_args,
        cmd_completion,
    ),
    Command(
        "run",
        "run a job's replicas as local processes (--local), to debug a training script",
        "t9k run --local manifests/samples/pytorch-basic.yaml -- python3 hack/local/rendezvous.py",
        _run_args,
        cmd_run,
    ),
)


def _globals(p: argparse.ArgumentParser, suppress: bool) -> None:
    default = argparse.SUPPRESS if suppress else None
    p.add_argument(
        "--kubeconfig",
        default=default,
        help="path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)",
    )
    p.add_argument("--context", default=default, help="the kubeconfig context to use")
    p.add_argument(
        "-n",
        "--namespace",
        default=default,
        help="the namespace (default: the context's, else default)",
    )


def build_parser() -> argparse.ArgumentParser:
    epilog = "examples:\n" + "\n".join(f"  {c.example}" for c in COMMANDS)
    parser = argparse.ArgumentParser(
        prog="t9k",
        description=(
            "Run and watch distributed training jobs (PyTorchTrainingJob, DeepSpeedJob, "
            "ColossalAIJob, MSJob) and TensorBoards on Kubernetes."
        ),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _globals(parser, suppress=False)
    subs = parser.add_subparsers(dest="subcommand", metavar="COMMAND", title="commands")
    for c in COMMANDS:
        p = subs.add_parser(
            c.name,
            help=c.help,
            description=c.help[0].upper() + c.help[1:] + ".",
            epilog=f"example:\n  {c.example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _globals(p, suppress=True)
        c.add_arguments(p)
        p.set_defaults(run=c.main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] | None = None
    if "--" in words:
        at = words.index("--")
        words, rest = words[:at], words[at + 1 :]
    args = parser.parse_args(words)
    if rest is not None:
        if getattr(args, "subcommand", None) == "run":
            args.program = rest
        elif getattr(args, "subcommand", None) != "create":
            parser.error("only t9k create and t9k run take -- COMMAND ARGS")
        else:
            args.argv = rest
    if not getattr(args, "subcommand", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except T9kError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        return EXIT_OK
