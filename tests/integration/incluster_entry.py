"""The start of the operator's container, as runc starts it for the Deployment
in manifests/manager/deployment.yaml; run as root by :mod:`incluster` inside
fresh mount, UTS, IPC and PID namespaces (pid 1 of the last) and the pod's
network namespace. Standard library only (podhost/container_start.py does
what the pod host's containers do alike).

Root filesystem: an overlay of the image's filesystem (hack/release/rootfs) with a
private upper layer on a tmpfs, as containerd's snapshot; /proc, a /dev of the
runtime's default devices, /sys read-only, kubelet's /etc/hosts,
/etc/hostname and /etc/resolv.conf, and the ServiceAccount volume read-only
at /var/run/secrets/kubernetes.io/serviceaccount (the mount points created
first, as the runtime does); then the root remounted read-only
(``readOnlyRootFilesystem: true``). Then chroot, chdir, the capability
bounding set emptied (``drop: [ALL]``), no_new_privs
(``allowPrivilegeEscalation: false``), the user and group of
``runAsUser``/``runAsGroup`` with no supplementary groups, and exec of the
image's entrypoint with the container's args under the container's env.
Nothing in the container is writable but /dev/shm, as in a pod.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

# What every container's start does alike, shared with the pod host's: from
# podhost/, which incluster.py puts on this process's PYTHONPATH.
from container_start import (
    bind,
    bind_kubelet_files,
    in_root,
    make_dev,
    overlay_root,
    read_spec,
    sh,
)

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38


def main() -> None:
    spec = read_spec()
    libc = ctypes.CDLL(None, use_errno=True)
    last_cap = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    root = overlay_root(Path(spec["scratch"]), spec["image"])
    sh("mount", "-t", "proc", "-o", "nosuid,nodev,noexec", "proc", str(root / "proc"))
    make_dev(root)
    sh("mount", "-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs", str(root / "sys"))
    bind_kubelet_files(root, spec)
    for m in spec["mounts"]:
        bind(m["source"], in_root(root, m["path"]), is_dir=True, read_only=m["readOnly"])
    sh("hostname", spec["hostname"])
    if spec["readOnlyRoot"]:
        sh("mount", "-o", "remount,ro", str(root))
    os.chroot(root)
    os.chdir(spec["workingDir"])
    for cap in range(last_cap + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"PR_CAPBSET_DROP {cap}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    os.setgroups([])
    os.setgid(spec["gid"])
    os.setuid(spec["uid"])  # from root to another user: every capability goes
    sys.stdout.flush()
    os.execvpe(spec["argv"][0], spec["argv"], spec["env"])


if __name__ == "__main__":
    main()
