"""A container's start, as a container runtime does it; run by the pod host
inside fresh mount, UTS, IPC and PID namespaces (pid 1 of the last) and the
pod's network namespace. Standard library only.

Root file system: an overlay of the image layer over this machine's root with
a private upper layer on a tmpfs; then /proc, /dev and /sys, kubelet's
/etc/hosts, /etc/hostname and /etc/resolv.conf, the volume mounts (read-only
where asked), the hostname; chroot, chdir, and exec of the command under the
runtime's default capability bounding set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def sh(*args: str) -> None:
    subprocess.run(list(args), check=True)


def mount_point(path: Path, is_dir: bool) -> None:
    if is_dir:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.touch()


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    scratch = Path(spec["scratch"])
    sh("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", str(scratch))
    upper, work, root = scratch / "upper", scratch / "work", scratch / "root"
    for d in (upper, work, root):
        d.mkdir()
    sh(
        "mount",
        "-t",
        "overlay",
        "overlay",
        "-o",
        f"lowerdir={spec['layer']}:/,upperdir={upper},workdir={work}",
        str(root),
    )
    sh("mount", "-t", "proc", "proc", str(root / "proc"))
    sh("mount", "--rbind", "/dev", str(root / "dev"))
    sh("mount", "--rbind", "/sys", str(root / "sys"))
    for src, dest in (
        (spec["hosts"], "etc/hosts"),
        (spec["hostnameFile"], "etc/hostname"),
        (spec["resolv"], "etc/resolv.conf"),
    ):
        mount_point(root / dest, False)
        sh("mount", "--bind", src, str(root / dest))
    for m in spec["mounts"]:
        target = root / m["path"].lstrip("/")
        mount_point(target, os.path.isdir(m["source"]))
        sh("mount", "--bind", m["source"], str(target))
        if m["readOnly"]:
            sh("mount", "-o", "remount,bind,ro", str(target))
    sh("hostname", spec["hostname"])
    # As container runtimes do, a missing working directory is created.
    (root / spec["workingDir"].lstrip("/")).mkdir(parents=True, exist_ok=True)
    os.chroot(root)
    os.chdir(spec["workingDir"])
    caps = ",".join(f"+{c}" for c in spec["capabilities"])
    sys.stdout.flush()
    os.execve(
        "/usr/bin/setpriv",
        ["setpriv", f"--bounding-set=-all,{caps}", "--", *spec["argv"]],
        spec["env"],
    )


if __name__ == "__main__":
    main()
