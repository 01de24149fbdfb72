"""A job's TensorBoard opened through ``t9k console``, for real, in a real browser.

The job is a PyTorchTrainingJob with a ``tensorboardSpec``; the operator
makes its TensorBoard (the pod and the Service ``<job>-tensorboard``). The
pod runs on the pod host (tests/integration/podhost) as kubelet would run
it: the real ``tensorboard`` program (a test dependency) on event files
tensorboardX wrote into the claim's volume. The test is its kubelet: it
writes the pod's status with the pod's real address, so the endpoints
controller gives the Service that address, and the API server's service
proxy reaches TensorBoard over the pod host's link to this machine.

What stands in for the cluster: the claim's bound volume is a directory of
this machine (``Node.add_claim``); the pod is left to the test, not to KWOK
(``kwok.t9k.dev/manual``, set while the pod waits for its claim, before any
node has it); its image is this machine's root with ``tensorboard`` on its
PATH (test_tensorboard_program's). TensorBoard's page comes by a
port-forward (the service proxy drops it: tensorboard_index); on KWOK's
nodes a port-forward reaches KWOK's TensorBoard stand-in, not the pod, so:

* ``t9k console`` as a user runs it, in Debian's Chromium (Playwright, as
  test_console_browser): signed in, the Job page's "Open TensorBoard" opens
  the board in a sandboxed tab (its page the stand-in, through a real
  port-forward), and TensorBoard's own requests from there, its form POST
  included, get the run, the tag and its values from the real TensorBoard
  through the real service proxy;
* TensorBoard's whole front end, its scalars dashboard showing the run and
  the tag: the console's app in this process over the admin's client, its
  page by a connection straight to the pod's address instead of the
  port-forward, everything else through the real service proxy;
* in both, the board's page is in an opaque origin: it reads neither the
  console's cookie nor its pages, and has no opener.

A ServiceAccount without ``get services/proxy`` gets the API server's refusal.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.testclient import TestClient

from t9k_operator.console import tensorboard_index
from t9k_operator.console.app import create_app
from t9k_operator.console.board import JobBoard
from t9k_operator.console.identity import person_client
from t9k_operator.console.sessions import Sessions
from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import PODS, SERVICEACCOUNTS
from tests.integration import test_console_browser
from tests.integration.cluster import Cluster, request_token, wait_for
from tests.integration.console_process import t9k_console
from tests.integration.jobs import PYTORCH, Jobs, provide_claims, pytorch_job
from tests.integration.kubelet_status import pod_status, running
from tests.integration.podhost import Node
from tests.integration.podhost.pod import PodRun
from tests.integration.test_console_browser import VIEWPORT
from tests.integration.test_tensorboard_program import IMAGE, write_events

pytestmark = pytest.mark.usefixtures("crds_installed")

JOB = "mnist"
POD = f"{JOB}-tensorboard"
MANUAL = "kwok.t9k.dev/manual"
TAG = "train/loss"

# TensorBoard's own requests, as its scalars dashboard makes them, from the
# board's page: the runs, the tags, and one tag's values by a form POST.
ASK = """
async ([run, tag]) => {
  const get = async (path) => (await fetch(path)).json();
  const form = new FormData();
  form.append("tag", tag);
  form.append("runs", run);
  const posted = await fetch("data/plugin/scalars/scalars_multirun", {
    method: "POST", body: form, headers: { "X-XSRF-Protected": "1" },
  });
  const values = (await posted.json())[run].map((point) => point[2]);
  return { runs: await get("data/runs"), tags: Object.fromEntries(
    Object.entries(await get("data/plugin/scalars/tags")).map(([r, t]) => [r, Object.keys(t)])),
    values };
}
"""

# What a page can read of the console from where it runs: its origin, the
# console's cookie, and the console's Jobs page (which carries the CSRF token).
PROBE = """
async () => {
  const out = { origin: self.origin };
  try { out.cookie = document.cookie; } catch (e) { out.cookie = "refused: " + e.name; }
  for (const path of ["/", "/api/jobs"]) {
    try {
      const r = await fetch(path, { credentials: "include" });
      out[path] = "read " + r.status + ": " + (await r.text()).slice(0, 200);
    } catch (e) { out[path] = "refused: " + e.name; }
  }
  try { out.opener = window.opener === null ? "none" : "some"; } catch (e) { out.opener = "?"; }
  return out;
}
"""


browser = test_console_browser.browser
"""Debian's Chromium, headless (test_console_browser's fixture)."""


@pytest.fixture
def board_pod(
    admin: KubeClient, namespace: str, tmp_path: Path, operator: Any
) -> Iterator[tuple[PodRun, str]]:
    """The job, and its TensorBoard's pod running on the pod host with its
    real address in its status: (the pod's run, the run's name in TensorBoard)."""
    node = Node(
        tmp_path / "node", namespace, client=admin, host_services=[f"t9k-console.{namespace}"]
    )
    try:
        logs = tmp_path / "volumes" / "logs"
        write_events(logs / "mnist" / "run-1", TAG, [0.9, 0.5, 0.25, 0.1])
        node.add_claim("logs", logs)
        jobs = Jobs(admin, namespace)
        body = pytorch_job(JOB, [("worker", 1, "Never")])
        body["spec"]["tensorboardSpec"] = {
            "image": "tensorflow/tensorflow:2.14.0",
            "trainingLogFilesets": ["t9k://pvc/logs/mnist/"],
        }
        jobs.create(body)
        # The pod waits for its claim: it is made the test's before a node has it.
        wait_for(lambda: _get(admin, namespace), 60, f"pod {POD}")
        admin.patch(PODS, POD, {"metadata": {"annotations": {MANUAL: "true"}}}, namespace)
        volume = {"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}}
        provide_claims(jobs, {"spec": {"volumes": [volume]}})
        pod = wait_for(lambda: _bound(admin, namespace), 120, f"pod {POD} bound")
        run = node.run_pod(pod, IMAGE)
        _write_running(admin, pod, run.ip)
        yield run, _served_run(admin, namespace)
    finally:
        node.close()


def _get(admin: KubeClient, namespace: str) -> dict[str, Any] | None:
    try:
        return admin.get(PODS, POD, namespace)
    except NotFound:
        return None


def _bound(admin: KubeClient, namespace: str) -> dict[str, Any] | None:
    pod = _get(admin, namespace)
    return pod if pod and pod["spec"].get("nodeName") else None


def _write_running(admin: KubeClient, pod: dict[str, Any], ip: str) -> None:
    """Its status as kubelet writes it for a running, ready pod at ``ip``."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    containers = [running(c, started) for c in pod["spec"]["containers"]]
    status = pod_status(
        pod,
        "127.0.0.1",
        "Running",
        containers,
        [],
        ready=True,
        reason=None,
        message=None,
        extra=(),
        sandbox=True,
    )
    status["podIP"], status["podIPs"] = ip, [{"ip": ip}]
    meta = pod["metadata"]
    admin.patch(PODS, meta["name"], {"status": status}, meta["namespace"], subresource="status")


