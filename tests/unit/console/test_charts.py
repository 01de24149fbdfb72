"""The Job page's charts: the steps the console saw (a bounded history), the
same joined with Prometheus's over the job's life (a real HTTP server
answering range queries), the GPUs' series, the idle-GPU flag, the ETA
``t9k list`` shows, and what the page says without a Prometheus."""

from __future__ import annotations

import argparse
import copy
import json
import threading
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from starlette.testclient import TestClient

from t9k_operator.cli.console import cmd_console
from t9k_operator.console.app import create_app
from t9k_operator.console.board import JobBoard
from t9k_operator.console.charts import NEEDS_PROMETHEUS, chart_data, merged
from t9k_operator.console.progress_history import Point, ProgressHistory, thin
from t9k_operator.console.sessions import Sessions
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import KINDS, TOKEN, board_of

CHARTS = "/api/jobs/team-a/PyTorchTrainingJob/mnist/charts"
T0 = datetime(2026, 3, 1, 11, 0, tzinfo=UTC)


def with_step(job: dict[str, Any], step: int, at: datetime) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["status"]["progress"]["step"] = step
    out["status"]["progress"]["lastReportTime"] = at.isoformat().replace("+00:00", "Z")
    return out


def client_of(board: JobBoard, prometheus_url: str | None = None) -> TestClient:
    app = create_app(
        board, Sessions(TOKEN), KINDS, allowed_hosts=["127.0.0.1"], prometheus_url=prometheus_url
    )
    client = TestClient(app, base_url="http://127.0.0.1:8890", follow_redirects=False)
    assert client.get(f"/?token={TOKEN}").status_code == 303
    return client


# -- the history ------------------------------------------------------------------------


def test_each_new_step_is_a_point_and_repeats_are_not() -> None:
    history = ProgressHistory()
    assert history.record("k", with_step(f.MNIST, 1, T0), f.NOW)
    assert not history.record("k", with_step(f.MNIST, 1, T0), f.NOW)  # the same report
    assert history.record("k", with_step(f.MNIST, 5, T0 + timedelta(seconds=10)), f.NOW)
    assert not history.record("k", with_step(f.MNIST, 3, T0), f.NOW)  # an older version, late
    no_progress = copy.deepcopy(f.MNIST)
    del no_progress["status"]["progress"]
    assert not history.record("k", no_progress, f.NOW)
    assert [p.step for p in history.points("k")] == [1, 5]
    assert history.points("k")[0].to_json() == [T0.timestamp(), 1]


def test_the_history_is_bounded_a_job_and_in_jobs_and_keeps_its_span() -> None:
    history = ProgressHistory(max_points=50, max_jobs=3)
    for n in range(10_000):
        at = (T0 + timedelta(seconds=n)).isoformat()
        history.record("k", {"status": {"progress": {"step": n, "lastReportTime": at}}}, f.NOW)
    points = history.points("k")
    assert len(points) <= 50
    assert points[0].step == 0 and points[-1].step == 9_999  # the whole run, coarser
    assert [p.step for p in points] == sorted(p.step for p in points)
    for key in ("a", "b", "c"):
        history.record(key, with_step(f.MNIST, 1, T0), f.NOW)
    assert history.points("k") == []  # the least recently moved job went
    assert all(history.points(k) for k in ("a", "b", "c"))
    assert thin([Point(T0, n) for n in range(4)], 4) == [Point(T0, n) for n in range(4)]


def test_the_board_records_each_step_and_forgets_a_deleted_job() -> None:
    board = board_of([f.MNIST])
    key = "team-a/PyTorchTrainingJob/mnist"
    board.put_job(with_step(f.MNIST, 500, T0 + timedelta(hours=1, seconds=30)))
    assert [p.step for p in board.progress.points(key)] == [420, 500]
    board.drop_job(f.MNIST)
    assert board.progress.points(key) == []


# -- without a Prometheus ----------------------------------------------------------------


def test_without_prometheus_the_charts_are_what_the_console_saw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("T9K_PROMETHEUS_URL", raising=False)
    board = board_of([f.MNIST], f.PODS)
    board.put_job(with_step(f.MNIST, 500, T0 + timedelta(hours=1, seconds=30)))
    data = client_of(board).get(CHARTS).json()
    progress = data["progress"]
    assert [p[1] for p in progress["points"]] == [420, 500]
    assert progress["source"] == "console"
    assert (progress["eta"], progress["summary"]) == ("6m26s", "420/1000 (42%)")  # t9k list's
    assert data["gpu"] == {
        "available": False,
        "note": NEEDS_PROMETHEUS,
        "series": [],
        "error": "",
        "allocated": 6,
    }
    assert data["idle"]["idle"] is False
    assert data["tensorboard"] == {"url": ""}


