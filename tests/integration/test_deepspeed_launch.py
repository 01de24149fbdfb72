"""The DeepSpeedJob launch path, end to end, on this machine.

The worker-0 script exactly as the operator renders it runs against two real
sshd instances on loopback ports (Debian's openssh-server), with the job key
pair and ssh config exactly as the operator's Secret holds them, and a
stand-in ``deepspeed`` that checks its arguments, reads the hostfile, and
ssh-es to every host the way DeepSpeed's launcher does. No cluster is needed.
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

from t9k_operator.builders import deepspeed as b
from t9k_operator.sshkeys import generate_keypair
from tests.integration.sshhosts import Hosts


def job(replicas: int, **config: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "DeepSpeedJob",
        "metadata": {"name": "ds", "namespace": "ns", "uid": "uid-1"},
        "spec": {"config": {"run": {"python": ["train.py", "--epochs", "2"]}, **config},
                 "worker": {"replicas": replicas, "template": {"spec": {"containers": [
                     {"name": "worker", "image": "deepspeed"}]}}}},
    }  # fmt: skip


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    private, public = generate_keypair("t9k/ns/ds")
    h = Hosts(tmp_path, b.ssh_secret(job(2), private, public))
    yield h
    h.stop()


STAND_IN = """#!/bin/bash
# Stand-in for deepspeed: record the arguments, check the hostfile, and reach
# every host over ssh the way DeepSpeed's pdsh launcher does.
printf '%s\\n' "$@" > "$T9K_OUT/args"
cp "$T9K_HOSTFILE" "$T9K_OUT/hostfile"
for host in $(awk '{print $1}' "$T9K_HOSTFILE"); do
  ssh $T9K_SSH_OPTS -o BatchMode=yes "$host" hostname >> "$T9K_OUT/reached" || exit 90
done
exit 7
"""


def run_script(
    hosts: Hosts,
    job_obj: dict[str, Any],
    timeout: int,
    hostnames: list[str],
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    root = hosts.root
    (root / "bin").mkdir(exist_ok=True)
    stand_in = root / "bin" / "deepspeed"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    (root / "out").mkdir(exist_ok=True)
    hostfile = root / "hostfile"
    hostfile.write_text(b.hostfile(job_obj))
    # The script the operator puts in worker-0's container, unchanged.
    pod = b.build_pod(job_obj, 0)
    script = pod["spec"]["containers"][0]["command"][2]
    env = {
        "PATH": f"{root / 'bin'}:{os.environ['PATH']}",
        "T9K_HOSTFILE": str(hostfile),
        "T9K_DEEPSPEED_ENV": str(root / "deepspeed_env"),
        "T9K_SSH_WAIT_TIMEOUT": str(timeout),
        "T9K_SSHD": "true",  # this test started the workers' sshd itself
        "T9K_SSH_OPTS": f"-F {hosts.client_config(hostnames)}",
        "T9K_OUT": str(root / "out"),
        **(extra_env or {}),
    }
    return subprocess.run(["/bin/bash", "-c", script], env=env, text=True,
                          capture_output=True, timeout=timeout + 60)  # fmt: skip


def test_launch_reaches_every_host_and_runs_deepspeed(hosts: Hosts) -> None:
    j = job(2, slotsPerWorker=8, localRank=False, otherArgs=["--master_port", "12346"])
    for host in ("ds-worker-0.ds", "ds-worker-1.ds"):
        hosts.start_sshd(host)
    result = run_script(hosts, j, 20, ["ds-worker-0.ds", "ds-worker-1.ds"],
                        {"NCCL_DEBUG": "INFO", "MULTI": "a\nb", "EMPTY": ""})  # fmt: skip
    out = hosts.root / "out"
    assert result.returncode == 7, result.stderr  # the launcher's exit code is the container's
    assert (out / "args").read_text().splitlines() == [
        "--hostfile=/t9k/hostfile", "--no_local_rank", "--master_port", "12346",
        "train.py", "--epochs", "2",
    ]  # fmt: skip
    assert (out / "hostfile").read_text() == "ds-worker-0.ds slots=8\nds-worker-1.ds slots=8\n"
    assert len((out / "reached").read_text().splitlines()) == 2
    env_lines = (hosts.root / "deepspeed_env").read_text().split("\n")
    assert env_lines[-1] == ""  # ends with a newline, and
    lines = env_lines[:-1]
    assert all(line and "=" in line for line in lines)  # no blank line, NAME=value only
    assert "NCCL_DEBUG=INFO" in lines and "EMPTY=" in lines
    assert not any(line.startswith(("MULTI=", "T9K_")) for line in lines)


def test_launch_gives_up_with_a_readable_message(hosts: Hosts) -> None:
    j = job(3)
    hosts.start_sshd("ds-worker-0.ds")
    hosts.start_sshd("ds-worker-1.ds")
    started = time.monotonic()
    result = run_script(hosts, j, 3, ["ds-worker-0.ds", "ds-worker-1.ds", "ds-worker-2.ds"])
    assert result.returncode == 1
    assert "gave up after 3s waiting for ssh to ds-worker-2.ds" in result.stderr
    assert time.monotonic() - started < 30
    assert not (hosts.root / "out" / "args").exists()  # deepspeed never ran
