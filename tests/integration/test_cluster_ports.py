"""The local cluster's start (hack/cluster) when a port it chose is taken
before its process binds it: it picks a port by binding port 0 and closing
it, so any connection of this machine's may take the port meanwhile (a busy
machine's outgoing connections use the same ephemeral range)."""

from __future__ import annotations

import itertools
import json
import os
import socket

import pytest

from hack.cluster import control_plane, down, state_dir, up
from hack.cluster.processes import _alive


def test_a_port_taken_before_its_process_binds_it_starts_the_cluster_again_on_others(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    real, calls = control_plane.free_port, itertools.count()
    # The first start's ports are etcd's two, the API server's, then KWOK's:
    # KWOK's is the one taken, as it was on a benchmark machine.
    monkeypatch.setattr(control_plane, "free_port", lambda: taken if next(calls) == 3 else real())
    name = f"t9k-ports-{os.getpid()}"
    try:
        up(name)
        state = json.loads((state_dir(name) / "cluster.json").read_text())
        assert taken not in state["ports"].values()
        assert all(_alive(pid) for pid in state["pids"].values())
        err = capfd.readouterr().err
        assert "kwok exited" not in err  # said as a retry, not as the failure
        assert "was taken before its process bound it (1/3); starting it again" in err
    finally:
        down(name, quiet=True)
        held.close()
