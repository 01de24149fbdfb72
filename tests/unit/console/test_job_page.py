"""The Job page: what it shows of a job (``t9k describe``'s readers), its data
as escaped JSON, its logs as text, its live updates, and that it asks the API
server for Events and logs only (no Secret, ever)."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

from starlette.testclient import TestClient

from t9k_operator import kube
from t9k_operator.console.app import create_app
from t9k_operator.console.board import JobBoard
from t9k_operator.console.detail import events, job_detail
from t9k_operator.console.job_page import JobData, job_updates, log_lines, safe_json
from t9k_operator.console.sessions import Sessions
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import KINDS, TOKEN, board_of, signed_in

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
MNIST = "/api/jobs/team-a/PyTorchTrainingJob/mnist"


class FakeStream:
    """A pod's log, as :class:`kube.LogStream` gives it."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.closed = False

    def __iter__(self) -> Iterator[str]:
        yield from self.lines

    def close(self) -> None:
        self.closed = True


class FakeKube:
    """Records every call; answers only ``pod_logs``."""

    def __init__(self, calls: list[tuple[Any, ...]], lines: list[str]) -> None:
        self.calls, self.lines, self.streams = calls, lines, []  # type: list[FakeStream]

    def pod_logs(self, namespace: str, name: str, **opts: Any) -> FakeStream:
        self.calls.append(("pod_logs", namespace, name, opts))
        if opts.get("container") == "missing-log":
            raise kube.BadRequest('container "missing-log" is waiting to start', status=400)
        self.streams.append(FakeStream(self.lines))
        return self.streams[-1]

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            raise AssertionError(f"the Job page called kube.{name}{args}")

        return call


class FakeReads:
    def __init__(self, lines: list[str] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.kube = FakeKube(self.calls, lines or ["epoch 1", SCRIPT, IMG])

    def events(self, job: Any, pods: Any = ()) -> list[dict[str, Any]]:
        names = [p["metadata"]["name"] for p in pods]
        self.calls.append(("events", job["metadata"]["name"], names))
        return copy.deepcopy(f.EVENTS)


def page_client(board: JobBoard | None = None) -> tuple[TestClient, FakeReads]:
    reads = FakeReads()
    board = board if board is not None else board_of([f.MNIST, f.MS], f.PODS)
    return signed_in(board, reads=reads), reads


def evil_job() -> dict[str, Any]:
    job = copy.deepcopy(f.MNIST)
    job["metadata"]["labels"]["evil"] = "x"
    job["metadata"]["annotations"] = {"note": SCRIPT + IMG}
    job["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update"}]
    job["status"]["conditions"][0]["message"] = IMG
    return job


# -- what it shows ---------------------------------------------------------------------


def test_the_detail_is_what_t9k_describe_shows() -> None:
    d = job_detail(f.MNIST, f.PODS, f.EVENTS, f.NOW)
    head = dict((label, value) for label, value in d["head"] if label)
    assert head["Phase"] == "Running"
    assert head["GPUs"] == "8 requested, 6 allocated"
    assert head["Duration"] == "59m55s"
    assert head["ETA"] == "6m26s" and head["Start"] == "-"
    assert head["Progress"].startswith("420/1000 (42%)")
    assert "GPU usage" not in head  # asks a Prometheus: not the console's
    times = [c["lastTransitionTime"] for c in d["conditions"]]
    assert times == sorted(times) and d["conditions"][-1]["type"] == "Running"
    worker1 = next(r for r in d["replicas"] if r["replica"] == "worker-1")
    assert (worker1["node"], worker1["phase"], worker1["restarts"]) == ("gpu-2", "Running", 1)
    assert [c["name"] for c in worker1["containers"]] == ["pytorch"]
    assert d["restarts"][0][1:4] == ["worker-1", "137", "OOMKilled"]
    assert d["scheduling"] == [
        {"section": "Scheduling", "lines": ["Workload mnist in research: admitted by gpus"]}
    ]
    assert [e["reason"] for e in d["events"]] == ["Scheduled", "Restarted", "Created"]
    assert "managedFields" not in d["yaml"] and "name: mnist" in d["yaml"]


def test_events_without_a_time_come_last() -> None:
    found = [{"reason": "Old", "lastTimestamp": "2026-03-01T10:00:00Z"}, {"reason": "None"}]
    assert [e["reason"] for e in events(found, f.NOW)] == ["Old", "None"]


# -- markup stays text -----------------------------------------------------------------


