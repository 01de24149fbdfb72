"""Running a :class:`~t9k_operator.local.plan.LocalJob`: one process per
replica (or rank), their output prefixed, the kind's rule deciding the end.

Each process starts in a session of its own (so a terminal's Ctrl-C reaches
only this runner, which then stops every replica in order), with this
process's environment under the one its pod would have. The job ends as the
operator would end it, with no restarts (a local run is for finding the
error, not for hiding it): the first replica that fails fails the job, with
its exit code (ColossalAI: the launcher's 1); the job succeeds when the kind's
own ``outcome`` rule says so (PyTorch: the master; DeepSpeed: worker-0, that is
every rank its launcher started; ColossalAI: the launcher, that is every rank;
MSJob: Worker 0, or every Worker with ``successPolicy: AllWorkers``). Then the
replicas still running get ``grace`` seconds to end on their own (on success)
or none (on failure), then SIGTERM, then after ``stop_timeout`` SIGKILL, each
to its whole process group. SIGINT or SIGTERM to the runner stops them all the
same way and the runner returns 128 + the signal's number (130 for Ctrl-C);
a second one kills at once.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.local.plan import LocalJob, Process

POLL = 0.05
TAG = "[t9k]"


@dataclass
class _Child:
    process: Process
    popen: subprocess.Popen[bytes]
    code: int | None = None
    pumps: list[threading.Thread] = field(default_factory=list)


def exit_code(returncode: int) -> int:
    """A process's exit as a container runtime reports it: 128 + n for signal n."""
    return 128 - returncode if returncode < 0 else returncode


