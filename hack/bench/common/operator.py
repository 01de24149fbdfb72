"""The operator as a process of its own, run from a source tree, and what
its /metrics say about a run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from hack.cluster import free_port

from .metrics import count_requests, informer_requests

# The operator's wait for its own client-side limiter, on the reconcile budget's
# client (the Events and leader-election clients have their own user agents).
LIMITER_WAIT = "t9k_client_rate_limiter_wait_seconds_sum"
RETRIES = "t9k_client_retries_total"
RECONCILE_AGENT = "t9k-operator"


class Operator:
    """The operator of the source tree ``source`` (this one, or an older
    commit's worktree) against ``kubeconfig``, with ``flags``; its /metrics
    and health endpoints on free ports, its log at ``log_path``."""

    def __init__(self, source: Path, kubeconfig: Path, log_path: Path, *flags: str) -> None:
        self.health = free_port()
        self.metrics = free_port()
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["PYTHONPATH"] = str(source)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "t9k_operator",
                "--kubeconfig",
                str(kubeconfig),
                "--metrics-bind-address",
                f"127.0.0.1:{self.metrics}",
                "--health-probe-bind-address",
                f"127.0.0.1:{self.health}",
                *flags,
            ],
            cwd=source,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        wait_ready(self.proc, self.health, timeout, "operator")

    def sums(self) -> dict[str, float]:
        """The job controller's reconciles and their time, its queue wait, and
        the seconds the reconcile client's requests waited for its own rate
        limiter (``limiter_wait_s``: absent from code that does not export it)."""
        wanted = {
            "controller_runtime_reconcile_total": "reconciles",
            "controller_runtime_reconcile_time_seconds_sum": "reconcile_s",
            "workqueue_queue_duration_seconds_sum": "queue_wait_s",
            "workqueue_queue_duration_seconds_count": "queue_gets",
        }
        retried = 0.0  # requests the API server refused with 429, sent again
        out = dict.fromkeys(wanted.values(), 0.0)
        url = f"http://127.0.0.1:{self.metrics}/metrics"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as resp:
            for line in resp.read().decode().splitlines():
                name = line.partition("{")[0]
                if name in wanted and "pytorchtrainingjob" in line:
                    out[wanted[name]] += float(line.rpartition(" ")[2])
                elif name == LIMITER_WAIT and f'client="{RECONCILE_AGENT}"' in line:
                    value = float(line.rpartition(" ")[2])
                    out["limiter_wait_s"] = out.get("limiter_wait_s", 0.0) + value
                elif name == RETRIES and 'reason="TooManyRequests"' in line:
                    retried += float(line.rpartition(" ")[2])
        return {**out, "retries_429": retried}

    def error_lines(self) -> int:
        """Lines its log wrote at level error."""
        self._log.flush()
        text = self.log_path.read_text(errors="replace")
        return sum('"level": "error"' in line for line in text.splitlines())

    def reads(self) -> tuple[int, int] | None:
        """Its GETs of the API server so far (:func:`count_requests` of its
        /metrics) and how many of them its informers sent
        (:func:`informer_requests`); None when it does not answer or counts
        neither."""
        url = f"http://127.0.0.1:{self.metrics}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            return None
        gets, informers = count_requests(text), informer_requests(text)
        return None if gets is None or informers is None else (gets, informers)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def wait_ready(
    proc: subprocess.Popen[bytes],
    health: int,
    timeout: float,
    what: str,
    each: Callable[[], object] | None = None,
) -> None:
    """Wait until ``proc`` answers 200 on ``127.0.0.1:<health>/readyz``
    (``each`` called on every try first); RuntimeError when it exits or the
    time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        if each is not None:
            each()
        with contextlib.suppress(OSError):
            url = f"http://127.0.0.1:{health}/readyz"
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not ready in time")
