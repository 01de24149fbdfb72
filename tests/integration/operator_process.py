"""Runs the operator as a separate process, the way a Deployment would."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.integration.cluster import ROOT, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_metric(text: str, name: str, labels: dict[str, str] | None = None) -> float | None:
    """The value of the first sample of ``name`` with (at least) ``labels``
    in a Prometheus text exposition, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted((labels or {}).items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        metric, _, lbls = key.partition("{")
        if metric != name:
            continue
        have = ",".join(sorted(lbls.rstrip("}").split(","))) if lbls else ""
        if all(part in have.split(",") for part in want.split(",") if part):
            return float(value)
    return None


ADDRESS_IN_USE = "[Errno 98] Address already in use"


class OperatorProcess:
    def __init__(self, kubeconfig: Path, log_path: Path, *extra_args: str) -> None:
        self.log_path = log_path
        self._kubeconfig, self._extra = kubeconfig, extra_args
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._spawn()

    def _spawn(self) -> None:
        """Start the process on two ports free a moment ago (another process may
        take one first: :meth:`wait_ready` then starts it again on others)."""
        self.metrics_port = free_port()
        self.health_port = free_port()
        extra_args = self._extra
        self.args = [
            sys.executable,
            "-m",
            "t9k_operator",
            "--kubeconfig",
            str(self._kubeconfig),
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            "--log-level",
            "debug",
            # Operators side by side (a test's peers, the other worker's): any free
            # port each, which the kernel picks when it binds (no race).
            *(
                ()
                if any(a.startswith("--progress-bind-address") for a in extra_args)
                else ("--progress-bind-address", "127.0.0.1:0")
            ),
            *extra_args,
        ]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self.proc = subprocess.Popen(
            self.args, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=env
        )

    def get(self, path: str, port: int | None = None) -> tuple[int, str]:
        url = f"http://127.0.0.1:{port or self.health_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return parse_metric(self.get("/metrics", self.metrics_port)[1], name, labels)

    def wait_ready(self, timeout: float = 30) -> None:
        respawns = 3  # a port of ours taken between free_port() and the bind

        def ready() -> bool:
            nonlocal respawns
            if self.proc.poll() is not None and respawns and ADDRESS_IN_USE in self.logs():
                respawns -= 1
                self._log.write(b"--- a port was taken: started again on others ---\n")
                self._spawn()
            assert self.proc.poll() is None, f"operator exited early:\n{self.logs()}"
            try:
                return self.get("/readyz")[0] == 200
            except OSError:
                return False

        wait_for(ready, timeout, "operator /readyz")

    def logs(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-6000:]

    def reconciles_of(self, key: str) -> int:
        """How many reconciles of ``key`` have finished, every write of each
        done (the controller's debug line "reconciled", from the whole log)."""
        text = self.log_path.read_text(errors="replace")
        return sum(
            1 for line in text.splitlines() if '"reconciled"' in line and f'"key": "{key}"' in line
        )

    def terminate(self, timeout: float = 40) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()
