"""``t9k``: argparse, one function per command, kubectl's conventions.

This module owns the parser, the table of commands and the entry point; the
commands live by group in :mod:`~t9k_operator.cli.create` (submit, create),
:mod:`~t9k_operator.cli.show` (list, describe, top),
:mod:`~t9k_operator.cli.follow` (wait, logs),
:mod:`~t9k_operator.cli.control` (pause, resume, delete),
:mod:`~t9k_operator.cli.tensorboard`, :mod:`~t9k_operator.cli.console` and
:mod:`~t9k_operator.cli.run`, on the helpers of :mod:`~t9k_operator.cli.common`.

Global flags (``--kubeconfig``, ``--context``, ``-n/--namespace``) go before
or after the command. Exit codes: 0 done; 1 the request failed (refused by
the API server, not found, the job failed); 2 bad usage; 3 ``wait`` timed out.
Errors go to stderr as ``error: <the API server's message>``.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from t9k_operator.cli import console, control, create, follow, run, show, tensorboard
from t9k_operator.cli.common import EXIT_OK, EXIT_USAGE, Command, name_arg
from t9k_operator.cli.completion import completion_script
from t9k_operator.sdk import T9kError


def _completion_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell")


def cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.shell, build_parser()))
    return EXIT_OK


COMMANDS: tuple[Command, ...] = (
    Command(
        "submit",
        "create or update jobs from a file (server-side apply)",
        "t9k submit -f job.yaml",
        create.submit_args,
        create.cmd_submit,
    ),
    Command(
        "create",
        "create a job from flags",
        "t9k create pytorch mnist --image pytorch/pytorch:2.1.0 --workers 4 --gpus 1 "
        "--torchrun -- train.py --epochs 3",
        create.create_args,
        create.cmd_create,
    ),
    Command(
        "list", "list jobs of every kind", "t9k list -A --watch", show.list_args, show.cmd_list
    ),
    Command(
        "describe",
        "show a job: replicas, restarts, scheduling, TensorBoard, Events",
        "t9k describe mnist",
        show.describe_args,
        show.cmd_describe,
    ),
    Command(
        "logs", "print a job's logs", "t9k logs mnist --all -f", follow.logs_args, follow.cmd_logs
    ),
    Command(
        "wait",
        "wait for a job to run or finish",
        "t9k wait mnist --for Succeeded --timeout 30m",
        follow.wait_args,
        follow.cmd_wait,
    ),
    Command(
        "pause",
        "pause a job (its pods are deleted until resume)",
        "t9k pause mnist",
        name_arg,
        control.job_verb("pause", "paused"),
    ),
    Command(
        "resume",
        "resume a paused job",
        "t9k resume mnist",
        name_arg,
        control.job_verb("resume", "resumed"),
    ),
    Command(
        "delete",
        "delete a job and everything it owns",
        "t9k delete mnist",
        name_arg,
        control.job_verb("delete", "deleted"),
    ),
    Command("top", "GPUs per node or per job", "t9k top nodes", show.top_args, show.cmd_top),
    Command(
        "tensorboard",
        "port-forward to a job's TensorBoard and print its URL",
        "t9k tensorboard mnist",
        tensorboard.tensorboard_args,
        tensorboard.cmd_tensorboard,
    ),
    Command(
        "console",
        "serve the web console of jobs on this machine and open it",
        "t9k console --no-browser",
        console.console_args,
        console.cmd_console,
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
        run.run_args,
        run.cmd_run,
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
