"""The progress reporter (t9k_operator/report.py) against a local HTTPS server
with a self-signed certificate made here: what reaches the server, that it
never blocks or raises when the server is away, that only the latest of many
reports waits, and that the token file is read again for every report."""

from __future__ import annotations

import ast
import datetime
import ipaddress
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from t9k_operator import report as reportmod
from t9k_operator.report import MIN_INTERVAL, Reporter, from_env, payload

REPORT_PY = Path(reportmod.__file__)


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / "tls.crt", tmp / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


class Endpoint:
    """An HTTPS server that records what it is sent; ``gate`` holds each
    request until it is set."""

    def __init__(self, tmp: Path) -> None:
        self.ca, key = _self_signed(tmp)
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.arrived = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                endpoint.arrived.set()
                endpoint.gate.wait(10)
                length = int(self.headers["Content-Length"])
                body = json.loads(self.rfile.read(length))
                endpoint.received.append((self.headers.get("Authorization", ""), body))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/v1/progress"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[Endpoint]:
    e = Endpoint(tmp_path)
    yield e
    e.close()


@pytest.fixture
def token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("token-1\n")
    return path


def test_a_report_reaches_the_endpoint_over_tls_with_the_token(
    endpoint: Endpoint, token: Path
) -> None:
    r = Reporter(endpoint.url, token_file=str(token), ca_file=str(endpoint.ca), timeout=5)
    r.report(payload(step=10, total_steps=100, epoch=1, metrics={"loss": 0.25}) or {})
    assert r.flush(10)
    assert endpoint.received == [
        (
            "Bearer token-1",
            {"step": 10, "totalSteps": 100, "epoch": 1, "metrics": {"loss": 0.25}},
        )
    ]
    assert (r.sent, r.failed, r.dropped) == (1, 0, 0)


def test_the_token_file_is_read_again_for_every_report(endpoint: Endpoint, token: Path) -> None:
    r = Reporter(endpoint.url, token_file=str(token), ca_file=str(endpoint.ca), timeout=5)
    r.report({"step": 1})
    assert r.flush(10)
    token.write_text("token-2\n")  # kubelet rotated the projected token
    r.report({"step": 2})
    assert r.flush(10)
    assert [auth for auth, _ in endpoint.received] == ["Bearer token-1", "Bearer token-2"]


def test_a_process_sends_at_most_one_report_a_second(endpoint: Endpoint, token: Path) -> None:
    r = Reporter(endpoint.url, token_file=str(token), ca_file=str(endpoint.ca), timeout=5)
    started = time.monotonic()
    for step in range(30):  # a fast training: a step every 50 ms
        r.report({"step": step})
        time.sleep(0.05)
    assert r.flush(10)
    took = time.monotonic() - started
    steps = [body["step"] for _, body in endpoint.received]
    assert steps[0] == 0 and steps[-1] == 29  # the first at once, the last not lost
    assert len(steps) <= took / MIN_INTERVAL + 1, f"{len(steps)} sends in {took:.1f} s"


def test_many_reports_while_one_is_sent_leave_only_the_latest_waiting(
    endpoint: Endpoint, token: Path
) -> None:
    r = Reporter(endpoint.url, token_file=str(token), ca_file=str(endpoint.ca), timeout=5)
    endpoint.gate.clear()
    r.report({"step": 0})
    assert endpoint.arrived.wait(10)  # step 0 is being sent, held by the server
    started = time.monotonic()
    for step in range(1, 1001):
        r.report({"step": step})
    assert time.monotonic() - started < 1.0  # never waits on the send in flight
    endpoint.gate.set()
    assert r.flush(10)
    assert [body["step"] for _, body in endpoint.received] == [0, 1000]
    assert (r.sent, r.dropped) == (2, 999)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_operator_that_is_away_costs_the_training_nothing(token: Path) -> None:
    url = f"https://127.0.0.1:{_closed_port()}/v1/progress"
    r = Reporter(url, token_file=str(token), timeout=0.5)
    started = time.monotonic()
    for step in range(100):
        r.report({"step": step})  # no exception
    assert time.monotonic() - started < 0.5
    assert r.flush(5)  # the sender gives up within its timeout
    assert r.sent == 0
    assert r.failed >= 1
    assert r.failed + r.dropped == 100


