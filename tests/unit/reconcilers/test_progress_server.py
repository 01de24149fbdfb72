"""The progress endpoint served by its event loop (integrations/progress/server.py)
to the reporter the replicas run (t9k_operator/report.py): kept connections,
the pace in the answer, a standby's refusal closing the connection."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from t9k_operator.integrations.progress.endpoint import MAX_BODY, Answer
from t9k_operator.integrations.progress.pacing import Pacer
from t9k_operator.integrations.progress.pods import job_path
from t9k_operator.integrations.progress.server import ProgressServer
from t9k_operator.report import Reporter
from t9k_operator.runtime import front as front_module
from t9k_operator.runtime.certs import new_ca, new_serving
from t9k_operator.runtime.front import render
from t9k_operator.runtime.tls import DirSource
from tests.fakes import FakeClock
from tests.unit.reconcilers.test_endpoint import PTJ, World
from tests.unit.test_tls import served_serial


@pytest.fixture
def certs(tmp_path: Path) -> Path:
    where = tmp_path / "certs"
    where.mkdir()
    ca, ca_key = new_ca("test CA")
    cert, key = new_serving(ca, ca_key, ["127.0.0.1"])
    for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
        (where / name).write_bytes(data)
    (tmp_path / "token").write_text("ta\n")
    return where


@pytest.fixture
def serve(certs: Path) -> Iterator[Any]:
    servers: list[ProgressServer] = []

    def start(w: World) -> tuple[Reporter, ProgressServer]:
        server = ProgressServer(("127.0.0.1", 0), w.endpoint, DirSource(certs))
        server.start()
        servers.append(server)
        url = f"https://127.0.0.1:{server.port}{job_path('ns', PTJ.plural, 'a')}"
        token = str(certs.parent / "token")
        return Reporter(url, token_file=token, ca_file=str(certs / "ca.crt"), timeout=5), server

    yield start
    for server in servers:
        server.stop()


def test_a_reporter_keeps_one_connection_and_is_told_its_pace(serve: Any) -> None:
    w = World(pacer=Pacer(capacity=0.25, seed=1))
    r, _ = serve(w)
    assert all(r.send({"step": step}) for step in range(3))
    assert r.connections == 1
    assert 3.2 <= r.interval <= 4.0  # one process at a quarter of a report a second
    (kept,) = w.store.latest("ja")
    assert kept.report.step == 2


def test_a_liveness_report_over_the_wire(serve: Any) -> None:
    w = World()
    r, _ = serve(w)
    assert r.send({"step": 1})
    r.rank, r.full = 3, False
    r.report({"step": 9})
    assert r.flush(5)
    (kept,) = w.store.latest("ja")
    assert kept.report.step == 1 and w.endpoint.pacer.job_ranks("ns/a") == 2


def test_a_standby_closes_the_connection(serve: Any) -> None:
    leader = [False]
    w = World(is_leader=lambda: leader[0])
    r, _ = serve(w)
    assert r.send({"step": 1}) is False
    leader[0] = True
    assert r.send({"step": 2})
    assert r.connections == 2


def test_a_body_too_large_is_refused_without_reading_it(serve: Any, certs: Path) -> None:
    _, server = serve(World())
    ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=5, context=ctx)
    conn.request("POST", job_path("ns", PTJ.plural, "a"), body=b"x" * (MAX_BODY + 1))
    resp = conn.getresponse()
    assert resp.status == 413 and resp.getheader("Connection") == "close"
    conn.close()


def test_the_answer_is_one_write() -> None:
    # Headers and body in two writes would wait, with Nagle on, for the client's
    # delayed ACK: 40 ms a report (hack/bench/progress/).
    answer = Answer(202, "accepted", "accepted", next=2.0)
    data = render(answer.status, answer.retry_after, answer.body(), True)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 202 Accepted") and b"Connection" not in head
    assert json.loads(body)["next"] == 2.0


# -- the front: a process of its own -------------------------------------------


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def _accepted_inodes(port: int) -> set[str]:
    """The inodes of this machine's established TCP connections whose local
    port is ``port``: the server's side of its connections."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        if int(local.split(":")[1], 16) == port and state == "01":
            inodes.add(inode)
    return inodes


def test_the_connections_are_held_by_a_front_process_not_the_operators(serve: Any) -> None:
    w = World()
    r, server = serve(w)
    assert r.send({"step": 1})
    front = server.front
    assert front is not None and front.poll() is None and front.pid != os.getpid()
    accepted = _accepted_inodes(server.port)
    assert len(accepted) == 1
    assert accepted <= _socket_inodes(front.pid)
    assert not accepted & _socket_inodes(os.getpid())


def test_the_front_needs_the_standard_library_only() -> None:
    # Its module as it is run (python -I front.py): nothing of the operator's
    # on the path, not even its own folder (whose logging.py is not the
    # standard library's).
    probe = (
        f"import runpy, sys; runpy.run_path({front_module.__file__!r}, run_name='front'); "
        "print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] in sys.argv[1:]))"
    )
    third_party = ["t9k_operator", "structlog", "cachetools", "prometheus_client", "pydantic"]
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe, *third_party],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


class SlowToSpawn(ProgressServer):
    """Its front started half a second late, as on a fresh machine whose
    serving thread loses the race to whoever reads the front first."""

    def _spawn(self, channel: socket.socket) -> subprocess.Popen[bytes]:
        time.sleep(0.5)
        return super()._spawn(channel)


