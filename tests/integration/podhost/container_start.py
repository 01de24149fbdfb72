"""What every container these tests start does alike at its start, as a
container runtime does it: the pod host's (entry.py here) and the operator's
own pod (../incluster_entry.py). Run as root inside the container's fresh
namespaces, before chroot.

Standard library only: those scripts import this module from this folder,
never through the tests package (which needs the project's dependencies)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any


def sh(*args: str) -> None:
    subprocess.run(list(args), check=True)


def read_spec() -> dict[str, Any]:
    """The container's spec: the JSON file named on the command line."""
    spec: dict[str, Any] = json.loads(Path(sys.argv[1]).read_text())
    return spec


def setpriv_ids(user: dict[str, Any]) -> list[str]:
    """setpriv's options that make the process the container's ``user``
    (``uid``, ``gid``, supplementary ``groups``)."""
    groups = ",".join(str(g) for g in user["groups"])
    ids = [f"--reuid={user['uid']}", f"--regid={user['gid']}"]
    ids.append(f"--groups={groups}" if groups else "--clear-groups")
    return ids


def in_root(root: Path, path: str) -> Path:
    """``path`` inside the container's ``root``, each symlink on the way
    resolved within that root (runc's securejoin): an image's ``/var/run ->
    /run`` leads to the container's /run, never this machine's."""
    todo = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        here = root.joinpath(*done, part)
        if not here.is_symlink():
            done.append(part)
            continue
        hops += 1
        if hops > 255:
            raise OSError(f"too many symlinks in {path}")
        link = os.readlink(here)
        if link.startswith("/"):
            done = []
        todo = [p for p in link.split("/") if p not in ("", ".")] + todo
    return root.joinpath(*done)


def mount_point(path: Path, is_dir: bool) -> None:
    if is_dir:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.touch()


def bind(source: str, target: Path, *, is_dir: bool, read_only: bool = False) -> None:
    """``source`` bound at ``target``, its mount point created first (as the
    runtime does), read-only when asked."""
    mount_point(target, is_dir)
    sh("mount", "--bind", source, str(target))
    if read_only:
        sh("mount", "-o", "remount,bind,ro", str(target))


def overlay_root(scratch: Path, lowerdir: str) -> Path:
    """The container's root file system, as containerd's snapshot: an overlay
    of ``lowerdir`` with a private upper layer on a tmpfs mounted at
    ``scratch``."""
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
        f"lowerdir={lowerdir},upperdir={upper},workdir={work}",
        str(root),
    )
    return root


def bind_kubelet_files(root: Path, spec: dict[str, Any]) -> None:
    """kubelet's managed /etc/hosts, /etc/hostname and /etc/resolv.conf."""
    for src, dest in (
        (spec["hosts"], "etc/hosts"),
        (spec["hostnameFile"], "etc/hostname"),
        (spec["resolv"], "etc/resolv.conf"),
    ):
        bind(src, root / dest, is_dir=False)


DEVICES = {  # runc's default devices: name -> (major, minor)
    "null": (1, 3),
    "zero": (1, 5),
    "full": (1, 7),
    "random": (1, 8),
    "urandom": (1, 9),
    "tty": (5, 0),
}


def make_dev(root: Path, shm: str | None = None) -> None:
    """The container's /dev as runc makes it (its default spec): a tmpfs with
    the default devices, the /proc/self/fd links, a private devpts, the IPC
    namespace's mqueue, and /dev/shm: ``shm`` bound in, the pod's (containerd's
    CRI makes one 64 MiB tmpfs per pod sandbox and mounts it into each of its
    containers), else a 64 MiB tmpfs of the container's own."""
    dev = root / "dev"
    sh("mount", "-t", "tmpfs", "-o", "mode=0755,size=65536k,nosuid,noexec", "tmpfs", str(dev))
    for name, (major, minor) in DEVICES.items():
        os.mknod(dev / name, stat.S_IFCHR | 0o666, os.makedev(major, minor))
        (dev / name).chmod(0o666)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ):
        (dev / name).symlink_to(target)
    for name in ("pts", "shm", "mqueue"):
        (dev / name).mkdir()
    sh("mount", "-t", "devpts", "-o", "newinstance,ptmxmode=0666,mode=0620,gid=5,nosuid,noexec",
       "devpts", str(dev / "pts"))  # fmt: skip
    if shm is not None:
        sh("mount", "--bind", shm, str(dev / "shm"))
    else:
        sh("mount", "-t", "tmpfs", "-o", "mode=1777,size=65536k,nosuid,nodev,noexec", "shm",
           str(dev / "shm"))  # fmt: skip
    sh("mount", "-t", "mqueue", "-o", "nosuid,nodev,noexec", "mqueue", str(dev / "mqueue"))
