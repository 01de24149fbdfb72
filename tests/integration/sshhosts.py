"""Real sshd instances on loopback ports, keyed with a job's ssh Secret, for
the launch-path tests of the ssh-based kinds."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Hosts:
    """The job's key files as the Secret mount holds them, plus sshd per host."""

    def __init__(self, root: Path, secret: dict[str, Any]) -> None:
        if not os.access(SSHD, os.X_OK):
            raise AssertionError(f"{SSHD} missing: make test installs openssh-server")
        self.root = root
        self.ssh = root / "ssh"
        self.ssh.mkdir()
        for name, content in secret["stringData"].items():
            path = self.ssh / name
            path.write_text(content)
            path.chmod(0o600)  # the Secret volume's defaultMode
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ports: dict[str, int] = {}

    def start_sshd(self, host: str) -> None:
        port = free_port()
        hostkey = self.root / f"hostkey-{port}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey)],
                       check=True)  # fmt: skip
        config = self.root / f"sshd-{port}.conf"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {hostkey}\n"
            f"AuthorizedKeysFile {self.ssh / 'authorized_keys'}\nPidFile {self.root}/{port}.pid\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "StrictModes no\nPermitRootLogin prohibit-password\n"
        )
        Path("/run/sshd").mkdir(exist_ok=True)
        self.procs.append(subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)],
                                           stderr=subprocess.DEVNULL))  # fmt: skip
        self.ports[host] = port
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.05)
        raise AssertionError(f"sshd for {host} did not listen")

    def client_config(self, hosts: list[str], auth_dir: str = "/root/.ssh") -> Path:
        """The Secret's ssh config (its key path, ``auth_dir`` in a pod, pointed at
        the files here), plus where each pod name points on this machine."""
        text = (
            (self.ssh / "config")
            .read_text()
            .replace(f"{auth_dir}/id_ed25519", str(self.ssh / "id_ed25519"))
        )
        for host in hosts:
            port = self.ports.get(host) or free_port()  # no sshd: nobody answers
            text = f"Host {host}\n    HostName 127.0.0.1\n    Port {port}\n\n" + text
        path = self.root / "ssh_config"
        path.write_text(text)
        return path

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
            p.wait(5)
