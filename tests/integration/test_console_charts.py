"""The Job page's charts against the local cluster's API server: ``t9k console``
started as a user starts it, a job whose status reports progress step after
step (written by the test, as the operator would write it), and each step a
point of the page's chart, with the ETA ``t9k list`` shows; without a
Prometheus, the GPU chart says it needs ``--prometheus-url``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import pytest

from t9k_operator.kube import KubeClient
from tests.integration import test_console
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job

pytestmark = pytest.mark.usefixtures("crds_installed")

console_url = test_console.console_url  # the fixture: t9k console --no-browser


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_each_reported_step_is_a_point_of_the_progress_chart(
    console_url: tuple[str, str], admin: KubeClient, namespace: str
) -> None:
    base, token = console_url
    jobs = Jobs(admin, namespace)
    job = jobs.create(pytorch_job("console-chart", [("worker", 1, "Never")]))
    charts = f"/api/jobs/{namespace}/PyTorchTrainingJob/console-chart/charts"
    start = datetime.now(UTC).replace(microsecond=0)
    with httpx2.Client(base_url=base, follow_redirects=False, timeout=30) as client:
        assert client.get(f"/?token={token}").status_code == 303
        data: dict[str, Any] = {}
        for n, step in enumerate((100, 250, 400)):
            at = start + timedelta(seconds=10 * n)
            job["status"] = {
                "phase": "Running",
                "progress": {
                    "step": step,
                    "totalSteps": 1000,
                    "stepsPerSecond": 15.0,
                    "lastReportTime": _stamp(at),
                    "eta": f"{(1000 - step) // 15}s",
                    "summary": f"{step}/1000 ({step // 10}%)",
                    "replica": "console-chart-worker-0",
                },
            }
            job = admin.replace_status(PYTORCH, job)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                data = client.get(charts).json()
                if len(data["progress"]["points"]) == n + 1:
                    break
                time.sleep(0.1)
            assert [p[1] for p in data["progress"]["points"]] == [100, 250, 400][: n + 1]
            assert data["progress"]["points"][-1][0] == at.timestamp()
        progress = data["progress"]
        assert (progress["summary"], progress["eta"]) == ("400/1000 (40%)", "40s")
        assert progress["source"] == "console"
        assert not data["gpu"]["available"] and "--prometheus-url" in data["gpu"]["note"]
        assert data["idle"]["idle"] is False and data["tensorboard"] == {"url": ""}
        no_tb = client.get(f"/tensorboard/{namespace}/PyTorchTrainingJob/console-chart/")
        assert no_tb.status_code == 404
        page = client.get(f"/jobs/{namespace}/PyTorchTrainingJob/console-chart")
        assert '<script src="/static/chart.js" defer></script>' in page.text
        # Drawn on a canvas by uPlot, bundled in the package with its style sheet.
        assert "getContext" in client.get("/static/chart.js").text
        assert '<link rel="stylesheet" href="/static/chart.css">' in page.text
        assert ".uplot" in client.get("/static/chart.css").text
