"""The reporter's side of checkpoint before stopping (t9k_operator/report.py
and report_run.py) against a local HTTPS server: the request in the
endpoint's answers, the callback once per request, the checkpointed step
sent, and the wrapper's SIGUSR1 to a script that does not report."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from t9k_operator import report as reportmod
from t9k_operator import report_run
from t9k_operator.report import Reporter
from tests.unit.test_report import Endpoint, PacingEndpoint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def paced(tmp_path: Path) -> Iterator[PacingEndpoint]:
    e = PacingEndpoint(tmp_path)
    yield e
    e.close()


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[Endpoint]:
    e = Endpoint(tmp_path)
    yield e
    e.close()


@pytest.fixture
def token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("token-1\n")
    return path


def reporter(paced: PacingEndpoint, token: Path) -> Reporter:
    return Reporter(paced.url, token_file=str(token), ca_file=str(paced.ca), timeout=5)


def env_for(endpoint: Endpoint | PacingEndpoint, token: Path) -> dict[str, str]:
    return {
        "T9K_PROGRESS_URL": endpoint.url,
        "T9K_PROGRESS_TOKEN_FILE": str(token),
        "T9K_PROGRESS_CA_FILE": str(endpoint.ca),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
    }


def test_the_request_in_the_answers_calls_the_callback_once_per_request(
    paced: PacingEndpoint, token: Path
) -> None:
    r = reporter(paced, token)
    calls: list[bool] = []
    r.on_checkpoint = lambda: calls.append(r.asked.is_set())
    assert r.send({"step": 1}) and not r.asked.is_set()
    paced.checkpoint = True
    assert r.send({"step": 2}) and r.send({"step": 3})
    assert r.asked.is_set() and calls == [True]  # once, with the flag already set
    paced.checkpoint = False  # the stop was called off
    assert r.send({"step": 4}) and not r.asked.is_set()
    paced.checkpoint = True
    assert r.send({"step": 5}) and calls == [True, True]


def test_a_stop_that_asks_anew_while_a_request_stands_calls_the_callback_again(
    paced: PacingEndpoint, token: Path
) -> None:
    """A drain's request stands (the training answered it); a pause then asks
    anew, and its answers say a later request time: the training is told."""
    r = reporter(paced, token)
    calls: list[int] = []
    r.on_checkpoint = lambda: calls.append(1)
    paced.checkpoint, paced.requested_at = True, "2026-03-01T12:00:00Z"
    assert r.send({"step": 1}) and r.send({"step": 2})
    assert calls == [1] and r.requests == 1
    paced.requested_at = "2026-03-01T12:05:00Z"
    assert r.send({"step": 3}) and r.send({"step": 4})
    assert calls == [1, 1] and r.requests == 2 and r.asked.is_set()


def test_a_refused_report_leaves_the_request_as_it_was(paced: PacingEndpoint, token: Path) -> None:
    r = reporter(paced, token)
    paced.checkpoint = True
    assert r.send({"step": 1})
    paced.checkpoint, paced.status = False, 429  # over the rate: no word on the job
    assert not r.send({"step": 2})
    assert r.asked.is_set()


def test_a_callback_that_raises_breaks_nothing(paced: PacingEndpoint, token: Path) -> None:
    r = reporter(paced, token)

    def boom() -> None:
        raise RuntimeError("boom")

    r.on_checkpoint = boom
    paced.checkpoint = True
    assert r.send({"step": 1}) and r.asked.is_set()
    assert r.send({"step": 2})


def test_the_training_says_which_step_it_checkpointed(
    paced: PacingEndpoint, token: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = reporter(paced, token)
    monkeypatch.setattr(reportmod, "_default", r)
    paced.checkpoint = True
    asked: list[int] = []
    reportmod.on_checkpoint(lambda: asked.append(1))
    reportmod.report(step=7)
    assert r.flush(10)
    assert reportmod.checkpoint_requested() and asked == [1]
    reportmod.checkpointed(7)
    assert r.flush(10)
    assert [body for _, _, body in paced.received] == [{"step": 7}, {"checkpointStep": 7}]


def test_without_an_endpoint_nothing_is_requested(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reportmod, "_default", None)
    monkeypatch.delenv("T9K_PROGRESS_URL", raising=False)
    reportmod.on_checkpoint(lambda: None)
    assert not reportmod.checkpoint_requested()
    reportmod.checkpointed(3)  # nothing to send to, and no error


def test_the_command_line_reports_a_checkpointed_step(endpoint: Endpoint, token: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "t9k_operator.report", "--checkpoint-step", "40"],
        env=env_for(endpoint, token), capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert endpoint.received == [("Bearer token-1", {"checkpointStep": 40})]


CHILD = """\
import signal, sys, time
asked = []
signal.signal(signal.SIGUSR1, lambda *_: asked.append(1))
print("ready", flush=True)
deadline = time.monotonic() + 20
while not asked and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(1.5)  # another answer asking still: no second signal
print(f"asked {len(asked)}", flush=True)
sys.exit(3)
"""


def test_the_wrapper_relays_the_request_as_sigusr1_once_and_exits_as_its_child(
    paced: PacingEndpoint, token: Path, tmp_path: Path
) -> None:
    paced.pace = 0.2  # below the reporter's floor: a send a second
    (tmp_path / "child.py").write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, "-m", "t9k_operator.report_run", "--", sys.executable,
         str(tmp_path / "child.py")],
        env=env_for(paced, token), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    paced.checkpoint = True  # once its handler is in place (SIGUSR1 would end it otherwise)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert out.splitlines() == ["asked 1"]
    assert len(paced.received) >= 2 and all(body == {} for _, _, body in paced.received)


def test_the_wrapper_passes_sigterm_on_and_runs_alone_without_an_endpoint(
    tmp_path: Path,
) -> None:
    child = "import time; print('up', flush=True); time.sleep(60)"
    proc = subprocess.Popen(
        [sys.executable, "-m", "t9k_operator.report_run", sys.executable, "-c", child],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM  # the child's end, as a shell reports it
    assert time.monotonic() - started < 10
    assert report_run.main([]) == 2  # no command


def test_the_wrapper_imports_only_the_standard_library_and_the_reporter(tmp_path: Path) -> None:
    source = Path(report_run.__file__).read_text()
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
    tops = {n.split(".")[0] for n in names} - {"__future__"}
    assert tops - sys.stdlib_module_names == {"t9k_operator", "report"}
    assert {n for n in names if n.startswith("t9k_operator")} == {"t9k_operator.report"}
    # Copied next to report.py, it runs alone.
    (tmp_path / "report.py").write_text(Path(reportmod.__file__).read_text())
    (tmp_path / "report_run.py").write_text(source)
    done = subprocess.run(
        [sys.executable, "-E", "-s", "report_run.py", sys.executable, "-c", "print('ok')"],
        cwd=tmp_path, env={"PATH": os.environ.get("PATH", "")}, capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


def test_a_checkpoint_waiting_to_be_sent_survives_the_reports_after_it(
    endpoint: Endpoint, token: Path
) -> None:
    r = Reporter(endpoint.url, token_file=str(token), ca_file=str(endpoint.ca), timeout=5)
    endpoint.gate.clear()  # the first report is held at the server
    r.report({"step": 1})
    assert endpoint.arrived.wait(10)
    r.report({"checkpointStep": 9})  # these wait for the sender, each replacing the last
    r.report({"step": 10})
    r.report({"step": 11})
    endpoint.gate.set()
    assert r.flush(10)
    bodies = [body for _, body in endpoint.received]
    assert bodies == [{"step": 1}, {"step": 11, "checkpointStep": 9}]