def _served_run(admin: KubeClient, namespace: str) -> str:
    """The run TensorBoard serves, asked through the API server's service proxy."""
    path = f"/api/v1/namespaces/{namespace}/services/{POD}:6006/proxy/data/runs"

    def runs() -> list[str]:
        try:
            return list(json.loads(admin.get_raw(path).data))
        except Exception as exc:  # not yet: no endpoint, or TensorBoard still loading
            raise AssertionError(str(exc)) from None

    found: list[str] = wait_for(runs, 120, "TensorBoard's runs through the service proxy", 1)
    assert len(found) == 1, found
    return found[0]


def test_the_board_opens_from_the_job_page_asks_tensorboard_and_reads_nothing_of_the_console(
    cluster: Cluster, namespace: str, board_pod: tuple[PodRun, str], browser: Any, tmp_path: Path
) -> None:
    """``t9k console`` as a user runs it: the link opens the board in a
    sandboxed tab under a grant; its page came by a real port-forward (on
    KWOK's nodes, KWOK's TensorBoard stand-in answers it), and TensorBoard's
    own requests from that page, POST included, reach the real TensorBoard
    through the API server's service proxy."""
    _, run_name = board_pod
    with t9k_console(cluster, namespace, tmp_path / "console.out") as match:
        base, token = match.group(1), match.group(2)
        context = browser.new_context(viewport=VIEWPORT)
        seen = _watch(context)
        page = context.new_page()
        page.goto(f"{base}/?token={token}")
        page.goto(f"{base}/jobs/{namespace}/PyTorchTrainingJob/{JOB}")
        link = page.locator("#tensorboard-link")
        link.wait_for(state="visible", timeout=30_000)
        want = f"/tensorboard/{namespace}/PyTorchTrainingJob/{JOB}/"
        page.wait_for_function(
            "(want) => document.querySelector('#tensorboard-link').href.endsWith(want)", arg=want
        )
        with context.expect_page(timeout=60_000) as opened:
            link.click()
        board = opened.value
        board.wait_for_load_state()
        assert "/tb/" in board.url and "/tensorboard/" not in board.url, board.url
        assert "TensorBoard stand-in: /" in board.content(), board.content()
        asked = board.evaluate(ASK, [run_name, TAG])
        assert asked["runs"] == [run_name], (asked, seen)
        assert asked["tags"] == {run_name: [TAG]}, asked
        assert [round(v, 2) for v in asked["values"]] == [0.9, 0.5, 0.25, 0.1], asked
        _assert_sandboxed(board, page, seen)
        context.close()


