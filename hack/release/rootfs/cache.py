"""Where the root filesystems are kept (``$T9K_CACHE_DIR/rootfs/``), the lock
builds run under, and the pruning of image folders no one has used for a
while (each some 400 MB)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

IGNORED_IN_HASH = ("__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache")
"""Caches left out of a build's key and of what COPY copies."""


def cache_dir() -> Path:
    return Path(os.environ.get("T9K_CACHE_DIR") or Path.home() / ".cache" / "t9k-operator")


def log(msg: str) -> None:
    print(f"rootfs: {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


KEEP_UNUSED = 6 * 3600  # seconds an unused image folder is kept
KEEP_NEWEST = 3  # image folders always kept, the most recently used


def used(folder: Path) -> Path:
    """Mark ``folder`` used now (its build.json's time), and return it."""
    os.utime(folder / "build.json")
    return folder


def prune(keep: Path) -> None:
    """Remove image folders (each some 400 MB; every change to the operator's
    code makes one) unused for KEEP_UNUSED, but never the KEEP_NEWEST most
    recently used nor ``keep``; and bases no build has used for as long."""
    now = time.time()
    for tmp in (cache_dir() / "rootfs").glob("*.tmp*"):
        # Left by a build that died: builds run under the lock prune() is under.
        shutil.rmtree(tmp, ignore_errors=True)
    folders = [f for f in (cache_dir() / "rootfs").iterdir() if (f / "build.json").is_file()]
    folders.sort(key=lambda f: (f / "build.json").stat().st_mtime, reverse=True)
    bases_in_use = set()
    for i, folder in enumerate(folders):
        age = now - (folder / "build.json").stat().st_mtime
        if folder == keep or i < KEEP_NEWEST or age < KEEP_UNUSED:
            with contextlib.suppress(ValueError, KeyError, OSError):
                info = json.loads((folder / "build.json").read_text())
                bases_in_use.add(Path(info["base_folder"]).name)
            continue
        log(f"removing {folder.name}, unused for {age / 3600:.0f} h")
        shutil.rmtree(folder, ignore_errors=True)
    for base in (cache_dir() / "rootfs").glob("base-*"):
        if base.name in bases_in_use or now - base.stat().st_mtime < KEEP_UNUSED:
            continue
        log(f"removing {base.name}, no build uses it")
        shutil.rmtree(base, ignore_errors=True)
