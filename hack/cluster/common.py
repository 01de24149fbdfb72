"""What every part of the local cluster shares: where hack/, the third-party
files it builds and runs from (hack/third_party) and the cache are, the
pinned versions (hack/versions.env), and the log."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HACK = Path(__file__).resolve().parents[1]
# The Go wrapper modules and KWOK's files. The binaries' cache folders are named
# by version and content, never by this path.
THIRD_PARTY = HACK / "third_party"
CACHE = Path(os.environ.get("T9K_CACHE_DIR", Path.home() / ".cache" / "t9k-operator"))
K8S_TOOLS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ALL_TOOLS = (*K8S_TOOLS, "etcd", "kwok")


def log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def versions() -> dict[str, str]:
    out = {}
    for line in (HACK / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out
