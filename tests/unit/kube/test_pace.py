"""The client's pace against an API server in this process: the client-side
limit kept or lifted by the server's API Priority and Fairness headers, and
429 answers retried after their Retry-After, a bounded number of times."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import REGISTRY

from t9k_operator.kube import (
    ClientOptions,
    Connection,
    KubeClient,
    ServerError,
    TooManyRequests,
)
from t9k_operator.kube.pace import (
    APF_HEADERS,
    RETRY_AFTER_CAP,
    RETRY_BACKOFF_BASE,
    RETRY_BACKOFF_CAP,
    retry_delay,
)
from t9k_operator.resources import CONFIGMAPS
from tests.fakes import FakeClock

APF = {APF_HEADERS[0]: "fs-uid", APF_HEADERS[1]: "pl-uid"}


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeServer:
    """Answers each request with the next of ``script`` (the last one once it
    runs out), echoing the body; keeps what it was sent."""

    script: list[Answer]
    seen: list[tuple[str, str, bytes]] = field(default_factory=list)
    host: str = ""

    def answer(self) -> Answer:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]


def _handler(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            fake.seen.append((self.command, self.path, body))
            answer = fake.answer()
            payload = body or b"{}"
            if answer.status >= 300:
                payload = json.dumps({"kind": "Status", "code": answer.status}).encode()
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, *args: object) -> None:
            pass

    return Handler


Serve = Callable[[list[Answer]], FakeServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Starts fake API servers answering their scripts; stopped after the test."""
    servers: list[ThreadingHTTPServer] = []

    def start(script: list[Answer]) -> FakeServer:
        fake = FakeServer(script)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
        servers.append(server)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        fake.host = f"http://127.0.0.1:{server.server_address[1]}"
        return fake

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def client(
    server: FakeServer, agent: str, clock: FakeClock | None = None, **opts: object
) -> KubeClient:
    options = ClientOptions(user_agent=agent, **opts)  # type: ignore[arg-type]
    if clock is None:
        return KubeClient(Connection(host=server.host), options)
    return KubeClient(Connection(host=server.host), options, clock=clock)


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def cm(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}}


def test_create_refused_with_429_is_sent_again_after_retry_after(
    serve: Serve,
) -> None:
    server = serve([Answer(429, {"Retry-After": "1", **APF}), Answer(201, APF)])
    kube = client(server, "pace/create", lift_limit_under_apf=True)
    host = server.host.split("://")[1]
    refused = sample("rest_client_requests_total", code="429", method="POST", host=host)
    started = time.monotonic()
    created = kube.create(CONFIGMAPS, cm("x"))
    waited = time.monotonic() - started
    assert created["metadata"]["name"] == "x"
    # Sent twice, the same body; the server made it once (its one 201).
    assert [(m, b) for m, _, b in server.seen] == [("POST", server.seen[0][2])] * 2
    assert 1.0 <= waited < 2.0, waited
    assert sample("t9k_client_retries_total", client="pace/create", reason="TooManyRequests") == 1
    assert sample("rest_client_requests_total", code="429", method="POST", host=host) == refused + 1


def test_retries_are_bounded_and_back_off(serve: Serve) -> None:
    """A server that refuses everything, asking for no wait: the client still
    backs off (no hot loop) and gives up after max_retries, with the 429."""
    server = serve([Answer(429, {"Retry-After": "0"})])
    clock = FakeClock()
    kube = client(server, "pace/bounded", clock, max_retries=10)
    before = clock.monotonic()
    with pytest.raises(TooManyRequests):
        kube.create(CONFIGMAPS, cm("y"))
    assert len(server.seen) == 11
    floor = sum(min(RETRY_BACKOFF_BASE * 2**i, RETRY_BACKOFF_CAP) for i in range(10))
    assert floor <= clock.monotonic() - before <= floor * 1.1 + 1e-6
    assert sample("t9k_client_retries_total", client="pace/bounded", reason="TooManyRequests") == 10