def _assert_sandboxed(board: Any, page: Any, seen: dict[str, list[str]]) -> None:
    probe = board.evaluate(PROBE)
    assert probe["origin"] == "null", probe
    assert probe["cookie"].startswith("refused"), probe
    assert probe["/"].startswith("refused") and probe["/api/jobs"].startswith("refused"), probe
    assert probe["opener"] == "none", probe
    # Nothing of the board's own failed (its fonts, asked of the console's root
    # by an absolute path, do: they are not the board's).
    assert not [f for f in seen["failed"] if "/tb/" in f], seen
    # The console's own page still has its session.
    assert page.evaluate("() => fetch('/api/jobs').then((r) => r.status)") == 200


def test_tensorboards_scalars_dashboard_shows_the_run_through_the_api_server(
    admin: KubeClient, namespace: str, board_pod: tuple[PodRun, str], browser: Any
) -> None:
    """TensorBoard's own front end in Chromium: the console's app over the
    admin's client, every request of the board through the API server's
    service proxy to the real TensorBoard, but its page, which comes by a
    port-forward: here a connection straight to the pod's address, as the
    port-forward of a real kubelet would give (KWOK's gives a stand-in)."""
    run, run_name = board_pod
    board_of = JobBoard()
    board_of.put_job(admin.get(PYTORCH, JOB, namespace))
    once = "t" * 43
    app = create_app(board_of, Sessions(once), ["PyTorchTrainingJob"], reads=_Reads(admin))
    with _serving(app) as base, _straight_to(run.ip):
        context = browser.new_context(viewport=VIEWPORT)
        seen = _watch(context)
        page = context.new_page()
        page.goto(f"{base}/?token={once}")
        board = context.new_page()

        def multirun(r: Any) -> bool:
            return r.request.method == "POST" and "/data/plugin/scalars/scalars_multirun" in r.url

        try:
            with board.expect_response(multirun, timeout=90_000) as posted:
                board.goto(f"{base}/tensorboard/{namespace}/PyTorchTrainingJob/{JOB}/#scalars")
                board.get_by_text(TAG).first.wait_for(timeout=90_000)
                board.get_by_text(run_name).first.wait_for(timeout=30_000)
        except Exception as exc:
            saw = json.dumps(seen, indent=1)
            raise AssertionError(f"{exc}\nthe board's page saw:\n{saw}") from exc
        assert "/tb/" in board.url, board.url
        assert posted.value.status == 200, seen
        assert posted.value.json()[run_name][-1][1:] == [3, pytest.approx(0.1)], seen
        _assert_sandboxed(board, page, seen)
        context.close()


