"""XGBoost for the pod host's containers: the CPU-only wheel and numpy (and the
scipy xgboost imports), pinned, installed from PyPI into a folder of the test
cache that a pod names in its ``PYTHONPATH``, for this machine's Debian
``python3`` (the pod host's containers run this machine's root)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

PACKAGES = ("xgboost-cpu==3.2.0", "numpy==2.3.5", "scipy==1.17.1")
POD_PYTHON = "/usr/bin/python3"
CACHE = Path(os.environ.get("T9K_CACHE_DIR", Path.home() / ".cache" / "t9k-operator"))
TARGET = CACHE / "frameworks" / ("xgboost-" + "-".join(p.split("==")[1] for p in PACKAGES))


def ensure() -> Path:
    """The folder holding the packages, installed once (under a lock)."""
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    with open(TARGET.parent / ".xgboost.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = TARGET / ".installed"
        if not done.exists():
            version = subprocess.run(
                [POD_PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            subprocess.run(
                [
                    sys.executable, "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check",
                    "--no-warn-script-location", "--only-binary=:all:", "--upgrade",
                    "--python-version", version, "--implementation", "cp",
                    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux2014_x86_64",
                    "--target", str(TARGET), *PACKAGES,
                ],
                check=True,
            )  # fmt: skip
            done.touch()
    return TARGET
