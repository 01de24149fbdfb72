"""A console over fixed jobs for the console's tests: its board, its sessions,
a Starlette TestClient, and one that has exchanged the token for a session."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.testclient import TestClient

from t9k_operator.console.app import create_app
from t9k_operator.console.board import JobBoard
from t9k_operator.console.sessions import Sessions
from tests.unit.cli import fixtures as f

TOKEN = "one-time-token-for-the-tests-0123456789abcdef"
KINDS = ["PyTorchTrainingJob", "DeepSpeedJob", "MSJob"]


def board_of(jobs: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]] = ()) -> JobBoard:
    board = JobBoard(now=lambda: f.NOW)
    for job in jobs:
        board.put_job(job)
    for pod in pods:
        board.put_pod(pod)
    return board


def console(
    board: JobBoard | None = None, *, base_url: str = "http://127.0.0.1:8890"
) -> tuple[TestClient, Sessions]:
    """A client of a console over ``board`` (the fixtures' MNIST and MS and
    their pods by default), without a session yet."""
    sessions = Sessions(TOKEN)
    app = create_app(
        board if board is not None else board_of([f.MNIST, f.MS], f.PODS),
        sessions,
        KINDS,
        allowed_hosts=["127.0.0.1", "localhost"],
    )
    return TestClient(app, base_url=base_url, follow_redirects=False), sessions


def logged_in(board: JobBoard | None = None) -> tuple[TestClient, Sessions]:
    """A client that has exchanged the token: it holds the session cookie."""
    client, sessions = console(board)
    assert client.get(f"/?token={TOKEN}").status_code == 303
    return client, sessions


def signed_in(board: JobBoard, **clients: Any) -> TestClient:
    """A client that has exchanged the token, of a console over ``board`` with
    ``clients`` (``reads``, ``writes``: the tests' fakes of the SDK's client)."""
    app = create_app(board, Sessions(TOKEN), KINDS, allowed_hosts=["127.0.0.1"], **clients)
    client = TestClient(app, base_url="http://127.0.0.1:8890", follow_redirects=False)
    assert client.get(f"/?token={TOKEN}").status_code == 303
    return client


def csrf_token_of(page: str) -> str:
    match = re.search(r'<meta name="csrf-token" content="([^"]+)">', page)
    assert match, "the page carries no CSRF token"
    return match.group(1)
