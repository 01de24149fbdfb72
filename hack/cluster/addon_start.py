"""Add-ons started in a running cluster, beside its control plane: their CRDs
installed and Established, what they need created first, their processes
started and waited for until they serve, each recorded in ``cluster.json``
(gang schedulers under ``gang``, Kueue under ``kueue``) so ``down`` stops it
with the rest."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .addons import Addon, Gang, ensure_addon_binaries
from .cache import _locked
from .common import log
from .kueue_manager import _create_namespace, _visibility_served
from .kueue_webhook import KUEUE_NAMESPACE
from .launches import _launches
from .processes import _healthy, _start, _stop, _wait, kubectl
from .state import _running, _running_state, _save, state_dir


def _install_crds(g: Addon, folder: Path, bin_dir: Path, kubeconfig: Path) -> None:
    crds = str(folder / "crds")
    kubectl(bin_dir, kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", crds)
    proc = kubectl(
        bin_dir,
        kubeconfig,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "-f",
        crds,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"cluster: the CRDs of {g.title} are not Established:\n{proc.stderr}")


def _default_queue(bin_dir: Path, kubeconfig: Path) -> bool:
    """Volcano's Queue ``default``, where PodGroups naming no queue go. The
    scheduler would create it too, on its first start; this way it is there
    before any pod is."""
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1, "reclaimable": True},
    }
    proc = kubectl(bin_dir, kubeconfig, "create", "-f", "-", input_=json.dumps(queue), check=False)
    if proc.returncode == 0 or "AlreadyExists" in proc.stderr:
        return True
    raise ValueError(proc.stderr)  # retried by _wait: discovery may lag the CRD


def _record(state: dict[str, Any], g: Addon) -> tuple[dict[str, Any], str]:
    """Where ``cluster.json`` records ``g``: gang schedulers under ``gang``."""
    if isinstance(g, Gang):
        return state.setdefault("gang", {}), g.name
    return state, g.name


def _prepare(g: Addon, bin_dir: Path, kubeconfig: Path, workdir: Path) -> None:
    """What must exist in the cluster before ``g`` starts, beside its CRDs."""
    if g.name == "volcano":
        _wait(
            "Volcano's Queue default",
            lambda: _default_queue(bin_dir, kubeconfig),
            30,
            {},
            workdir,
        )
    if g.name == "kueue":
        _create_namespace(bin_dir, kubeconfig)


def _tools(g: Addon) -> list[str]:
    return [tool for tool, _ in g.binaries]


def start_addons(name: str, addons: Iterable[Addon]) -> None:
    """Start ``addons`` in the running cluster ``name``; those already running
    are left alone. Returns once each serves its health check, with its CRDs
    Established. Their pids join ``cluster.json``, so ``down`` stops them;
    each logs to ``<tool>.log`` in the cluster's state folder."""
    addons = list(addons)
    if not addons:
        return
    workdir = state_dir(name)
    pids = _running_state(name)["pids"]
    # The binaries of every one to start, before starting any.
    folders = {
        g.name: ensure_addon_binaries(g) for g in addons if not _running(pids, _tools(g), workdir)
    }
    with _locked(workdir / ".addons.lock", "starting add-ons"):
        state = _running_state(name)
        for g in addons:
            if _running(state["pids"], _tools(g), workdir):
                log(f"{g.title} already running in cluster {name!r}")
                continue
            _start_addon(g, workdir, state, folders.get(g.name))


def _start_addon(g: Addon, workdir: Path, state: dict[str, Any], folder: Path | None) -> None:
    """``g`` started in the cluster of ``workdir``, whose ``state`` records it;
    ``folder``: its binaries' (None: looked up again)."""
    pids: dict[str, int] = state["pids"]
    bin_dir, kubeconfig = Path(state["bin_dir"]), workdir / "kubeconfig"
    tools = _tools(g)

    def save() -> None:
        _save(workdir, state)

    _stop([pids.pop(t) for t in tools if t in pids], workdir)  # what is left of a crash
    started = time.monotonic()
    folder = folder or ensure_addon_binaries(g)  # or it died meanwhile
    _install_crds(g, folder, bin_dir, kubeconfig)
    _prepare(g, bin_dir, kubeconfig, workdir)
    holder, key = _record(state, g)
    info: dict[str, Any] = {"version": g.version, "bin_dir": str(folder), "tools": tools}
    if isinstance(g, Gang):
        info["schedulerName"] = g.scheduler_name
        what = f"schedulerName {g.scheduler_name}"
    else:
        info["namespace"] = KUEUE_NAMESPACE
        what = f"namespace {KUEUE_NAMESPACE}"
    holder[key] = info
    try:
        _launch(g, workdir, state, folder, save)
    except BaseException:
        _stop([pids.pop(t) for t in tools if t in pids], workdir)
        holder.pop(key, None)
        save()
        raise
    if g.name == "kueue" and info.get("visibility"):
        manager = {t: pids[t] for t in tools}
        what += _visibility_served(info, bin_dir, kubeconfig, workdir, manager, save)
    log(
        f"{g.title} {g.version} ready in {time.monotonic() - started:.1f}s "
        f"({what}; logs {workdir}/{tools[0]}.log)"
    )


def _launch(
    g: Addon, workdir: Path, state: dict[str, Any], folder: Path, save: Callable[[], None]
) -> None:
    """The processes of ``g`` (see ``_launches``), from ``folder``, each
    recorded in ``state`` and waited for until it serves."""
    pids: dict[str, int] = state["pids"]
    for launch in _launches(g, workdir, state):
        # $KUBECONFIG too: the scheduler-plugins controller reads only
        # that, and a plugin of Volcano's builds a client from it (else
        # from ~/.kube/config, which may name some other cluster).
        env = {
            **os.environ,
            "KUBECONFIG": str(workdir / f"{launch.tool}.kubeconfig"),
            **launch.env,
        }
        pids[launch.tool] = _start(
            folder, launch.tool, launch.args, workdir, env=env, wrap=launch.wrap
        )
        save()
        _wait(
            f"{launch.tool} to serve {launch.health}",
            functools.partial(_healthy, launch.health, workdir / "pki"),
            60,
            {launch.tool: pids[launch.tool]},
            workdir,
        )