class _Output:
    """Line-prefixed writes of many processes to one pair of streams."""

    def __init__(self, out: IO[str], err: IO[str]) -> None:
        self.out, self.err = out, err
        self.lock = threading.Lock()

    def write(self, stream: IO[str], text: str) -> None:
        with self.lock:
            stream.write(text)
            stream.flush()

    def say(self, message: str) -> None:
        self.write(self.err, f"{TAG} {message}\n")

    def pump(self, label: str, source: IO[bytes], stream: IO[str]) -> None:
        prefix = f"[{label}] "
        for raw in iter(source.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            self.write(stream, prefix + line + "\n")
        source.close()


def describe(job: LocalJob) -> str:
    """What each process runs, with the environment its pod gives it."""
    lines = []
    for p in job.processes:
        replica = f"{p.replica[0]}-{p.replica[1]}"
        stands = "" if replica.lower() == p.label else f" (its exit counts as {replica}'s)"
        lines.append(f"[{p.label}]{stands}")
        lines.append(f"  command: {shlex.join(p.argv)}")
        for k, v in sorted(p.env.items()):
            lines.append(f"  env {k}={v}")
    for path, content in sorted(job.files.items()):
        lines.append(f"file {path}:")
        lines.extend(f"  {line}" for line in content.splitlines())
    return "\n".join(lines) + "\n"


def decide(job: LocalJob, children: Sequence[_Child]) -> tuple[str, int] | None:
    """The job's end from the processes' exits so far: ("Failed", code) at the
    first failure, ("Succeeded", 0) when the kind's rule says so, else None."""
    replicas: dict[tuple[str, int], list[_Child]] = {}
    for child in children:
        replicas.setdefault(child.process.replica, []).append(child)
    states = {}
    for replica, members in replicas.items():
        codes = [c.code for c in members]
        if all(code == 0 for code in codes):
            phase = "Succeeded"
        elif any(code not in (None, 0) for code in codes):
            phase = "Failed"
        else:
            phase = "Running"
        states[replica] = ReplicaState(f"{replica[0]}-{replica[1]}", "", phase)
    outcome = job.kind.outcome(job.view, states)
    if outcome is not None and outcome.phase == "Succeeded":
        return ("Succeeded", 0)
    if outcome is not None:
        return ("Failed", job.failed_exit_code or 1)
    return None


class Runner:
    """Starts, watches and stops the processes of one local job."""

    def __init__(
        self,
        job: LocalJob,
        *,
        cwd: str | None = None,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
        grace: float = 3.0,
        stop_timeout: float = 5.0,
        base_env: dict[str, str] | None = None,
    ) -> None:
        self.job = job
        self.cwd = cwd
        self.output = _Output(out or sys.stdout, err or sys.stderr)
        self.grace, self.stop_timeout = grace, stop_timeout
        self.base_env = dict(os.environ if base_env is None else base_env)
        self.children: list[_Child] = []
        self.signals: list[int] = []
        self.started = threading.Event()

    # -- signals ---------------------------------------------------------------------

    def interrupt(self, signum: int = signal.SIGINT) -> None:
        """Stop the job as Ctrl-C does (for callers on other threads: the SDK, tests)."""
        self.signals.append(signum)

    def _install(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum: int, _frame: object) -> None:
            self.interrupt(signum)

        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for s, h in old.items():
                signal.signal(s, h)

        return restore

    # -- the run -----------------------------------------------------------------------

    def run(self) -> int:
        restore = self._install()
        try:
            return self._run()
        finally:
            self._kill_groups(signal.SIGKILL)
            for child in self.children:
                if child.popen.poll() is None:
                    child.popen.wait()
                for t in child.pumps:
                    t.join(timeout=2)
            restore()

    def _start(self, p: Process) -> _Child:
        env = {**self.base_env, **p.env}
        popen = subprocess.Popen(
            list(p.argv),
            env=env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        child = _Child(p, popen)
        for source, stream in ((popen.stdout, self.output.out), (popen.stderr, self.output.err)):
            assert source is not None
            t = threading.Thread(
                target=self.output.pump, args=(p.label, source, stream), daemon=True
            )
            t.start()
            child.pumps.append(t)
        return child

    def _run(self) -> int:
        say = self.output.say
        for p in self.job.processes:
            try:
                self.children.append(self._start(p))
            except OSError as exc:
                say(f"{p.label}: cannot start {shlex.join(p.argv)}: {exc}")
                self._stop(0)
                return 127
        self.started.set()
        say(
            f"started {len(self.children)} processes: "
            + ", ".join(f"{c.process.label} (pid {c.popen.pid})" for c in self.children)
        )
        while True:
            if self.signals:
                signum = self.signals[0]
                say(f"{signal.Signals(signum).name}: stopping every replica")
                self._stop(0)
                return 128 + signum
            for child in self.children:
                if child.code is None and (rc := child.popen.poll()) is not None:
                    child.code = exit_code(rc)
                    if child.code != 0:
                        say(f"{child.process.label} exited with code {child.code}")
                        phase, code = "Failed", self.job.failed_exit_code or child.code
                        say(f"the job failed ({child.process.label} failed): stopping the others")
                        self._stop(0)
                        return code
                    say(f"{child.process.label} exited with code 0")
            decision = decide(self.job, self.children)
            if decision is not None:
                phase, code = decision
                running = [c.process.label for c in self.children if c.code is None]
                grace = self.grace if phase == "Succeeded" else 0
                say(
                    f"the job {phase.lower()} ({self.job.kind.crd.kind}'s rule)"
                    + (f"; stopping {', '.join(running)}" if running else "")
                    + (f" once they have had {grace:g}s to end" if running and grace else "")
                )
                self._stop(grace)
                return code
            if all(c.code is not None for c in self.children):
                say(
                    "every process has ended, but the job's success rule was not met: "
                    f"{self.job.kind.crd.kind} decides by a replica that did not run here"
                )
                return 1
            time.sleep(POLL)

    def _running(self) -> list[_Child]:
        return [c for c in self.children if c.popen.poll() is None]

    def _wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self._running():
            if time.monotonic() >= deadline or len(self.signals) > 1:
                return False
            time.sleep(POLL)
        return True

    def _stop(self, grace: float) -> None:
        """Let the running processes end within ``grace`` seconds, then SIGTERM
        their groups, then SIGKILL them after ``stop_timeout``."""
        if grace and self._wait(grace):
            return
        if not self._running():
            return
        self._kill_groups(signal.SIGTERM, only_running=True)
        if not self._wait(self.stop_timeout):
            still = ", ".join(c.process.label for c in self._running())
            if still:
                self.output.say(f"{still} did not stop on SIGTERM: killing")
            self._kill_groups(signal.SIGKILL)

    def _kill_groups(self, signum: int, only_running: bool = False) -> None:
        for child in self.children:
            if only_running and child.popen.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.popen.pid, signum)


def run_job(job: LocalJob, **options: Any) -> int:
    return Runner(job, **options).run()
