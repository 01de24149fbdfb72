"""Run a training that does not report, and tell it of a checkpoint request
with SIGUSR1: ``python -m t9k_operator.report_run -- python train.py``
(docs/checkpoint.md). Standard library only, beside :mod:`report` (copy both
next to a script to use it without the operator's package).

It starts the command as its child, passes SIGTERM, SIGINT and SIGHUP on to
it, and, while the child runs, tells the operator's progress endpoint at its
pace that the process is alive (a liveness report: no progress). When an
answer asks for a checkpoint (the operator is about to stop the job), the
child gets SIGUSR1, once per request; it checkpoints and reports the step,
e.g. ``python -m t9k_operator.report --checkpoint-step 420``. It exits as the
child did (128 + the signal when a signal ended it). Without
``T9K_PROGRESS_URL`` it only runs the child.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType

try:
    from t9k_operator.report import Reporter, from_env
except ImportError:  # copied next to the script, beside report.py
    from report import Reporter, from_env  # type: ignore[import-not-found,no-redef]

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def run(command: Sequence[str], reporter: Reporter | None) -> int:
    """Run ``command`` to its end, relaying the operator's checkpoint request as
    SIGUSR1; its exit code (128 + the signal that ended it)."""
    child = subprocess.Popen(list(command))

    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    signalled = 0  # the reporter's requests relayed
    while child.poll() is None:
        if reporter is not None:
            reporter.send({})  # alive; the answer says whether to checkpoint
            if reporter.asked.is_set() and reporter.requests != signalled and child.poll() is None:
                child.send_signal(signal.SIGUSR1)
            signalled = reporter.requests
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(reporter.interval if reporter is not None else None)
    code = child.returncode
    return 128 - code if code < 0 else code


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m t9k_operator.report_run -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    reporter = from_env()
    return run(args, reporter if isinstance(reporter, Reporter) else None)


if __name__ == "__main__":
    sys.exit(main())
