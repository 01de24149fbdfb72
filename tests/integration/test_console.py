"""``t9k console`` against the local cluster's API server: the command started
as a user starts it (its console script, the admin kubeconfig), its one-time
token exchanged over real HTTP, and a job's row and its phase's change read
from the Server-Sent Events stream as the page reads them.

The job's status is written by the test itself (no operator runs): what is
measured is the console's own delay, from the status write to the event.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from t9k_operator.kube import KubeClient
from tests.integration.cluster import Cluster
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job

pytestmark = pytest.mark.usefixtures("crds_installed")

T9K = Path(sys.executable).with_name("t9k")
URL = re.compile(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)")
PHASE = 3  # the PHASE column of t9k list -A


@pytest.fixture
def console_url(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The base URL and token ``t9k console --no-browser`` printed."""
    out = tmp_path / "console.out"
    command = [str(T9K), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace]
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [*command, "console", "--no-browser", "--port", "0"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        # It prints the URL once its informers have listed and it listens.
        deadline = time.monotonic() + 60
        while not (match := URL.search(out.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"t9k console printed no URL:\n{out.read_text()}")
            time.sleep(0.1)
        yield match.group(1), match.group(2)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert match.group(2) not in out.read_text().replace(match.group(0), ""), "token logged"


def _read_events(client: httpx2.Client, url: str, into: queue.Queue[Any]) -> None:
    """Each event of the stream into ``into`` as (arrival, name, data)."""
    name = ""
    try:
        with client.stream("GET", url, timeout=httpx2.Timeout(5, read=None)) as response:
            into.put((time.monotonic(), "status", response.status_code))
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line[len("event: ") :]
                elif line.startswith("data: "):
                    into.put((time.monotonic(), name, json.loads(line[len("data: ") :])))
    except httpx2.HTTPError as exc:  # the test closed the client
        into.put((time.monotonic(), "closed", str(exc)))


def _next(events: queue.Queue[Any], wanted: Any, timeout: float) -> tuple[float, Any]:
    """The first event ``wanted(name, data)`` accepts, with its arrival time."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            at, name, data = events.get(timeout=left)
        except queue.Empty:
            break
        if wanted(name, data):
            return at, data
    pytest.fail(f"no such event within {timeout}s")


def test_a_jobs_row_and_its_phase_change_arrive_on_the_stream(
    console_url: tuple[str, str], admin: KubeClient, namespace: str
) -> None:
    base, token = console_url
    with httpx2.Client(base_url=base, follow_redirects=False) as client:
        exchanged = client.get(f"/?token={token}")
        assert exchanged.status_code == 303 and exchanged.headers["location"] == "/"
        assert "HttpOnly" in exchanged.headers["set-cookie"]
        with httpx2.Client(base_url=base) as stranger:
            assert stranger.get(f"/?token={token}").status_code == 403
            assert stranger.get("/api/jobs").status_code == 401
        assert "'unsafe-inline'" not in client.get("/").headers["content-security-policy"]

        events: queue.Queue[Any] = queue.Queue()
        reader = threading.Thread(
            target=_read_events, args=(client, "/api/jobs/events", events), daemon=True
        )
        reader.start()
        _, snapshot = _next(events, lambda n, d: n == "snapshot", 10)
        assert "PyTorchTrainingJob" in snapshot["kinds"]
        assert snapshot["headers"][PHASE] == "PHASE"

        jobs = Jobs(admin, namespace)
        created = jobs.create(pytorch_job("console-mnist", [("worker", 1, "Never")]))
        key = f"{namespace}/PyTorchTrainingJob/console-mnist"
        _, added = _next(events, lambda n, d: n == "upsert" and d["key"] == key, 10)
        assert added["row"]["cells"][:4] == [
            namespace,
            "console-mnist",
            "PyTorchTrainingJob",
            "<unknown>",
        ]

        created["status"] = {"phase": "Running"}
        written = time.monotonic()
        admin.replace_status(PYTORCH, created)
        arrived, moved = _next(
            events,
            lambda n, d: (
                n == "upsert" and d["key"] == key and d["row"]["cells"][PHASE] == "Running"
            ),
            10,
        )
        assert arrived - written < 2.0, f"the phase change took {arrived - written:.2f}s"

        assert moved["row"]["cells"][:3] == [namespace, "console-mnist", "PyTorchTrainingJob"]
        rows = {r["key"]: r["cells"] for r in client.get("/api/jobs").json()["rows"]}
        assert rows[key][PHASE] == "Running"