@pytest.mark.parametrize(
    ("status", "headers", "error"),
    [
        (500, {"Retry-After": "1"}, ServerError),
        (503, {"Retry-After": "1"}, ServerError),
        (429, {}, TooManyRequests),
    ],
)
def test_other_refusals_are_not_sent_again(
    serve: Serve, status: int, headers: dict[str, str], error: type[Exception]
) -> None:
    """Only a 429 is known to be unprocessed (a 5xx create may have been made),
    and one without Retry-After is an answer, not a pace: a disruption budget
    refusing an eviction."""
    server = serve([Answer(status, headers)])
    with pytest.raises(error):
        client(server, "pace/5xx").create(CONFIGMAPS, cm("z"))
    assert len(server.seen) == 1


def test_a_server_with_priority_and_fairness_lifts_the_limit(serve: Serve) -> None:
    server = serve([Answer(200, APF)])
    clock = FakeClock()
    kube = client(server, "pace/apf", clock, qps=1, burst=1, lift_limit_under_apf=True)
    assert kube.pace.limiter is not None
    assert sample("t9k_client_rate_limit_qps", client="pace/apf") == 1
    kube.get(CONFIGMAPS, "a", "n")
    assert kube.pace.limiter is None
    assert sample("t9k_client_rate_limit_qps", client="pace/apf") == 0
    waits = sample("t9k_client_rate_limiter_wait_seconds_count", client="pace/apf", method="GET")
    moved = clock.monotonic()
    for _ in range(20):
        kube.get(CONFIGMAPS, "a", "n")
    # No limiter waited on, none counted: the histogram counts only real limiting.
    assert clock.monotonic() == moved
    assert (
        sample("t9k_client_rate_limiter_wait_seconds_count", client="pace/apf", method="GET")
        == waits
    )


def test_a_server_without_priority_and_fairness_keeps_the_limit(serve: Serve) -> None:
    server = serve([Answer(200)])
    clock = FakeClock()
    kube = client(server, "pace/plain", clock, qps=10, burst=1, lift_limit_under_apf=True)
    start = clock.monotonic()
    for _ in range(5):
        kube.get(CONFIGMAPS, "a", "n")
    assert kube.pace.limiter is not None
    # One token, then one every 0.1 s: the four after the first waited.
    assert clock.monotonic() - start == pytest.approx(0.4)
    assert (
        sample("t9k_client_rate_limiter_wait_seconds_count", client="pace/plain", method="GET") == 5
    )


def test_a_limit_not_told_to_lift_stays_under_priority_and_fairness(
    serve: Serve,
) -> None:
    """Leader election's and Events' clients: limited whatever the server is."""
    assert ClientOptions().lift_limit_under_apf is False
    server = serve([Answer(200, APF)])
    kube = client(server, "pace/kept", FakeClock(), qps=5, burst=10)
    kube.get(CONFIGMAPS, "a", "n")
    assert kube.pace.limiter is not None and kube.pace.limiter.qps == 5


def test_a_negative_qps_means_no_limit(serve: Serve) -> None:
    server = serve([Answer(200)])
    kube = client(server, "pace/none", FakeClock(), qps=-1)
    assert kube.pace.limiter is None
    assert sample("t9k_client_rate_limit_qps", client="pace/none") == 0


def test_a_watch_refused_with_429_is_opened_again(serve: Serve) -> None:
    server = serve([Answer(429, {"Retry-After": "1"}), Answer(200)])
    clock = FakeClock()
    stream = client(server, "pace/watch", clock).watch(
        CONFIGMAPS, "n", resource_version="1", timeout_seconds=1
    )
    stream.close()
    assert len(server.seen) == 2
    assert clock.monotonic() - 1000.0 >= 1.0


@pytest.mark.parametrize(
    ("attempt", "retry_after", "expected"),
    [
        (0, 1.0, 1.0),  # the server's word
        (0, 0.0, RETRY_BACKOFF_BASE),  # "now" is not taken literally
        (3, 1.0, RETRY_BACKOFF_BASE * 8),  # the backoff grows past a short Retry-After
        (20, 0.0, RETRY_BACKOFF_CAP),  # ... up to its cap
        (20, 30.0, 30.0),  # a longer Retry-After is honoured beyond that cap
        (0, 3600.0, RETRY_AFTER_CAP),  # within reason
    ],
)
def test_retry_delay(attempt: int, retry_after: float, expected: float) -> None:
    assert retry_delay(attempt, retry_after) == pytest.approx(expected)
