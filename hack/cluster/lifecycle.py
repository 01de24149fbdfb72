"""A cluster's life: ``up`` (started when it is not running, with its
add-ons), ``down`` (every process stopped, the state removed), ``status``,
and add-ons started in a running one (``gang``, ``kueue``)."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from .addon_start import start_addons
from .addons import KUEUE, Addon, Gang, ensure_addon_binaries
from .binaries import ensure_binaries
from .common import log
from .control_plane import _boot, _start_apiserver, _start_controllers, _start_etcd
from .nodes import _add_nodes, _start_kwok, start_pod_logs
from .ports import PORT_TRIES
from .processes import _alive, _ours, _stop
from .state import CORE_PROCS, _running, state_dir


def up(
    name: str,
    gangs: Iterable[Gang] = (),
    with_kueue: bool = False,
    apiserver_flags: Iterable[str] = (),
) -> Path:
    """Start the cluster ``name`` (when it is not running) and the gang
    schedulers ``gangs`` in it, and Kueue when ``with_kueue`` (those not
    running yet). ``apiserver_flags`` are added to kube-apiserver's (the tests'
    and benchmarks' way to shape it, e.g. ``--max-requests-inflight=5``); a
    cluster running with other ones is recreated."""
    addons: list[Addon] = [*gangs, *([KUEUE] if with_kueue else [])]
    extra = list(apiserver_flags)
    workdir = state_dir(name)
    if (workdir / "cluster.json").exists():
        state = json.loads((workdir / "cluster.json").read_text())
        running = _running(state["pids"], CORE_PROCS, workdir)
        if running and state.get("apiserver_flags", []) == extra:
            log(f"cluster {name!r} already running")
            start_addons(name, addons)
            return workdir / "kubeconfig"
        why = "is partly down" if not running else "runs with other kube-apiserver flags"
        log(f"cluster {name!r} {why}; recreating it")
        down(name)
    bin_dir = ensure_binaries()
    for g in addons:  # missing or failing binaries before the cluster starts
        ensure_addon_binaries(g)
    for attempt in range(1, PORT_TRIES + 1):
        try:
            return _start_cluster(name, workdir, bin_dir, addons, extra)
        except SystemExit as exc:  # torn down already
            if "address already in use" not in str(exc) or attempt == PORT_TRIES:
                raise
            log(
                f"cluster {name!r}: a port chosen for it was taken before its process "
                f"bound it ({attempt}/{PORT_TRIES}); starting it again on others"
            )
    raise AssertionError("unreachable")


def _start_cluster(
    name: str, workdir: Path, bin_dir: Path, addons: list[Addon], extra: list[str]
) -> Path:
    """Start the cluster's processes on free ports, its nodes and ``addons``;
    all torn down again if any does not start."""
    started = time.monotonic()
    b = _boot(name, workdir, bin_dir, extra)
    try:
        etcd_url = _start_etcd(b)
        _start_apiserver(b, etcd_url, extra)
        _start_controllers(b)
        start_pod_logs(bin_dir, b.kubeconfig, workdir, b.server, b.procs)
        b.save()
        _start_kwok(b)
        b.save()
        _add_nodes(b)
        log(
            f"cluster {name!r} ready in {time.monotonic() - started:.1f}s: "
            f"{b.server}, kubeconfig {b.kubeconfig}"
        )
        start_addons(name, addons)
    except BaseException:
        with contextlib.suppress(OSError, ValueError):  # keep what start_addons recorded
            recorded = json.loads((workdir / "cluster.json").read_text())["pids"]
            for tool, pid in recorded.items():
                b.procs.setdefault(tool, pid)
        b.save()
        down(name, quiet=True)
        raise
    return b.kubeconfig


def gang(name: str, gangs: Iterable[Gang]) -> None:
    """Start gang schedulers in the running cluster ``name``, beside its
    kube-scheduler (see ``start_addons``); for Volcano, the Queue ``default``
    is created too. Each is recorded under ``gang`` in ``cluster.json``."""
    start_addons(name, gangs)


def kueue(name: str) -> None:
    """Start the Kueue manager in the running cluster ``name`` (see
    ``start_addons``), in its namespace ``kueue-system``, created first.
    It is recorded under ``kueue`` in ``cluster.json``."""
    start_addons(name, [KUEUE])


def down(name: str, quiet: bool = False) -> None:
    workdir = state_dir(name)
    state_file = workdir / "cluster.json"
    if not state_file.exists():
        if not quiet:
            log(f"cluster {name!r} is not running")
        shutil.rmtree(workdir, ignore_errors=True)
        return
    pids = json.loads(state_file.read_text()).get("pids", {})
    # Reverse start order: add-ons, kwok and the controllers first, etcd last.
    _stop(reversed(list(pids.values())), workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    if not quiet:
        log(f"cluster {name!r} stopped")


def status(name: str) -> int:
    workdir = state_dir(name)
    state_file = workdir / "cluster.json"
    if not state_file.exists():
        print(f"cluster {name!r}: not running")
        return 1
    state = json.loads(state_file.read_text())
    ok = True
    for tool, pid in state["pids"].items():
        alive = _alive(pid) and _ours(pid, workdir)
        ok &= alive
        print(f"{tool:28} pid {pid:>7}  {'running' if alive else 'DOWN'}")
    print(f"server      {state['server']}\nkubeconfig  {workdir / 'kubeconfig'}")
    for g, info in state.get("gang", {}).items():
        print(
            f"gang        {g} {info['version']}: schedulerName {info['schedulerName']}, "
            f"logs {', '.join(t + '.log' for t in info['tools'])}"
        )
    if "kueue" in state:
        info = state["kueue"]
        print(
            f"kueue       {info['version']}: namespace {info['namespace']}, "
            f"logs {', '.join(t + '.log' for t in info['tools'])}"
        )
    return 0 if ok else 1
