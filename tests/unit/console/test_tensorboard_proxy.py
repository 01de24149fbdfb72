"""A job's TensorBoard through the console: opened with the session, it is
served under a grant (``/tb/<grant>/``) that reaches only that job's
TensorBoard's Service, through the API server's service proxy with the
session's client; the grant's paths need no cookie and answer the sandboxed
(``Origin: null``) page's requests, GET and TensorBoard's form POSTs to its
data routes only; headers are cut to a few and the page sandboxed."""

from __future__ import annotations

import copy
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from t9k_operator import kube
from t9k_operator.console import tensorboard_index
from t9k_operator.console.tensorboard_page import STORAGE_PATH
from t9k_operator.console.tensorboard_proxy import proxy_path
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import board_of, csrf_token_of, signed_in

TB = "/tensorboard/team-a/PyTorchTrainingJob/mnist/"
SERVICE = "/api/v1/namespaces/team-a/services/mnist-tensorboard:6006/proxy/"
FORM = "multipart/form-data; boundary=b"
XSRF = {"X-XSRF-Protected": "1"}


class Answer:
    """What urllib3 answers: status, headers, data."""

    def __init__(self, data: bytes, headers: dict[str, str], status: int = 200) -> None:
        self.data, self.headers, self.status = data, headers, status


class FakeKube:
    """The session's client: records each request, answers as TensorBoard would."""

    options = kube.ClientOptions()
    connection = None

    def __init__(self) -> None:
        self.paths: list[tuple[str, str]] = []
        self.posts: list[tuple[str, bytes, str, dict[str, str]]] = []
        self.refuse: kube.ApiError | None = None

    def _answer(self) -> Answer:
        if self.refuse is not None:
            raise self.refuse
        headers = {
            "content-type": "text/html; charset=utf-8",
            "set-cookie": "tb=1",
            "access-control-allow-origin": "*",
            "access-control-allow-credentials": "true",
            "content-security-policy": "default-src *",
            "x-frame-options": "ALLOWALL",
            "etag": '"v1"',
        }
        return Answer(b"<html><head><title>TB</title></head>TensorBoard</html>", headers)

    def get_raw(self, path: str) -> Answer:
        self.paths.append(("GET", path))
        return self._answer()

    def post_raw(self, path: str, body: bytes, content_type: str, headers: dict[str, str]) -> Any:
        self.paths.append(("POST", path))
        self.posts.append((path, body, content_type, headers))
        return self._answer()


HOSTILE = (
    b"HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nSet-Cookie: tb=1\r\n"
    b"Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Credentials: true\r\n"
    b"Content-Security-Policy: default-src *\r\nX-Frame-Options: ALLOWALL\r\n"
    b'ETag: "v1"\r\nContent-Encoding: identity\r\n\r\n'
    b"<html><head><title>TB</title></head>TensorBoard</html>"
)


class PodPorts:
    """Port-forwards to the TensorBoard's pod: each a socket pair whose far
    end reads one request and answers :data:`HOSTILE` (or is refused)."""

    def __init__(self) -> None:
        self.opened: list[tuple[str, str, int, bytes]] = []
        self.refuse: kube.ApiError | None = None

    def open(self, connection: Any, namespace: str, pod: str, port: int) -> Any:
        if self.refuse is not None:
            raise self.refuse
        near, far = socket.socketpair()

        def serve() -> None:
            request = b""
            while b"\r\n\r\n" not in request:
                request += far.recv(4096)
            self.opened.append((namespace, pod, port, request))
            far.sendall(HOSTILE)
            far.close()

        threading.Thread(target=serve, daemon=True).start()
        return type("Port", (), {"socket": near, "close": near.close})()


@pytest.fixture(autouse=True)
def pod_ports(monkeypatch: pytest.MonkeyPatch) -> Iterator[PodPorts]:
    ports = PodPorts()
    monkeypatch.setattr(tensorboard_index, "open_pod_port", ports.open)
    yield ports


class FakeReads:
    def __init__(self) -> None:
        self.kube = FakeKube()

    def events(self, job: Any, pods: Any = ()) -> list[dict[str, Any]]:
        return []


