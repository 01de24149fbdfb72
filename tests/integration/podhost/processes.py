"""A pod's processes on this machine: its sandbox, which holds the
namespaces its containers share, each container's process as the runtime
starts it (entry.py), ``kubectl exec`` into one, and their end."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tests.integration.podhost.container_config import RUNTIME_CAPABILITIES
from tests.integration.podhost.container_start import setpriv_ids
from tests.integration.podhost.network import run

ENTRY = Path(__file__).with_name("entry.py")


def start_sandbox(netns: str, hostname: str) -> subprocess.Popen[bytes]:
    """The pod's sandbox, as the runtime's pause container: a process that
    holds the namespaces every container of the pod shares (network, IPC
    and UTS with the pod's hostname); each container joins them and gets
    mount and PID namespaces of its own. See :func:`await_sandbox`."""
    return subprocess.Popen(
        ["ip", "netns", "exec", netns, "unshare", "--ipc", "--uts", "--",
         "sh", "-c", f"hostname {hostname} && exec sleep infinity"],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def mount_shm(shm: Path) -> None:
    """The pod's /dev/shm, which containerd's CRI makes per sandbox."""
    shm.mkdir()
    run("mount", "-t", "tmpfs", "-o", "mode=1777,size=65536k,nosuid,nodev,noexec", "shm",
        str(shm))  # fmt: skip


def await_sandbox(sandbox: subprocess.Popen[bytes], pod: str) -> None:
    """Until the sandbox holds its namespaces (it is down to its ``sleep``)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{sandbox.pid}/comm").read_text().strip() == "sleep":
                return
        if sandbox.poll() is not None:
            break
        time.sleep(0.02)
    raise AssertionError(f"{pod}: the pod's sandbox did not start")


def start_container(sandbox: int, spec_file: Path, log_file: Path) -> subprocess.Popen[bytes]:
    """A container's process: entry.py on ``spec_file`` in the namespaces of
    the ``sandbox`` pid and fresh mount and PID ones, its stdout and stderr
    to ``log_file``."""
    log = open(log_file, "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [
            "nsenter",
            "-t",
            str(sandbox),
            "--net",
            "--ipc",
            "--uts",
            "--",
            "unshare",
            "--mount",
            "--pid",
            "--fork",
            "--propagation",
            "private",
            "--",
            sys.executable,
            str(ENTRY),
            str(spec_file),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    log.close()
    return proc


def container_process(outer: int, timeout: float) -> int | None:
    """The host pid of the container process started by ``outer`` (nsenter ->
    unshare -> (fork) the container's pid 1), once it is past the runtime's
    set-up: in its own root (entry.py chroots after every mount) and no
    longer entry.py. None if it is not within ``timeout`` seconds.

    Its command line alone does not tell: while a process is inside execve
    the kernel shows it empty, so the fork on its way to entry.py would look
    set up, and an exec into it would see this machine's /etc/hosts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in _descendants(outer):
            with contextlib.suppress(OSError):
                if _ns_pid(pid) != 1 or os.readlink(f"/proc/{pid}/root") == "/":
                    continue
                if str(ENTRY) not in Path(f"/proc/{pid}/cmdline").read_text():
                    return pid
        time.sleep(0.05)
    return None


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                children = (task / "children").read_text().split()
                for child in children:
                    found.append(int(child))
                    todo.append(int(child))
    return found


def _ns_pid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return -1


def handles_signal(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has set a handler for ``sig`` (its SigCgt
    mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def exec_in(
    pid: int,
    spec: Mapping[str, Any],
    argv: list[str],
    env: Mapping[str, str] | None,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """``argv`` run in the namespaces and root of the container whose pid 1
    is ``pid``, as its ``spec`` says: its user, capabilities and env (with
    ``env`` over it)."""
    caps = ",".join(f"+{c}" for c in RUNTIME_CAPABILITIES)
    return subprocess.run(
        [
            "nsenter",
            "-t",
            str(pid),
            "-m",
            "-u",
            "-i",
            "-n",
            "-p",
            "-r",
            "-w",
            "--",
            "/usr/bin/setpriv",
            *setpriv_ids(spec["user"]),
            f"--bounding-set=-all,{caps}",
            "--",
            *argv,
        ],
        env={**spec["env"], **(env or {})},
        text=True,
        capture_output=True,
        timeout=timeout,
    )


def kill_pod(netns: str, procs: Iterable[subprocess.Popen[bytes]]) -> None:
    """Every process of the pod killed at once: whatever runs in its network
    namespace, and each of ``procs`` (its containers' and its sandbox's)
    with its session."""
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    for pid in out.stdout.split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