def test_strings_from_the_cluster_come_back_as_escaped_json() -> None:
    client, _ = page_client(board_of([evil_job()], f.PODS))
    response = client.get(MNIST)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "<" not in response.text and ">" not in response.text
    data = json.loads(response.text)
    assert SCRIPT + IMG in data["yaml"]
    assert any(c["message"] == IMG for c in data["conditions"])
    assert "managedFields" not in data["yaml"]


def test_a_job_named_with_markup_is_never_markup_in_the_page() -> None:
    job = evil_job()
    job["metadata"]["name"] = IMG
    client, _ = page_client(board_of([job]))
    path = "/PyTorchTrainingJob/".join(["team-a", IMG])
    page = client.get("/jobs/" + path)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<img" not in page.text and "<script>" not in page.text
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S)
    assert scripts == [(' src="/static/job.js" defer', ""), (' src="/static/chart.js" defer', "")]
    assert not re.search(r"\s(on\w+|style)=", page.text)
    data = client.get("/api/jobs/" + path)
    assert data.status_code == 200 and "<img" not in data.text
    assert data.json()["name"] == IMG


def test_a_log_line_with_markup_is_plain_text() -> None:
    client, _ = page_client()
    response = client.get(f"{MNIST}/logs", params={"pod": "mnist-worker-0", "container": "pytorch"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert response.text == f"epoch 1\n{SCRIPT}\n{IMG}\n"


def test_the_script_writes_text_never_html() -> None:
    client, _ = page_client()
    for path in ("/static/job.js", "/static/jobs.js", "/static/chart.js"):
        script = client.get(path).text
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in script, (path, sink)
        assert "textContent" in script
    assert client.get("/static/job.css").status_code == 200


# -- logs ------------------------------------------------------------------------------


def test_a_download_is_an_attachment_named_after_pod_and_container() -> None:
    client, reads = page_client()
    response = client.get(
        f"{MNIST}/logs",
        params={"pod": "mnist-worker-1", "container": "pytorch", "previous": "1", "download": "1"},
    )
    assert response.status_code == 200
    assert (
        response.headers["content-disposition"]
        == 'attachment; filename="mnist-worker-1_pytorch_previous.log"'
    )
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert reads.calls == [
        (
            "pod_logs",
            "team-a",
            "mnist-worker-1",
            {"container": "pytorch", "previous": True, "follow": False},
        )
    ]
    assert reads.kube.streams[0].closed


def test_follow_asks_the_api_server_to_follow() -> None:
    client, reads = page_client()
    params = {"pod": "mnist-master-0", "container": "pytorch", "follow": "1"}
    assert client.get(f"{MNIST}/logs", params=params).status_code == 200
    assert "content-disposition" not in client.get(f"{MNIST}/logs", params=params).headers
    assert reads.calls[0][3] == {"container": "pytorch", "previous": False, "follow": True}


def test_only_a_pod_of_the_job_and_a_container_of_the_pod() -> None:
    client, reads = page_client()
    for params in (
        {"pod": "notebook", "container": "lab"},  # in the board, not the job's
        {"pod": "ms-worker-1", "container": "mindspore"},  # another job's
        {"pod": "mnist-worker-0", "container": "sidecar"},
        {"pod": "mnist-worker-0", "container": "../../secrets"},
    ):
        assert client.get(f"{MNIST}/logs", params=params).status_code == 404, params
    assert client.get("/api/jobs/team-a/PyTorchTrainingJob/nope/logs").status_code == 404
    assert reads.calls == []


def test_a_log_the_api_server_refuses_says_why() -> None:
    board = board_of([f.MNIST], f.PODS)
    pods = [copy.deepcopy(p) for p in f.PODS[:1]]
    pods[0]["spec"]["containers"].append({"name": "missing-log"})
    board.put_pod(pods[0])
    client, _ = page_client(board)
    params = {"pod": "mnist-master-0", "container": "missing-log"}
    response = client.get(f"{MNIST}/logs", params=params)
    assert response.status_code == 400 and "waiting to start" in response.text


def test_no_secret_is_read() -> None:
    client, reads = page_client()
    client.get("/jobs/team-a/PyTorchTrainingJob/mnist")
    client.get(MNIST)
    client.get(f"{MNIST}/logs", params={"pod": "mnist-worker-0", "container": "pytorch"})
    asked = {call[0] for call in reads.calls}
    assert asked == {"events", "pod_logs"}
    assert "secret" not in repr(reads.calls).lower()
    assert (
        "events",
        "mnist",
        ["mnist-master-0", "mnist-worker-0", "mnist-worker-1", "mnist-worker-2"],
    ) in reads.calls


def test_an_unknown_job_is_404() -> None:
    client, _ = page_client()
    assert client.get("/api/jobs/team-a/PyTorchTrainingJob/nope").status_code == 404
    assert client.get("/api/jobs/team-a/PyTorchTrainingJob/nope/events").status_code == 404
    # The page itself loads, and says so once its script asks.
    assert client.get("/jobs/team-a/PyTorchTrainingJob/nope").status_code == 200


def test_the_job_page_needs_a_session() -> None:
    app = create_app(board_of([f.MNIST]), Sessions(TOKEN), KINDS)
    stranger = TestClient(app, base_url="http://127.0.0.1:8890")
    for path in ("/jobs/team-a/PyTorchTrainingJob/mnist", MNIST, f"{MNIST}/logs"):
        assert stranger.get(path).status_code == 401, path


# -- live ------------------------------------------------------------------------------


def _parse(text: str) -> tuple[str, Any]:
    name, data = text.strip().split("\n")
    return name[len("event: ") :], json.loads(data[len("data: ") :])


async def _next_event(updates: Any) -> tuple[str, Any]:
    while (text := await anext(updates)).startswith(":"):
        pass
    return _parse(text)


def test_the_page_is_sent_again_at_each_change_of_the_job_or_its_pods() -> None:
    board = board_of([f.MNIST], f.PODS)
    restarted = copy.deepcopy(f.PODS[1])
    restarted["status"]["containerStatuses"] = [{"name": "pytorch", "restartCount": 3}]
    finished = copy.deepcopy(f.MNIST)
    finished["status"]["phase"] = "Succeeded"
    key = "team-a/PyTorchTrainingJob/mnist"

    async def read() -> list[tuple[str, Any]]:
        updates = job_updates(JobData(board, FakeReads()), key, refresh=5, settle=0.01)  # type: ignore[arg-type]
        got = [await _next_event(updates)]
        threading.Timer(0.05, board.put_pod, [restarted]).start()  # the row does not move
        got.append(await asyncio.wait_for(_next_event(updates), 2))
        threading.Timer(0.05, board.put_job, [finished]).start()
        got.append(await asyncio.wait_for(_next_event(updates), 2))
        threading.Timer(0.05, board.drop_job, [finished]).start()
        got.append(await asyncio.wait_for(_next_event(updates), 2))
        threading.Timer(0.05, board.close).start()
        rest = [text async for text in updates]
        assert all(t.startswith(":") for t in rest)
        return got

    first, pod_moved, job_moved, gone = asyncio.run(read())
    assert first[0] == "job" and first[1]["phase"] == "Running"
    worker0 = next(r for r in pod_moved[1]["replicas"] if r["replica"] == "worker-0")
    assert worker0["containers"][0]["restarts"] == 3
    assert job_moved[0] == "job" and job_moved[1]["phase"] == "Succeeded"
    assert gone == ("gone", {"key": key})
    assert board._watchers == {}  # the stream that ended stopped watching


def test_safe_json_escapes_markup_and_reads_back() -> None:
    text = safe_json({"a": SCRIPT + "&" + IMG})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": SCRIPT + "&" + IMG}


class BlockingStream(FakeStream):
    """A followed log: its lines, then nothing until it is closed."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(lines)
        self.ended = threading.Event()

    def __iter__(self) -> Iterator[str]:
        yield from self.lines
        self.ended.wait(5)

    def close(self) -> None:
        super().close()
        self.ended.set()


def test_a_followed_log_is_closed_when_the_page_stops_reading() -> None:
    stream = BlockingStream(["epoch 1", "epoch 2"])

    async def read() -> list[bytes]:
        lines = log_lines(stream)  # type: ignore[arg-type]
        got = [await anext(lines), await anext(lines)]
        assert not stream.closed
        await lines.aclose()  # what the server does when the client goes
        return got

    assert asyncio.run(read()) == [b"epoch 1\n", b"epoch 2\n"]
    assert stream.closed and stream.ended.is_set()


def test_a_replaced_pod_has_a_new_uid_on_the_page() -> None:
    pods = [copy.deepcopy(p) for p in f.PODS[:2]]
    pods[1]["metadata"]["uid"] = "second"
    replicas = job_detail(f.MNIST, pods, [], f.NOW)["replicas"]
    assert [(r["replica"], r["uid"]) for r in replicas][:2] == [
        ("master-0", ""),
        ("worker-0", "second"),
    ]
