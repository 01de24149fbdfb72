"""The cluster's processes: each started in its own process group in the
cluster's state folder, logging to ``<tool>.log`` there; waited for, asked
(kubectl, health checks) and stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class _Launch:
    tool: str
    args: list[str]
    health: str  # an http(s) URL answering 200 once the process serves
    env: dict[str, str] = field(default_factory=dict)
    wrap: tuple[str, ...] = ()  # a command that execs the tool (see _start)


def _start(
    bin_dir: Path,
    tool: str,
    args: list[str],
    workdir: Path,
    env: dict[str, str] | None = None,
    program: list[str] | None = None,
    wrap: Sequence[str] = (),
) -> int:
    """``bin_dir/tool args`` (or ``program args``) in its own process group,
    in ``workdir``, logging to ``<tool>.log`` there (``wrap``: a command that
    execs it, given before it)."""
    logf = open(workdir / f"{tool}.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [*wrap, *(program or [str(bin_dir / tool)]), *args],
        stdout=logf,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=workdir,
        env=env,
        start_new_session=True,
    )
    logf.close()
    return proc.pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours is not alive.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _ours(pid: int, workdir: Path) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(workdir)
    except OSError:
        return False


def _https_get(url: str, pki: Path, timeout: float = 2.0) -> tuple[int, bytes]:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _healthy(url: str, pki: Path) -> bool:
    if url.startswith("https:"):
        return _https_get(url, pki)[0] == 200
    with urllib.request.urlopen(url, timeout=2) as resp:
        return bool(resp.status == 200)


def _wait(
    what: str, check: Callable[[], object], timeout: float, procs: dict[str, int], workdir: Path
) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        for tool, pid in procs.items():
            if not _alive(pid):
                tail = (workdir / f"{tool}.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"cluster: {tool} exited while waiting for {what}:\n{tail}")
        try:
            if check():
                return
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last = f"; the last attempt: {str(exc).strip()[:500]}"
        time.sleep(0.2)
    raise SystemExit(
        f"cluster: timed out after {timeout:.0f}s waiting for {what} (logs in {workdir}){last}"
    )


def kubectl(
    bin_dir: Path, kubeconfig: Path, *args: str, input_: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=input_,
        text=True,
        capture_output=True,
        check=check,
    )


def _stop(pids: Iterable[int], workdir: Path) -> None:
    """SIGTERM each process group (of ours), SIGKILL what is left after 10 s."""
    order = [p for p in pids if _alive(p) and _ours(p, workdir)]
    for pid in order:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in order):
        _reap()
        time.sleep(0.1)
    for pid in order:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    _reap()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