def test_a_server_that_never_answers_is_given_up_on_within_the_timeout(
    endpoint: Endpoint, token: Path
) -> None:
    endpoint.gate.clear()  # accepts the connection, never answers
    r = Reporter(endpoint.url, token_file=str(token), ca_file=str(endpoint.ca), timeout=0.5)
    started = time.monotonic()
    r.report({"step": 1})
    assert r.flush(5)
    assert time.monotonic() - started < 3
    assert (r.sent, r.failed) == (0, 1)


def test_an_untrusted_certificate_is_refused(endpoint: Endpoint, token: Path) -> None:
    r = Reporter(endpoint.url, token_file=str(token), timeout=5)  # no CA: the system's
    assert r.send({"step": 1}) is False
    assert endpoint.received == []


def test_a_missing_token_file_drops_the_report(endpoint: Endpoint, tmp_path: Path) -> None:
    r = Reporter(endpoint.url, token_file=str(tmp_path / "absent"), ca_file=str(endpoint.ca))
    assert r.send({"step": 1}) is False
    assert endpoint.received == []


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"T9K_PROGRESS_URL": ""}, False),
        ({"T9K_PROGRESS_URL": "http://op:8443/v1/progress"}, False),  # never in the clear
        ({"T9K_PROGRESS_URL": "https://op:8443/v1/progress"}, True),
    ],
)
def test_the_environment_turns_reporting_on(env: dict[str, str], on: bool) -> None:
    assert isinstance(from_env(env), Reporter) is on


def test_from_env_reads_the_token_ca_and_timeout() -> None:
    r = from_env(
        {
            "T9K_PROGRESS_URL": "https://op:8443/v1/progress",
            "T9K_PROGRESS_TOKEN_FILE": "/var/run/t9k/token",
            "T9K_PROGRESS_CA_FILE": "/var/run/t9k/ca.crt",
            "T9K_PROGRESS_TIMEOUT": "nan",
        }
    )
    assert isinstance(r, Reporter)
    assert (r.token_file, r.ca_file, r.timeout) == (
        "/var/run/t9k/token",
        "/var/run/t9k/ca.crt",
        reportmod.DEFAULT_TIMEOUT,
    )


def test_report_without_the_environment_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("T9K_PROGRESS_URL", raising=False)
    monkeypatch.setattr(reportmod, "_default", None)
    reportmod.report(step=1, metrics={"loss": 1.0})
    assert isinstance(reportmod._default, reportmod._Off)


def test_report_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def report(self, body: dict[str, Any]) -> None:
            raise RuntimeError("boom")

    monkeypatch.setattr(reportmod, "_default", Broken())
    reportmod.report(step=1)  # swallowed
    reportmod.report(step=object(), metrics={"x": "y"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "body"),
    [
        ({}, None),
        ({"step": 3.0}, {"step": 3}),
        ({"epoch": 1.5}, {"epoch": 1.5}),
        ({"step": float("nan"), "total_steps": float("inf")}, None),
        ({"step": True}, None),
        (
            {"metrics": {"loss": float("nan"), "acc": 0.5, "lr": "1e-3"}},
            {"metrics": {"acc": 0.5, "lr": 0.001}},
        ),
        (
            {"metrics": {f"m{i:02}": i for i in range(20)}},
            {"metrics": {f"m{i:02}": i for i in range(16)}},
        ),
    ],
)
def test_the_payload_keeps_finite_numbers_only(kwargs: dict[str, Any], body: Any) -> None:
    assert payload(**kwargs) == body


