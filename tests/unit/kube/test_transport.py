"""The transport's requests as a server sees them: the path under the
server's own (a proxy's ``https://host/k8s/clusters/c-1``), the query, the body
and the headers, over the one connection pool to that server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pytest_mock import MockerFixture

from t9k_operator.kube import KubeClient
from t9k_operator.kube import transport as transport_module
from t9k_operator.kube.config import Connection
from t9k_operator.kube.transport import ClientOptions, Transport
from t9k_operator.resources import PODS


class Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, dict[str, str], bytes]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Recorder.seen.append((self.command, self.path, dict(self.headers), body))
        payload = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("prefix", ["", "/k8s/clusters/c-1"])
def test_requests_go_under_the_servers_path(server: str, prefix: str) -> None:
    transport = Transport(
        Connection(host=server + prefix, authorization=lambda: "Bearer t"),
        ClientOptions(qps=-1, user_agent="t9k-test"),
    )
    try:
        got = transport.request("GET", "/api/v1/pods", query={"limit": 5, "continue": None})
        transport.request("PUT", "/apis/g/v1/namespaces/n/x/j/status", body={"status": {"a": 1}})
    finally:
        transport.close()
    assert got == {"path": f"{prefix}/api/v1/pods?limit=5"}
    (get_verb, get_path, get_headers, _), (put_verb, put_path, put_headers, put_body) = (
        Recorder.seen
    )
    assert (get_verb, get_path) == ("GET", f"{prefix}/api/v1/pods?limit=5")
    assert (put_verb, put_path) == ("PUT", f"{prefix}/apis/g/v1/namespaces/n/x/j/status")
    assert json.loads(put_body) == {"status": {"a": 1}}
    for headers in (get_headers, put_headers):
        assert headers["Authorization"] == "Bearer t"
        assert headers["User-Agent"] == "t9k-test"
        assert headers["Accept"] == "application/json"
    assert put_headers["Content-Type"] == "application/json"


def test_a_create_whose_answer_is_not_read_is_not_decoded(
    server: str, mocker: MockerFixture
) -> None:
    client = KubeClient(Connection(host=server), ClientOptions(qps=-1))
    loads = mocker.spy(transport_module.json, "loads")
    try:
        got = client.create(PODS, {"metadata": {"name": "p"}}, "n", answer=False)
        assert got == {} and loads.call_count == 0
        assert client.create(PODS, {"metadata": {"name": "q"}}, "n") == {
            "path": "/api/v1/namespaces/n/pods"
        }
        assert loads.call_count == 1
    finally:
        client.close()
    assert [(verb, path) for verb, path, _, _ in Recorder.seen] == [
        ("POST", "/api/v1/namespaces/n/pods"),
        ("POST", "/api/v1/namespaces/n/pods"),
    ]
