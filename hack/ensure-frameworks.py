#!/usr/bin/env python3
"""The training frameworks the pod host's containers import in the tests that
train for real, installed once into the test cache and printed.

Each framework is a folder ``$T9K_CACHE_DIR/frameworks/<name>-<digest>/``
(default cache ``~/.cache/t9k-operator``) holding the pinned packages of
``requirements/<name>-test.txt``, every dependency pinned, installed by
Debian's ``/usr/bin/python3`` (the interpreter of the pods' root file system)
with ``pip install --target``: a test's pod template names the folder in
``PYTHONPATH``. The digest is the requirements file's, so a changed pin makes
a new folder. Usage: ``hack/ensure-frameworks.py [NAME ...]`` (default: all);
prints each folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = "/usr/bin/python3"
FRAMEWORKS = ("tensorflow", "tensorboard-s3")


def cache_dir() -> Path:
    return Path(os.environ.get("T9K_CACHE_DIR") or Path.home() / ".cache" / "t9k-operator")


def ensure(name: str) -> Path:
    """The folder of ``name``'s pinned packages, installed if missing."""
    pins = ROOT / "requirements" / f"{name}-test.txt"
    digest = hashlib.sha256(pins.read_bytes()).hexdigest()[:12]
    folder = cache_dir() / "frameworks" / f"{name}-{digest}"
    if folder.is_dir():
        return folder
    tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    print(f"installing {name} for {PYTHON} into {folder}", file=sys.stderr)
    subprocess.run(
        [PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--only-binary=:all:", "--target", str(tmp), "-r", str(pins)],
        check=True,
    )  # fmt: skip
    tmp.rename(folder)
    return folder


def main(argv: list[str]) -> int:
    for name in argv or FRAMEWORKS:
        print(ensure(name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