def with_tensorboard(job: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"]["tensorboardSpec"] = {"trainingLogFilesets": ["pvc://logs/mnist"]}
    return out


def client_of(*jobs: dict[str, Any]) -> tuple[TestClient, FakeReads]:
    reads = FakeReads()
    board = board_of(jobs or [with_tensorboard(f.MNIST), f.MS], f.PODS)
    return signed_in(board, reads=reads), reads


def opened(client: TestClient, path: str = TB) -> str:
    """The grant's path the console redirects to, opening ``path``."""
    answer = client.get(path)
    assert answer.status_code == 303, answer.text
    location: str = answer.headers["location"]
    assert location.startswith("/tb/") and len(location.split("/")[2]) >= 43, location
    return location


def test_opening_the_board_grants_the_session_its_tensorboard_under_a_path_of_its_own(
    pod_ports: PodPorts,
) -> None:
    client, reads = client_of()
    board = opened(client)
    assert board.endswith("/") and reads.kube.paths == []
    assert opened(client) != board  # each opening mints a grant of its own
    client.cookies.clear()  # the sandboxed page sends no cookie: the grant is enough
    answer = client.get(board + "data/plugin/scalars/tags", params={"run": "a b", "tag": "x"})
    assert answer.status_code == 200
    assert reads.kube.paths == [("GET", SERVICE + "data/plugin/scalars/tags?run=a+b&tag=x")]
    # Its page, which the service proxy cannot carry, comes by a port-forward
    # to the TensorBoard's pod, named from the job.
    assert client.get(board).status_code == 200 and len(reads.kube.paths) == 1
    ((namespace, pod, port, request),) = pod_ports.opened
    assert (namespace, pod, port) == ("team-a", "mnist-tensorboard", 6006)
    assert request.startswith(b"GET / HTTP/1.1\r\n") and b"ookie" not in request
    assert client.get(board + "index.html").status_code == 200
    assert pod_ports.opened[-1][3].startswith(b"GET /index.html HTTP/1.1\r\n")
    # Without the session, opening it is refused; a made-up grant is nothing.
    assert client.get(TB).status_code == 401
    assert client.get("/tb/" + "A" * 43 + "/").status_code == 404
    assert client.get("/tb/" + "A" * 43 + "/", headers={"Origin": "null"}).text.startswith(
        "This TensorBoard link has expired"
    )
    assert len(reads.kube.paths) == 1 and len(pod_ports.opened) == 2


def test_its_answers_are_readable_by_the_sandboxed_page_and_nothing_more() -> None:
    client, _ = client_of()
    board = opened(client)
    headers = client.get(board, headers={"Origin": "null"}).headers
    assert headers["content-type"] == "text/html; charset=utf-8" and headers["etag"] == '"v1"'
    assert headers["access-control-allow-origin"] == "null"
    assert "access-control-allow-credentials" not in headers and "set-cookie" not in headers
    policy = headers["content-security-policy"]
    assert "sandbox allow-scripts" in policy and "allow-same-origin" not in policy
    assert "frame-ancestors 'none'" in policy and "connect-src 'self'" in policy
    assert "default-src *" not in policy
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    # The console's own pages answer no other origin.
    assert "access-control-allow-origin" not in client.get(TB).headers


def test_the_preflight_allows_tensorboards_own_headers_for_get_and_post() -> None:
    client, reads = client_of()
    board = opened(client)
    client.cookies.clear()
    answer = client.options(
        board + "data/plugin/scalars/scalars_multirun",
        headers={
            "Origin": "null",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-xsrf-protected,x-tensorboard-feature-flags",
        },
    )
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == "null"
    assert answer.headers["access-control-allow-methods"] == "GET, POST"
    allowed = answer.headers["access-control-allow-headers"].lower()
    assert "x-xsrf-protected" in allowed and "x-tensorboard-feature-flags" in allowed
    assert "access-control-allow-credentials" not in answer.headers
    assert reads.kube.paths == []


def test_tensorboards_form_posts_to_its_data_routes_pass_and_nothing_else() -> None:
    client, reads = client_of()
    board = opened(client)
    client.cookies.clear()  # and no CSRF token: the grant stands for the session
    body = b'--b\r\nContent-Disposition: form-data; name="tag"\r\n\r\nloss\r\n--b--\r\n'
    multirun = board + "data/plugin/scalars/scalars_multirun"
    headers = {"Content-Type": FORM, "Cookie": "tb=1", **XSRF}
    answer = client.post(multirun, content=body, headers=headers)
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "null"
    path = SERVICE + "data/plugin/scalars/scalars_multirun"
    assert reads.kube.posts == [(path, body, FORM, {"x-xsrf-protected": "1"})]  # no cookie
    for method, where, kw, status in (
        ("POST", board, {"content": b"x", "headers": {"Content-Type": FORM}}, 405),
        ("POST", board + "experiment/x/data/runs", {"headers": {"Content-Type": FORM}}, 405),
        ("POST", multirun, {"json": {"tag": "loss"}}, 415),
        ("POST", multirun, {"content": b"x" * (1024 * 1024 + 1), "headers": headers}, 413),
        ("PUT", multirun, {"content": body, "headers": headers}, 405),
        ("DELETE", multirun, {}, 405),
        ("PATCH", multirun, {}, 405),
        ("HEAD", board, {}, 405),
    ):
        assert client.request(method, where, **kw).status_code == status, (method, where)
    assert len(reads.kube.posts) == 1 and len(reads.kube.paths) == 1


def test_nothing_but_the_jobs_own_tensorboard(pod_ports: PodPorts) -> None:
    client, reads = client_of()
    for path, status in (
        ("/tensorboard/team-a/MSJob/ms/", 404),  # a job without a TensorBoard
        ("/tensorboard/team-a/PyTorchTrainingJob/other/", 404),  # no such job
        ("/tensorboard/kube-system/PyTorchTrainingJob/mnist/", 404),  # another namespace
        (TB + "%2e%2e/%2e%2e/%2e%2e/secrets", 400),  # out of the proxy's path
        (TB + "a/%2E/b", 400),
        (TB + "a%5c..%5csecrets", 400),
    ):
        assert client.get(path).status_code == status, path
    board = opened(client)
    for below in ("%2e%2e/%2e%2e/%2e%2e/secrets", "a/%2E/b", "a%5c..%5csecrets"):
        assert client.get(board + below).status_code == 400, below
    assert reads.kube.paths == [] and pod_ports.opened == []
    assert opened(client, TB + "data/runs").endswith("/data/runs")
    assert proxy_path("team-a", "mnist", "a%2Fb/c d") == SERVICE + "a%252Fb/c%20d"


def test_a_grant_ends_with_its_session() -> None:
    client, reads = client_of()
    board = opened(client)
    csrf = csrf_token_of(client.get("/").text)
    assert client.post("/api/logout", headers={"X-CSRF-Token": csrf}).status_code == 204
    assert client.get(board).status_code == 404
    assert reads.kube.paths == []


def test_its_html_gets_the_storage_the_sandbox_denies_it() -> None:
    client, _ = client_of()
    page = client.get(opened(client)).text
    assert page.startswith(f'<html><head><script src="{STORAGE_PATH}"></script><title>')
    script = client.get(STORAGE_PATH)
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript"
    )
    assert "localStorage" in script.text and "defineProperty" in script.text


