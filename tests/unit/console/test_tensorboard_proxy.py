"""A job's TensorBoard through the console: only that job's TensorBoard's
Service, through the API server's service proxy with the session's client,
GET only, its headers cut to a few and the page sandboxed."""

from __future__ import annotations

import copy
from typing import Any

from starlette.testclient import TestClient

from t9k_operator import kube
from t9k_operator.console.tensorboard_proxy import proxy_path
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import board_of, csrf_token_of, signed_in

TB = "/tensorboard/team-a/PyTorchTrainingJob/mnist/"
SERVICE = "/api/v1/namespaces/team-a/services/mnist-tensorboard:6006/proxy/"


class Answer:
    """What urllib3 answers: status, headers, data."""

    def __init__(self, data: bytes, headers: dict[str, str], status: int = 200) -> None:
        self.data, self.headers, self.status = data, headers, status


class FakeKube:
    """The session's client: records each request, answers as TensorBoard would."""

    options = kube.ClientOptions()

    def __init__(self) -> None:
        self.paths: list[tuple[str, str]] = []
        self.refuse: kube.ApiError | None = None

    def get_raw(self, path: str) -> Answer:
        self.paths.append(("GET", path))
        if self.refuse is not None:
            raise self.refuse
        headers = {
            "content-type": "text/html; charset=utf-8",
            "set-cookie": "tb=1",
            "access-control-allow-origin": "*",
            "content-security-policy": "default-src *",
            "x-frame-options": "ALLOWALL",
            "etag": '"v1"',
        }
        return Answer(b"<html>TensorBoard</html>", headers)


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


def test_a_get_reaches_the_jobs_own_tensorboard_through_the_service_proxy() -> None:
    client, reads = client_of()
    answer = client.get(TB + "data/plugin/scalars/tags", params={"run": "a b", "tag": "x"})
    assert answer.status_code == 200 and answer.text == "<html>TensorBoard</html>"
    assert reads.kube.paths == [
        ("GET", SERVICE + "data/plugin/scalars/tags?run=a+b&tag=x"),
    ]
    assert client.get(TB).status_code == 200
    assert reads.kube.paths[-1] == ("GET", SERVICE)


def test_its_headers_are_cut_to_a_few_and_the_page_is_sandboxed() -> None:
    client, _ = client_of()
    headers = client.get(TB).headers
    assert headers["content-type"] == "text/html; charset=utf-8" and headers["etag"] == '"v1"'
    assert "set-cookie" not in headers and "access-control-allow-origin" not in headers
    policy = headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "sandbox allow-scripts" in policy and "allow-same-origin" not in policy
    assert "default-src *" not in policy
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"


def test_get_only() -> None:
    client, reads = client_of()
    csrf = csrf_token_of(client.get("/").text)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        answer = client.request(method, TB + "data/x", headers={"X-CSRF-Token": csrf})
        assert answer.status_code == 405 and answer.headers["allow"] == "GET"
        assert client.request(method, TB + "data/x").status_code == 403  # no CSRF token
    assert client.head(TB).status_code == 405
    assert reads.kube.paths == []


def test_nothing_but_the_jobs_own_tensorboard() -> None:
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
    assert reads.kube.paths == []
    assert proxy_path("team-a", "mnist", "a%2Fb/c d") == SERVICE + "a%252Fb/c%20d"


def test_the_api_servers_refusal_is_passed_on_as_text() -> None:
    client, reads = client_of()
    reads.kube.refuse = kube.Forbidden('services "mnist-tensorboard" is forbidden', status=403)
    answer = client.get(TB)
    assert answer.status_code == 403 and answer.headers["content-type"].startswith("text/plain")
    assert "forbidden" in answer.text


def test_the_charts_name_the_tensorboards_path() -> None:
    client, _ = client_of()
    data = client.get("/api/jobs/team-a/PyTorchTrainingJob/mnist/charts").json()
    assert data["tensorboard"] == {"url": TB, "ready": True, "reason": "DependentReady"}