class NeverServes(ProgressServer):
    """A front that reads its channel and never says it serves."""

    def _spawn(self, channel: socket.socket) -> subprocess.Popen[bytes]:
        drain = "import os, sys\nwhile os.read(int(sys.argv[1]), 65536): pass"
        argv = [sys.executable, "-I", "-c", drain, str(channel.fileno())]
        return subprocess.Popen(argv, pass_fds=(channel.fileno(),), stdin=subprocess.DEVNULL)


def test_start_returns_once_the_front_serves(certs: Path) -> None:
    server = SlowToSpawn(("127.0.0.1", 0), World().endpoint, DirSource(certs))
    try:
        began = time.monotonic()
        served = server.start()
        front = server.front
        assert front is not None, "start() returned before the front was started"
        assert served is True and server.serving.is_set() and front.poll() is None
        assert time.monotonic() - began >= 0.5
    finally:
        server.stop()
    assert not server.serving.is_set()


def test_a_front_that_does_not_serve_ends_the_wait_at_the_timeout(certs: Path) -> None:
    server = NeverServes(("127.0.0.1", 0), World().endpoint, DirSource(certs))
    try:
        began = time.monotonic()
        assert server.start(timeout=0.5) is False
        assert 0.5 <= time.monotonic() - began < 5
        assert not server.serving.is_set()
    finally:
        server.stop()


def test_a_kept_connection_costs_the_front_tens_of_kib_not_hundreds(
    serve: Any, certs: Path
) -> None:
    # asyncio's TLS layer zeroes a 256 KiB read buffer for every connection
    # unless told otherwise: 10,000 reporters would take the front 2.8 GiB.
    # (500 connections here: about 80 KiB each with the cap, 330 without.)
    _, server = serve(World())
    ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    rss_before = _rss_kib(server.front.pid)
    held = []
    try:
        for _ in range(500):
            raw = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            conn = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            conn.sendall(b"POST /other HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
            assert conn.recv(4096).startswith(b"HTTP/1.1 404")  # read, answered, kept
            held.append(conn)
        each = (_rss_kib(server.front.pid) - rss_before) / len(held)
        assert each < 160, f"{each:.0f} KiB a connection"
    finally:
        for conn in held:
            conn.close()


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def test_a_front_that_dies_is_started_again_and_its_reporters_reconnect(serve: Any) -> None:
    w = World()
    r, server = serve(w)
    assert r.send({"step": 1})
    first = server.front
    first.kill()
    deadline = time.monotonic() + 10
    while not (server.front is not first and server.front.poll() is None):
        assert time.monotonic() < deadline, "no front started again"
        time.sleep(0.05)
    assert r.send({"step": 2})  # its kept connection was the first front's: a new one
    assert r.connections == 2 and server.fronts_started == 2
    (kept,) = w.store.latest("ja")
    assert kept.report.step == 2


def test_the_front_exits_with_the_server_and_the_port_closes(serve: Any) -> None:
    r, server = serve(World())
    assert r.send({"step": 1})
    front = server.front
    server.stop()
    assert front.poll() is not None
    assert not Path(f"/proc/{front.pid}").exists() or "Z" in _state(front.pid)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_renewed_certificate_reaches_the_front(tmp_path: Path) -> None:
    where = tmp_path / "renewing"
    where.mkdir()

    def write() -> bytes:
        ca, ca_key = new_ca("test CA")
        cert, key = new_serving(ca, ca_key, ["localhost"])
        for name, data in (("ca.crt", ca), ("tls.crt", cert), ("tls.key", key)):
            (where / name).write_bytes(data)
        return cert

    first = write()
    server = ProgressServer(("127.0.0.1", 0), World().endpoint, DirSource(where))
    server.start()
    try:
        assert served_serial(server.port, where / "ca.crt") == serial(first)
        time.sleep(0.01)
        second = write()
        os.utime(where / "tls.crt", (time.time() + 5, time.time() + 5))
        assert server.reload()
        deadline = time.monotonic() + 5  # the front loads it as it reads its channel
        while served_serial(server.port, where / "ca.crt") != serial(second):
            assert time.monotonic() < deadline, "the front still serves the first certificate"
            time.sleep(0.05)
    finally:
        server.stop()


def serial(pem: bytes) -> int:
    return x509.load_pem_x509_certificate(pem).serial_number


def test_a_front_that_served_a_while_is_restarted_after_the_first_delay(certs: Path) -> None:
    # The delays double while fronts keep failing at once; one that served
    # longer than the longest delay is a new failure, not the same one.
    waited: list[float] = []

    class Clock(FakeClock):
        def wait(self, event: threading.Event, seconds: float) -> bool:
            waited.append(seconds)
            return len(waited) == 5

    clock = Clock()
    server = ProgressServer(("127.0.0.1", 0), World().endpoint, DirSource(certs), clock=clock)
    served = iter([100.0, 0.0, 0.0, 100.0, 0.0])  # how long each front serves
    server._serve_one_front = lambda: clock.step(next(served))  # type: ignore[method-assign]
    try:
        server._run()
    finally:
        server.stop()
    assert waited == [1.0, 2.0, 4.0, 1.0, 2.0]
