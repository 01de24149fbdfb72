"""The progress endpoint served by its event loop (reconcilers/progress/server.py)
to the reporter the replicas run (t9k_operator/report.py): kept connections,
the pace in the answer, a standby's refusal closing the connection."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.reconcilers.integrations.progress_pods import job_path
from t9k_operator.reconcilers.progress.endpoint import MAX_BODY, Answer
from t9k_operator.reconcilers.progress.pacing import Pacer
from t9k_operator.reconcilers.progress.server import EventLoopServer, _render
from t9k_operator.report import Reporter
from t9k_operator.runtime.certs import new_ca, new_serving
from t9k_operator.runtime.tls import DirSource
from tests.unit.reconcilers.test_endpoint import PTJ, World


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
    servers: list[EventLoopServer] = []

    def start(w: World) -> tuple[Reporter, EventLoopServer]:
        server = EventLoopServer(("127.0.0.1", 0), w.endpoint, DirSource(certs))
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
    # delayed ACK: 40 ms a report (hack/bench_progress.py).
    data = _render(Answer(202, "accepted", "accepted", next=2.0), True)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 202 Accepted") and b"Connection" not in head
    assert json.loads(body)["next"] == 2.0