def test_the_api_servers_refusal_is_passed_on_as_text(pod_ports: PodPorts) -> None:
    client, reads = client_of()
    board = opened(client)
    reads.kube.refuse = kube.Forbidden('services "mnist-tensorboard" is forbidden', status=403)
    pod_ports.refuse = kube.Forbidden('pods "mnist-tensorboard" is forbidden', status=403)
    for path, reason in (("data/runs", "services"), ("", "pods")):
        answer = client.get(board + path)
        assert answer.status_code == 403
        assert answer.headers["content-type"].startswith("text/plain")
        assert f'{reason} "mnist-tensorboard" is forbidden' in answer.text
        assert answer.headers["access-control-allow-origin"] == "null"


def test_the_charts_name_the_tensorboards_path() -> None:
    client, _ = client_of()
    data = client.get("/api/jobs/team-a/PyTorchTrainingJob/mnist/charts").json()
    assert data["tensorboard"] == {"url": TB, "ready": True, "reason": "DependentReady"}


def test_a_pod_port_that_gives_no_http_answer_is_a_bad_gateway(
    pod_ports: PodPorts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "HOSTILE", b"SSH-2.0-not-http\r\n\r\n")
    client, _ = client_of()
    answer = client.get(opened(client))
    assert answer.status_code == 502 and "no HTTP answer" in answer.text