def test_the_idle_flag_is_the_gpus_idle_condition() -> None:
    job = copy.deepcopy(f.MNIST)
    job["status"]["conditions"].append(
        {
            "type": "GPUsIdle",
            "status": "True",
            "reason": "GPUsIdle",
            "message": "the job's 6 GPU(s) stayed under 5% utilization for 15m",
            "lastTransitionTime": "2026-03-01T11:50:00Z",
        }
    )
    idle = chart_data(job, f.PODS, [], f.NOW, None)["idle"]
    assert idle["idle"] is True and idle["reason"] == "GPUsIdle"
    assert "stayed under 5%" in idle["message"] and idle["since"] == "2026-03-01T11:50:00Z"


def test_an_unknown_job_has_no_charts() -> None:
    client = client_of(board_of([f.MNIST]))
    assert client.get("/api/jobs/team-a/PyTorchTrainingJob/nope/charts").status_code == 404


def test_prometheus_points_and_the_consoles_merge_by_time() -> None:
    assert merged([[20.0, 7]], [(10.0, 3), (20.0, 6)]) == [[10.0, 3.0], [20.0, 7.0]]


# -- with a Prometheus (a real HTTP server) ------------------------------------------------


class FakePrometheus(ThreadingHTTPServer):
    """Answers ``/api/v1/query_range`` with ``answers[n]`` for the n-th query
    that holds ``n``'s key; keeps every form it got."""

    def __init__(self, answers: dict[str, Any], status: int = 200) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers, self.status, self.forms = answers, status, []  # type: list[dict[str, str]]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakePrometheus

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        self.server.forms.append({"path": self.path, **form})
        key = next((k for k in self.server.answers if k in form.get("query", "")), None)
        result = self.server.answers.get(key or "", [])
        body: dict[str, Any] = {
            "status": "success",
            "data": {"resultType": "matrix", "result": result},
        }
        if self.server.status != 200:
            body = {"status": "error", "errorType": "internal", "error": "boom"}
        data = json.dumps(body).encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    server = FakePrometheus(
        {
            "t9k_job_progress_step": [
                {
                    "metric": {"kind": "PyTorchTrainingJob", "exported_namespace": "team-a"},
                    "values": [[T0.timestamp() + 60, "10"], [T0.timestamp() + 120, "NaN"]],
                }
            ],
            "DCGM_FI_DEV_GPU_UTIL": [
                _gpu("mnist-master-0", "GPU-a", "util", [[T0.timestamp() + 60, "90"]]),
                _gpu("mnist-master-0", "GPU-a", "used", [[T0.timestamp() + 60, "1024"]]),
                _gpu("mnist-worker-0", "GPU-b", "util", [[T0.timestamp() + 60, "3.5"]]),
                _gpu("someone-else", "GPU-c", "util", [[T0.timestamp() + 60, "50"]]),
            ],
        }
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _gpu(pod: str, uuid: str, stat: str, values: list[list[Any]]) -> dict[str, Any]:
    labels = {"pod": pod, "namespace": "team-a", "UUID": uuid, "t9k_stat": stat}
    return {"metric": labels, "values": values}


def test_with_prometheus_the_steps_and_gpus_span_the_jobs_life(prometheus: FakePrometheus) -> None:
    board = board_of([f.MNIST], f.PODS)
    data = client_of(board, prometheus.url).get(CHARTS).json()
    progress = data["progress"]
    assert progress["source"] == "Prometheus and the console" and progress["error"] == ""
    assert progress["points"] == [
        [T0.timestamp() + 60, 10],
        [(T0 + timedelta(minutes=59, seconds=58)).timestamp(), 420],
    ]
    gpu = data["gpu"]
    assert gpu["available"] is True and gpu["error"] == ""
    assert [(s["pod"], s["gpu"], s["points"]) for s in gpu["series"]] == [
        ("mnist-master-0", "GPU-a", [[T0.timestamp() + 60, 90.0]]),
        ("mnist-worker-0", "GPU-b", [[T0.timestamp() + 60, 3.5]]),
    ]
    steps, gpus = prometheus.forms
    assert steps["path"] == gpus["path"] == "/api/v1/query_range"
    assert 'exported_namespace="team-a"' in steps["query"] and 'name="mnist"' in steps["query"]
    assert 'namespace="team-a"' in gpus["query"]
    assert float(steps["start"]) == T0.timestamp()  # the job's creation
    assert int(steps["step"]) >= 15


def test_a_prometheus_that_fails_leaves_the_consoles_points(prometheus: FakePrometheus) -> None:
    prometheus.status = 500
    data = client_of(board_of([f.MNIST], f.PODS), prometheus.url).get(CHARTS).json()
    assert [p[1] for p in data["progress"]["points"]] == [420]
    assert "boom" in data["progress"]["error"] and "boom" in data["gpu"]["error"]
    assert data["gpu"]["series"] == []


def test_a_prometheus_url_that_is_not_http_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("T9K_PROMETHEUS_URL", raising=False)
    with pytest.raises(SystemExit, match="--prometheus-url must be an http"):
        cmd_console(argparse.Namespace(prometheus_url="prometheus:9090"))
