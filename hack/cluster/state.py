"""A cluster's state folder, ``CACHE/clusters/<name>/``, and its
``cluster.json``: ports, process ids (so ``down`` stops exactly what ``up``
started), the binaries' folder, the API server's address and flags, and the
add-ons running."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .common import CACHE
from .processes import _alive, _ours

# The control plane's processes; add-ons come and go beside them.
CORE_PROCS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "pod-logs",
    "kwok",
)


def state_dir(name: str) -> Path:
    return CACHE / "clusters" / name


def _running(pids: dict[str, int], tools: Iterable[str], workdir: Path) -> bool:
    """Whether each of ``tools`` runs: recorded in ``pids``, alive, and ours."""
    return all(t in pids and _alive(pids[t]) and _ours(pids[t], workdir) for t in tools)


def _save(workdir: Path, state: dict[str, Any]) -> None:
    (workdir / "cluster.json").write_text(json.dumps(state, indent=2) + "\n")


def _running_state(name: str) -> dict[str, Any]:
    workdir = state_dir(name)
    state_file = workdir / "cluster.json"
    state: dict[str, Any] = (
        json.loads(state_file.read_text()) if state_file.exists() else {"pids": {}}
    )
    pids = state["pids"]
    if not _running(pids, CORE_PROCS, workdir):
        raise SystemExit(
            f"cluster: cluster {name!r} is not running: "
            f"`python3 -m hack.cluster up --name {name}` first"
        )
    return state