@contextlib.contextmanager
def _serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a port of this machine, for the block."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 30, "the console's app serving")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextlib.contextmanager
def _straight_to(ip: str) -> Iterator[None]:
    """The port-forward to the TensorBoard's pod, as a connection to its address."""

    class Port:
        def __init__(self, connection: Any, namespace: str, pod: str, port: int) -> None:
            assert pod == POD, pod
            self.socket = socket.create_connection((ip, port), timeout=10)

        def close(self) -> None:
            self.socket.close()

    real = tensorboard_index.open_pod_port
    tensorboard_index.open_pod_port = Port  # type: ignore[assignment]
    try:
        yield
    finally:
        tensorboard_index.open_pod_port = real


def _watch(context: Any) -> dict[str, list[str]]:
    """What the browser's pages ask and meet: each answer (method, status,
    URL), each failed request, each console error."""
    seen: dict[str, list[str]] = {"answers": [], "failed": [], "errors": []}
    context.on(
        "response",
        lambda r: seen["answers"].append(f"{r.request.method} {r.status} {r.url}"),
    )
    context.on(
        "requestfailed",
        lambda r: seen["failed"].append(f"{r.method} {r.url}: {r.failure}"),
    )
    context.on(
        "console",
        lambda m: seen["errors"].append(m.text) if m.type == "error" else None,
    )
    return seen


class _Reads:
    """The console's client for one person (the SDK's client has more)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    def events(self, job: Any, pods: Any = ()) -> list[dict[str, Any]]:
        return []


def test_a_person_without_the_service_proxy_right_gets_the_api_servers_refusal(
    cluster: Cluster, admin: KubeClient, namespace: str, board_pod: tuple[PodRun, str]
) -> None:
    """The console's app over a real client of each: the viewer, a
    ServiceAccount with no Role at all (so no ``get services/proxy``), and the
    admin. The refusal is the API server's, its reason passed on."""
    admin.create(SERVICEACCOUNTS, {"metadata": {"name": "viewer"}}, namespace)
    token = request_token(admin, namespace, "viewer")
    ca = str(cluster.kubeconfig.parent / "pki" / "ca.crt")
    board = JobBoard()
    board.put_job(admin.get(PYTORCH, JOB, namespace))
    answers = {}
    for who, client in (("viewer", person_client(cluster.server, ca, token)), ("admin", admin)):
        once = "t" * 43
        app = create_app(board, Sessions(once), ["PyTorchTrainingJob"], reads=_Reads(client))
        with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as http:
            assert http.get(f"/?token={once}").status_code == 303
            opened = http.get(f"/tensorboard/{namespace}/PyTorchTrainingJob/{JOB}/")
            assert opened.status_code == 303, (who, opened.text)
            answers[who] = http.get(opened.headers["location"] + "data/runs")
    viewer, allowed = answers["viewer"], answers["admin"]
    assert viewer.status_code == 403, viewer.text
    assert f'services "{POD}:6006" is forbidden' in viewer.text, viewer.text
    assert f"system:serviceaccount:{namespace}:viewer" in viewer.text, viewer.text
    assert 'cannot get resource "services/proxy"' in viewer.text, viewer.text
    assert allowed.status_code == 200 and board_pod[1] in allowed.json(), allowed.text