def test_the_command_line_sends_one_report(endpoint: Endpoint, token: Path) -> None:
    env = {
        "T9K_PROGRESS_URL": endpoint.url,
        "T9K_PROGRESS_TOKEN_FILE": str(token),
        "T9K_PROGRESS_CA_FILE": str(endpoint.ca),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-m", "t9k_operator.report", "--step", "10", "--total-steps", "100",
         "--metric", "loss=0.3"],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert endpoint.received == [
        ("Bearer token-1", {"step": 10, "totalSteps": 100, "metrics": {"loss": 0.3}})
    ]


def test_the_command_line_exits_0_when_the_operator_is_away(token: Path) -> None:
    env = {
        "T9K_PROGRESS_URL": f"https://127.0.0.1:{_closed_port()}/",
        "T9K_PROGRESS_TOKEN_FILE": str(token),
        "T9K_PROGRESS_TIMEOUT": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "t9k_operator.report", "--step", "1"],
        env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert "not taken" in done.stderr


def test_the_module_is_standalone_standard_library_only() -> None:
    """It can be copied next to a script: no import of the project or of any
    package outside the standard library."""
    tree = ast.parse(REPORT_PY.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0
            names.add((node.module or "").split(".")[0])
    assert names - {"__future__"} <= sys.stdlib_module_names
    assert "t9k_operator" not in names


def test_a_copy_of_the_module_runs_alone(tmp_path: Path) -> None:
    (tmp_path / "t9k_report.py").write_text(REPORT_PY.read_text())
    code = "import t9k_report; t9k_report.report(step=1); print('ok')"
    done = subprocess.run(
        [sys.executable, "-E", "-s", "-c", code],
        cwd=tmp_path, env={}, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.stdout.strip() == "ok", done.stderr


class PacingEndpoint:
    """An HTTP/1.1 (keep-alive) HTTPS server that answers each report with
    ``next`` (None: none) and records each request's connection and headers."""

    def __init__(self, tmp: Path, pace: float | None = 2.0) -> None:
        self.ca, key = _self_signed(tmp)
        self.pace = pace
        self.close_next = False  # close the connection after the next answer
        self.status = 202
        self.checkpoint = False  # the answers ask for a checkpoint
        self.requested_at: str | None = None  # and say when it was asked
        self.received: list[tuple[Any, dict[str, str], dict[str, Any]]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                body = json.loads(self.rfile.read(length))
                endpoint.received.append((self.client_address, dict(self.headers), body))
                answer = {"result": "accepted"}
                if endpoint.pace is not None:
                    answer["next"] = endpoint.pace  # type: ignore[assignment]
                if endpoint.checkpoint:
                    answer["checkpoint"] = True  # type: ignore[assignment]
                    if endpoint.requested_at:
                        answer["checkpointRequestedAt"] = endpoint.requested_at
                data = json.dumps(answer).encode()
                self.send_response(endpoint.status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if endpoint.close_next:
                    endpoint.close_next = False
                    self.wfile.flush()
                    self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.ca, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}/v1/progress"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def connections(self) -> int:
        return len({address for address, _, _ in self.received})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def paced(tmp_path: Path) -> Iterator[PacingEndpoint]:
    e = PacingEndpoint(tmp_path)
    yield e
    e.close()


def test_reports_share_one_kept_connection(paced: PacingEndpoint, token: Path) -> None:
    r = Reporter(paced.url, token_file=str(token), ca_file=str(paced.ca), timeout=5)
    assert all(r.send({"step": step}) for step in range(5))
    assert paced.connections() == 1 and r.connections == 1
    assert [body["step"] for _, _, body in paced.received] == [0, 1, 2, 3, 4]


def test_a_connection_the_server_closed_is_made_again(paced: PacingEndpoint, token: Path) -> None:
    r = Reporter(paced.url, token_file=str(token), ca_file=str(paced.ca), timeout=5)
    paced.close_next = True
    assert r.send({"step": 1})
    assert r.send({"step": 2})  # on a new connection, the report not lost
    assert r.send({"step": 3})
    assert [body["step"] for _, _, body in paced.received] == [1, 2, 3]
    assert paced.connections() == 2 and r.connections == 2


def test_a_reporter_that_cannot_reach_the_operator_reconnects_once_it_can(
    paced: PacingEndpoint, token: Path
) -> None:
    bad = paced.url.replace(str(paced.server.server_address[1]), str(_closed_port()))
    r = Reporter(bad, token_file=str(token), ca_file=str(paced.ca), timeout=1)
    assert r.send({"step": 1}) is False
    assert r.interval == 2.0  # no pace told: it waits longer, up to the ceiling
    r._host, r._port = "127.0.0.1", paced.server.server_address[1]
    assert r.send({"step": 2})


@pytest.mark.parametrize(("told", "waits"), [(7.5, 7.5), (0.01, 1.0), (1e6, 60.0), (None, 1.0)])
def test_the_reporter_waits_the_pace_the_operator_tells_within_bounds(
    tmp_path: Path, token: Path, told: float | None, waits: float
) -> None:
    paced = PacingEndpoint(tmp_path, told)
    try:
        r = Reporter(paced.url, token_file=str(token), ca_file=str(paced.ca), timeout=5)
        assert r.send({"step": 1})
        assert r.interval == waits
    finally:
        paced.close()


def test_the_sender_waits_the_told_pace_between_reports(tmp_path: Path, token: Path) -> None:
    paced = PacingEndpoint(tmp_path, 30.0)
    try:
        r = Reporter(paced.url, token_file=str(token), ca_file=str(paced.ca), timeout=5)
        r.report({"step": 1})
        assert r.flush(5)
        r.report({"step": 2})  # within the pace: waits (30 s), not sent
        assert not r.flush(0.5)
        assert [body["step"] for _, _, body in paced.received] == [1]
    finally:
        paced.close()


@pytest.mark.parametrize(
    ("env", "rank", "full"),
    [
        ({}, 0, True),
        ({"LOCAL_RANK": "0"}, 0, True),
        ({"LOCAL_RANK": "3"}, 3, False),  # torchrun, DeepSpeed
        ({"OMPI_COMM_WORLD_LOCAL_RANK": "2"}, 2, False),  # Open MPI
        ({"LOCAL_RANK": "2", "T9K_PROGRESS_LOCAL_RANK": "2"}, 2, True),
    ],
)
def test_one_local_rank_reports_progress(env: dict[str, str], rank: int, full: bool) -> None:
    r = from_env({"T9K_PROGRESS_URL": "https://op:8443/v1/progress", **env})
    assert isinstance(r, Reporter)
    assert (r.rank, r.full) == (rank, full)


def test_the_other_ranks_send_liveness_only(paced: PacingEndpoint, token: Path) -> None:
    r = Reporter(
        paced.url, token_file=str(token), ca_file=str(paced.ca), timeout=5, rank=3, full=False
    )
    r.report({"step": 7, "metrics": {"loss": 0.1}})
    assert r.flush(5)
    ((_, headers, body),) = paced.received
    assert body == {} and headers["X-T9k-Rank"] == "3"


def test_a_script_designates_its_reporting_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T9K_PROGRESS_URL", "https://op:8443/v1/progress")
    monkeypatch.setenv("LOCAL_RANK", "5")
    monkeypatch.setattr(reportmod, "_default", None)
    reportmod.designate()
    r = reportmod._reporter()
    assert isinstance(r, Reporter) and r.full and r.rank == 5


def test_a_standby_that_refuses_is_left_for_a_new_connection(
    paced: PacingEndpoint, token: Path
) -> None:
    # Behind a Service, a new connection may reach the leader.
    r = Reporter(paced.url, token_file=str(token), ca_file=str(paced.ca), timeout=5)
    paced.status = 503
    assert r.send({"step": 1}) is False
    paced.status = 202
    assert r.send({"step": 2})
    assert paced.connections() == 2 and r.connections == 2
