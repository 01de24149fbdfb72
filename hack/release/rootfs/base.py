"""The Dockerfile's base, ``debian:<suite>[-slim]``, made from Debian's
packages: a debootstrap of that suite (``--variant=minbase``) set up as
Debian's images are, cached on its own so that a change to the operator's
code redoes only the steps after FROM."""

from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import subprocess
from pathlib import Path

from .cache import cache_dir, log

MIRROR = os.environ.get("T9K_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY_MIRROR = os.environ.get(
    "T9K_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security"
)


def need_root_tools() -> None:
    if os.geteuid() != 0:
        raise SystemExit("rootfs: needs root (debootstrap, chroot and mounts)")
    for tool in ("debootstrap", "unshare", "chroot", "mount"):
        if not shutil.which(tool):
            raise SystemExit(f"rootfs: {tool} not found (bash hack/ensure-test-deps.sh)")


def debian_sources(suite: str) -> str:
    """The APT sources of Debian's own images of ``suite``."""
    return (
        f"Types: deb\nURIs: {MIRROR}\nSuites: {suite} {suite}-updates\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        f"Types: deb\nURIs: {SECURITY_MIRROR}\nSuites: {suite}-security\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )


def build_base(suite: str) -> Path:
    """``debian:<suite>-slim`` from Debian's packages, cached."""
    folder = cache_dir() / "rootfs" / f"base-{suite}-{base_key(suite)}"
    if (folder / "root").is_dir():
        os.utime(folder)  # used: prune() keeps it
        return folder
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log(f"debootstrap {suite} (minbase) from {MIRROR}")
    proc = subprocess.run(
        ["debootstrap", "--variant=minbase", suite, str(tmp / "root"), MIRROR],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise SystemExit(f"rootfs: debootstrap failed:\n{tail}")
    root = tmp / "root"
    (root / "etc/apt/sources.list").unlink(missing_ok=True)
    (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/sources.list.d/debian.sources").write_text(debian_sources(suite))
    # What a built image never carries: debootstrap's downloads and logs.
    shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
    (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
    (root / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "debootstrap", ignore_errors=True)
    # As Debian's images are set up: apt keeps no downloaded packages and no
    # package caches in the image.
    (root / "etc/apt/apt.conf.d/docker-clean").write_text(
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
    )
    for path in (root / "var/cache/apt").glob("*.bin"):
        path.unlink()
    for name in ("etc/hostname", "etc/resolv.conf"):
        (root / name).unlink(missing_ok=True)
        (root / name).touch()
    tmp.rename(folder)
    return folder


def base_key(suite: str) -> str:
    h = hashlib.sha256()
    h.update(f"{suite}\0{MIRROR}\0{SECURITY_MIRROR}\0".encode())
    # The recipe of the base only: other changes to the build keep it.
    h.update(inspect.getsource(build_base).encode())
    h.update(inspect.getsource(debian_sources).encode())
    return h.hexdigest()[:16]
