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
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from t9k_operator.builders.common import JOB_KIND, JOB_NAME, REPLICA_INDEX, REPLICA_TYPE
from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import PODS, SECRETS
from tests.integration.cluster import Cluster, wait_for
from tests.integration.console_process import t9k_console
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job
from tests.integration.test_cli import LOG_TEXTS, log_lines

pytestmark = pytest.mark.usefixtures("crds_installed")

PHASE = 3  # the PHASE column of t9k list -A
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(1)>"


@pytest.fixture
def console_url(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The base URL and token ``t9k console --no-browser`` printed."""
    out = tmp_path / "console.out"
    with t9k_console(cluster, namespace, out) as match:
        yield match.group(1), match.group(2)
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


def _pod_of(job: dict[str, Any], replica: str, index: int) -> dict[str, Any]:
    """A pod of ``job`` as the operator labels its pods (no operator runs here):
    on a KWOK node, which logs tests/integration/test_cli.py's LOG_TEXTS."""
    name = job["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{replica}-{index}",
            "labels": {
                JOB_NAME: name,
                JOB_KIND: job["kind"],
                REPLICA_TYPE: replica,
                REPLICA_INDEX: str(index),
            },
            "annotations": {"kwok.t9k.dev/run-duration": "600s"},
        },
        "spec": {"containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.4.0"}]},
    }


def test_a_jobs_page_shows_it_live_with_its_pods_events_and_logs(
    console_url: tuple[str, str], admin: KubeClient, namespace: str
) -> None:
    base, token = console_url
    secret = "c2VjcmV0LWtleS1vZi10aGUtdGVzdA=="
    admin.create(
        SECRETS,
        {"metadata": {"name": "console-page-ssh"}, "data": {"id_rsa": secret}},
        namespace,
    )
    job = pytorch_job("console-page", [("worker", 1, "Never")], annotations={"note": MARKUP})
    created = Jobs(admin, namespace).create(job)
    pod = admin.create(PODS, _pod_of(created, "worker", 0), namespace)
    pod_name = pod["metadata"]["name"]
    api = f"/api/jobs/{namespace}/PyTorchTrainingJob/console-page"
    with httpx2.Client(base_url=base, follow_redirects=False) as client:
        assert client.get(f"/?token={token}").status_code == 303
        page = client.get(f"/jobs/{namespace}/PyTorchTrainingJob/console-page")
        assert page.status_code == 200 and '<script src="/static/job.js" defer>' in page.text

        def ready() -> dict[str, Any] | None:
            detail: dict[str, Any] = client.get(api).json()
            replicas = {r["pod"]: r for r in detail["replicas"]}
            scheduled = any(e["reason"] == "Scheduled" for e in detail["events"])
            mine = replicas.get(pod_name) or {}
            return detail if mine.get("phase") == "Running" and scheduled else None

        detail = wait_for(ready, 60, "the pod Running and Scheduled on the Job page")
        replica = next(r for r in detail["replicas"] if r["pod"] == pod_name)
        assert (replica["type"], replica["index"]) == ("worker", "0")
        assert replica["node"] != "<none>"
        assert [c["name"] for c in replica["containers"]] == ["pytorch"]
        assert detail["scheduling"][0]["section"] == "Scheduling"
        raw = client.get(api).text
        assert "<script" not in raw and MARKUP in json.loads(raw)["yaml"]

        # Live: the status written shows on the page's stream within seconds.
        events: queue.Queue[Any] = queue.Queue()
        reader = threading.Thread(
            target=_read_events, args=(client, f"{api}/events", events), daemon=True
        )
        reader.start()
        _, first = _next(events, lambda n, d: n == "job", 10)
        assert first["name"] == "console-page"
        created["status"] = {"phase": "Running"}
        written = time.monotonic()
        admin.replace_status(PYTORCH, created)
        arrived, _ = _next(events, lambda n, d: n == "job" and d["phase"] == "Running", 10)
        assert arrived - written < 3.0, f"the phase change took {arrived - written:.2f}s"

        # Logs: read once, followed (the stream stays open on KWOK: the test leaves
        # after the lines), downloaded.
        params = {"pod": pod_name, "container": "pytorch"}
        log = client.get(f"{api}/logs", params=params)
        assert log.status_code == 200
        assert log.text.splitlines() == log_lines(pod_name, "pytorch")
        with client.stream(
            "GET", f"{api}/logs", params={**params, "follow": "1"}, timeout=10
        ) as followed:
            lines = []
            for line in followed.iter_lines():
                lines.append(line)
                if len(lines) == len(LOG_TEXTS):
                    break
        assert lines == log_lines(pod_name, "pytorch")
        download = client.get(f"{api}/logs", params={**params, "download": "1"})
        assert download.headers["content-disposition"] == (
            f'attachment; filename="{pod_name}_pytorch.log"'
        )
        assert client.get(f"{api}/logs", params={"pod": "elsewhere"}).status_code == 404
        for path in (api, f"{api}/logs?pod={pod_name}"):
            assert secret not in client.get(path).text


