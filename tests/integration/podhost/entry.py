"""A container's start, as a container runtime does it; run by the pod host
inside fresh mount and PID namespaces (pid 1 of the latter) and the pod's
network, IPC and UTS namespaces (its sandbox's). Standard library only
(container_start.py, beside this file, does what the operator's pod does
alike).

Root file system: an overlay of the image layer over this machine's root with
a private upper layer on a tmpfs; then /proc, runc's /dev (the pod's 64 MiB /dev/shm)
and a read-only /sys, kubelet's /etc/hosts, /etc/hostname and
/etc/resolv.conf, the volume mounts (read-only where asked); chroot, chdir,
and exec of the command under the runtime's default capability bounding set,
as the user and groups of the pod's and container's securityContext."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from container_start import (
    bind,
    bind_kubelet_files,
    in_root,
    make_dev,
    overlay_root,
    read_spec,
    setpriv_ids,
    sh,
)


def main() -> None:
    spec = read_spec()
    root = overlay_root(Path(spec["scratch"]), f"{spec['layer']}:/")
    sh("mount", "-t", "proc", "-o", "nosuid,nodev,noexec", "proc", str(root / "proc"))
    make_dev(root, spec["shm"])
    sh("mount", "-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs", str(root / "sys"))
    bind_kubelet_files(root, spec)
    for m in spec["mounts"]:
        target = in_root(root, m["path"])
        bind(m["source"], target, is_dir=os.path.isdir(m["source"]), read_only=m["readOnly"])
    # As container runtimes do, a missing working directory is created.
    in_root(root, spec["workingDir"]).mkdir(parents=True, exist_ok=True)
    os.chroot(root)
    os.chdir(spec["workingDir"])
    caps = ",".join(f"+{c}" for c in spec["capabilities"])
    sys.stdout.flush()
    os.execve(
        "/usr/bin/setpriv",
        ["setpriv", *setpriv_ids(spec["user"]), f"--bounding-set=-all,{caps}", "--", *spec["argv"]],
        spec["env"],
    )


if __name__ == "__main__":
    main()
