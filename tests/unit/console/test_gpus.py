"""The GPUs page: ``t9k top nodes`` and ``t9k top -A jobs`` from the board's
jobs and pods and a Node informer's nodes, as JSON and live."""

from __future__ import annotations

import asyncio
import copy
import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

from starlette.testclient import TestClient

from t9k_operator import kube
from t9k_operator.cli import top
from t9k_operator.console.app import create_app
from t9k_operator.console.board import JobBoard
from t9k_operator.console.gpus import gpu_updates, gpu_view
from t9k_operator.console.nodes import NodeWatch, slim_node
from t9k_operator.console.sessions import Sessions
from t9k_operator.resources import Resource
from t9k_operator.sdk import views
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import KINDS, TOKEN, board_of, csrf_token_of

MNIST_KEY = "team-a/PyTorchTrainingJob/mnist"


class _Watch:
    """One watch: the events put on the fake's queue, until closed."""

    def __init__(self, events: queue.Queue[dict[str, Any] | None]) -> None:
        self.events = events

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while (item := self.events.get()) is not None:
            yield item

    def close(self) -> None:
        self.events.put(None)


class FakeNodes:
    """The API server's nodes, as a kube client lists and watches them."""

    def __init__(self, nodes: list[dict[str, Any]], forbidden: bool = False) -> None:
        self.nodes, self.forbidden = nodes, forbidden
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def list(self, resource: Resource, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        if self.forbidden:
            raise kube.Forbidden("nodes is forbidden", status=403)
        return {"items": self.nodes, "metadata": {"resourceVersion": "1"}}

    def list_pages(self, resource: Resource, namespace: str | None, **_: Any) -> Any:
        yield self.list(resource, namespace)

    def watch(self, resource: Resource, namespace: str | None, **_: Any) -> _Watch:
        return _Watch(self.events)


class Reads:
    def __init__(self, client: FakeNodes) -> None:
        self.kube = client


def _client(board: JobBoard, nodes: FakeNodes) -> TestClient:
    app = create_app(board, Sessions(TOKEN), KINDS, reads=Reads(nodes))  # type: ignore[arg-type]
    client = TestClient(app, base_url="http://127.0.0.1:8890", follow_redirects=False)
    assert client.get(f"/?token={TOKEN}").status_code == 303
    return client


def test_the_view_is_t9k_top_over_the_boards_pods() -> None:
    board = board_of([f.MNIST, f.MS], f.PODS)
    view = gpu_view(board.objects(), f.NODES)
    assert view["nodes"]["headers"] == ["NODE", "GPUS", "ALLOCATED", "FREE", "JOBS"]
    rows = {r["key"]: r for r in view["nodes"]["rows"]}
    # cpu-1 has no GPU; gpu-3's one GPU is held by a pod of no job, which the
    # console does not watch.
    assert sorted(rows) == ["gpu-1", "gpu-2", "gpu-3"] and view["without_gpus"] == 1
    assert rows["gpu-1"]["cells"] == ["gpu-1", "8", "4", "4", "team-a/mnist"]
    assert rows["gpu-1"]["jobs"] == [{"text": "team-a/mnist", "key": MNIST_KEY}]
    assert rows["gpu-3"]["cells"] == ["gpu-3", "8", "0", "8", "<none>"]
    # The jobs' rows are t9k top -A jobs' cells, NODES last.
    summary = views.job_usage([f.MNIST], f.PODS, views.now_utc())[0]
    mnist = next(r for r in view["jobs"]["rows"] if r["key"] == MNIST_KEY)
    assert mnist["cells"] == [*top.top_job_cells(summary, True), "gpu-1,gpu-2"]
    assert view["jobs"]["headers"][-1] == "NODES" and view["reason"] == ""


def test_the_page_and_its_json_with_nodes_from_an_informer() -> None:
    client = _client(board_of([f.MNIST], f.PODS), FakeNodes(copy.deepcopy(f.NODES)))
    page = client.get("/gpus")
    assert page.status_code == 200 and csrf_token_of(page.text)
    assert '<script src="/static/gpus.js" defer></script>' in page.text
    assert "<script>" not in page.text and "style=" not in page.text
    assert client.get("/static/gpus.js").status_code == 200
    data = client.get("/api/gpus").json()
    assert [r["cells"][:3] for r in data["nodes"]["rows"]][:2] == [
        ["gpu-1", "8", "4"],
        ["gpu-2", "8", "2"],
    ]
    assert [r["key"] for r in data["jobs"]["rows"]] == [MNIST_KEY]


def test_a_user_who_may_not_list_nodes_is_told_why() -> None:
    client = _client(board_of([f.MNIST], f.PODS), FakeNodes([], forbidden=True))
    data = client.get("/api/gpus").json()
    assert data["reason"] == "you may not list the cluster's nodes"
    assert data["nodes"]["rows"] == [] and [r["key"] for r in data["jobs"]["rows"]] == [MNIST_KEY]


def test_the_page_needs_a_session() -> None:
    app = create_app(board_of([]), Sessions(TOKEN), KINDS, allowed_hosts=["127.0.0.1"])
    client = TestClient(app, base_url="http://127.0.0.1:8890", follow_redirects=False)
    assert client.get("/api/gpus").status_code in (401, 403)


def test_nodes_are_cached_without_their_images() -> None:
    node = {
        "metadata": {"name": "n", "labels": {"a": "b"}, "managedFields": [{}]},
        "status": {"allocatable": {"nvidia.com/gpu": "4"}, "images": [{"names": ["x"]}]},
    }
    assert slim_node(node) == {
        "metadata": {"name": "n", "labels": {"a": "b"}},
        "status": {"allocatable": {"nvidia.com/gpu": "4"}},
    }


def _parse(text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(text.strip().split("\n")[1][len("data: ") :])
    return data


def test_live_a_pod_bound_and_a_node_added_move_the_view() -> None:
    pods = copy.deepcopy(f.PODS)
    board = board_of([f.MNIST], [p for p in pods if p["metadata"]["name"] != "mnist-worker-1"])
    fake = FakeNodes(copy.deepcopy(f.NODES))
    watch = NodeWatch(fake, board)  # type: ignore[arg-type]
    new_node = {"metadata": {"name": "gpu-9"}, "status": {"allocatable": {"nvidia.com/gpu": "2"}}}

    async def read() -> list[dict[str, Any]]:
        updates = gpu_updates(board, watch, keepalive=0.05)
        got = [_parse(await anext(updates))]
        bound = next(p for p in pods if p["metadata"]["name"] == "mnist-worker-1")
        threading.Timer(0.05, board.put_pod, [bound]).start()
        got.append(_parse(await asyncio.wait_for(_next(updates), 5.0)))
        ev = {"type": "ADDED", "object": new_node}
        threading.Timer(0.05, fake.events.put, [ev]).start()
        got.append(_parse(await asyncio.wait_for(_next(updates), 5.0)))
        threading.Timer(0.05, board.close).start()
        rest = [e async for e in updates if not e.startswith(":")]
        got.append({"rest": rest})
        return got

    first, bound, added, end = asyncio.run(read())
    before = {r["key"]: r["cells"][2] for r in first["nodes"]["rows"]}
    after = {r["key"]: r["cells"][2] for r in bound["nodes"]["rows"]}
    assert before != after
    assert "gpu-9" in {r["key"] for r in added["nodes"]["rows"]}
    assert end == {"rest": []}
    watch.stop()


async def _next(updates: Any) -> str:
    while True:
        text = await anext(updates)
        if not text.startswith(":"):
            return str(text)