# -- actions -----------------------------------------------------------------------------

TYPO_YAML = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: console-typo
spec:
  replicaSpecs:
  - type: worker
    replicas: 1
    restartPolicy: Never
    templat:
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.4.0
"""


def _sign_in(client: httpx2.Client, token: str) -> dict[str, str]:
    """Exchange the token for the session cookie; the CSRF header its pages carry."""
    assert client.get(f"/?token={token}").status_code == 303
    found = re.search(r'<meta name="csrf-token" content="([^"]+)">', client.get("/new").text)
    assert found
    return {"X-CSRF-Token": found.group(1)}


def test_a_misspelt_field_is_refused_with_its_path_and_nothing_is_made(
    console_url: tuple[str, str], admin: KubeClient, namespace: str
) -> None:
    base, token = console_url
    with httpx2.Client(base_url=base, follow_redirects=False, timeout=30) as client:
        csrf = _sign_in(client, token)
        for action in ("preview", "create"):
            response = client.post(f"/api/new/{action}", json={"yaml": TYPO_YAML}, headers=csrf)
            assert response.status_code == 422, response.text
            data = response.json()
            assert ".spec.replicaSpecs[0].templat" in data["error"], data
            assert data["fields"] == [".spec.replicaSpecs[0].templat"]
        fixed = TYPO_YAML.replace("templat:", "template:")
        preview = client.post("/api/new/preview", json={"yaml": fixed}, headers=csrf)
        assert preview.status_code == 200, preview.text
        assert "name: console-typo" in preview.json()["yaml"]
        # Without the CSRF token the create is refused before anything is asked.
        assert client.post("/api/new/create", json={"yaml": fixed}).status_code == 403
    with pytest.raises(NotFound):
        admin.get(PYTORCH, "console-typo", namespace)


def test_a_job_made_from_the_form_is_paused_resumed_and_deleted(
    console_url: tuple[str, str], admin: KubeClient, namespace: str, operator: object
) -> None:
    base, token = console_url
    form = {
        "kind": "pytorch",
        "name": "console-acts",
        "image": "t:1",
        "command": "python x.py",
        "annotations": "kwok.t9k.dev/run-duration=600s",
    }
    api = f"/api/jobs/{namespace}/PyTorchTrainingJob/console-acts"

    with httpx2.Client(base_url=base, follow_redirects=False, timeout=30) as client:

        def phase() -> str:
            response = client.get(api)
            return str(response.json()["phase"]) if response.status_code == 200 else ""

        csrf = _sign_in(client, token)
        made = client.post("/api/new/create", json={"form": form}, headers=csrf)
        assert made.status_code == 201, made.text
        assert made.json()["url"] == f"/jobs/{namespace}/PyTorchTrainingJob/console-acts"
        again = client.post("/api/new/create", json={"form": form}, headers=csrf)
        assert again.status_code == 409 and "already exists" in again.json()["error"]
        wait_for(lambda: phase() == "Running", 60, "the job Running on its page")

        assert client.post(f"{api}/pause").status_code == 403  # no CSRF token
        assert phase() == "Running"
        paused = client.post(f"{api}/pause", headers=csrf)
        assert paused.status_code == 200, paused.text
        wait_for(lambda: phase() == "Paused", 60, "the job Paused on its page")
        resumed = client.post(f"{api}/resume", headers=csrf)
        assert resumed.status_code == 200, resumed.text
        wait_for(lambda: phase() == "Running", 60, "the job Running again")

        deleted = client.post(f"{api}/delete", headers=csrf)
        assert deleted.status_code == 202, deleted.text
        wait_for(lambda: client.get(api).status_code == 404, 30, "the job gone from its page")
        gone = client.post(f"{api}/delete", headers=csrf)
        assert gone.status_code == 404 and "not found" in gone.json()["error"]
    with pytest.raises(NotFound):
        admin.get(PYTORCH, "console-acts", namespace)
