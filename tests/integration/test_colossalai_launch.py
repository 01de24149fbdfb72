"""The ColossalAIJob launch path, end to end, on this machine.

The launcher script exactly as the operator renders it runs against two
real sshd instances on loopback ports (keyed with the job's Secret, the key
at a non-default authMountPath) and a stand-in ``colossalai`` that checks its
arguments and the hostfile and reaches every host over ssh.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders import colossalai as b
from t9k_operator.builders import ssh
from t9k_operator.sshkeys import generate_keypair
from tests.integration.sshhosts import Hosts

AUTH = "/home/trainer/.ssh"


def job(replicas: int, torch_args: list[str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "ColossalAIJob",
        "metadata": {"name": "cj", "namespace": "ns", "uid": "u"},
        "spec": {"ssh": {"authMountPath": AUTH},
                 "launcher": {"image": "hpcaitech/colossalai:0.3.0", "workingDir": "/workspace"},
                 "worker": {"replicas": replicas, "procPerWorker": 8,
                            "command": ["train.py", "--config", "c.py"],
                            "torchArgs": torch_args or [],
                            "template": {"spec": {"containers": [{"name": "worker",
                                                                  "image": "w"}]}}}},
    }  # fmt: skip


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    private, public = generate_keypair("t9k/ns/cj")
    h = Hosts(tmp_path, ssh.ssh_secret(job(2), private, public, AUTH))
    yield h
    h.stop()


STAND_IN = """#!/bin/bash
printf '%s\\n' "$@" > "$T9K_OUT/args"
cp "$T9K_HOSTFILE" "$T9K_OUT/hostfile"
for host in $(cat "$T9K_HOSTFILE"); do
  ssh $T9K_SSH_OPTS -o BatchMode=yes "$host" hostname >> "$T9K_OUT/reached" || exit 90
done
exit 3
"""


def run_launcher(hosts: Hosts, j: dict[str, Any], timeout: int,
                 names: list[str]) -> subprocess.CompletedProcess[str]:  # fmt: skip
    root = hosts.root
    (root / "bin").mkdir(exist_ok=True)
    (root / "out").mkdir(exist_ok=True)
    stand_in = root / "bin" / "colossalai"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    hostfile = root / "hostfile"
    hostfile.write_text(b.hostfile(j))
    script = b.build_launcher(j)["spec"]["containers"][0]["command"][2]
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": f"{root / 'bin'}:{os.environ['PATH']}", "HOME": str(home),
        "T9K_HOSTFILE": str(hostfile), "T9K_SSH_WAIT_TIMEOUT": str(timeout),
        "T9K_SSH_OPTS": f"-F {hosts.client_config(names, AUTH)}", "T9K_OUT": str(root / "out"),
    }  # fmt: skip
    return subprocess.run(["/bin/bash", "-c", script], env=env, text=True, capture_output=True,
                          timeout=timeout + 60)  # fmt: skip


def test_launcher_reaches_every_worker_and_runs_colossalai(hosts: Hosts) -> None:
    j = job(2, ["--max_restarts=2"])
    for h in ("cj-worker-0.cj", "cj-worker-1.cj"):
        hosts.start_sshd(h)
    result = run_launcher(hosts, j, 20, ["cj-worker-0.cj", "cj-worker-1.cj"])
    out = hosts.root / "out"
    assert result.returncode == 3, result.stderr  # the launcher's exit is the job's
    assert (out / "args").read_text().splitlines() == [
        "run", "--nproc_per_node=8", "--hostfile=/t9k/hostfile", "--master_addr=cj-worker-0.cj",
        "--master_port=29500", "--extra_launch_args=max_restarts=2",
        "train.py", "--config", "c.py",
    ]  # fmt: skip
    assert (out / "hostfile").read_text() == "cj-worker-0.cj\ncj-worker-1.cj\n"
    assert len((out / "reached").read_text().splitlines()) == 2
    # The key at the non-default authMountPath is linked where colossalai looks.
    assert os.readlink(hosts.root / "home" / ".ssh") == AUTH


def test_launcher_gives_up_with_a_readable_message(hosts: Hosts) -> None:
    hosts.start_sshd("cj-worker-0.cj")
    started = time.monotonic()
    result = run_launcher(hosts, job(2), 3, ["cj-worker-0.cj", "cj-worker-1.cj"])
    assert result.returncode == 1
    assert "gave up after 3s waiting for ssh to cj-worker-1.cj" in result.stderr
    assert time.monotonic() - started < 30
    assert not (hosts.root / "out" / "args").exists()
