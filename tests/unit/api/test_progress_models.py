"""Training progress in the API: what a report may hold (parse_report refuses
the rest with a reason), ``status.progress`` (the progress integration's
part), ``spec.runPolicy.progress`` of every job kind, and how the generated
CRDs carry them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t9k_operator.api.msjob import MSRunPolicy
from t9k_operator.api.progress import ProgressPolicy
from t9k_operator.api.specs import RunPolicy
from t9k_operator.integrations.progress.build import Progress, human_seconds, summary
from t9k_operator.integrations.progress.reports import (
    MAX_METRICS,
    MAX_REPORT_BYTES,
    ProgressReport,
    ReportError,
    parse_report,
)

ROOT = Path(__file__).resolve().parents[3]
CRDS = sorted((ROOT / "manifests" / "crds").glob("*.yaml"))
JOB_CRDS = [p for p in CRDS if "tensorboards" not in p.name]


def _body(data: Any) -> bytes:
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("data", "report"),
    [
        ({"step": 10}, ProgressReport(step=10)),
        (
            {"step": 10, "totalSteps": 100, "epoch": 1.5, "metrics": {"loss": 0.3}},
            ProgressReport(step=10, total_steps=100, epoch=1.5, metrics={"loss": 0.3}),
        ),
        ({"metrics": {"eval/acc": 1, "lr:group_0": 1e-4}}, None),
        ({"step": 1, "unknown": "ignored"}, ProgressReport(step=1)),
    ],
)
def test_a_valid_report_parses(data: dict[str, Any], report: ProgressReport | None) -> None:
    parsed = parse_report(_body(data))
    if report is not None:
        assert parsed == report
    else:
        assert parsed.metrics == {"eval/acc": 1.0, "lr:group_0": 1e-4}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"{}", "needs step, totalSteps, epoch, checkpointStep or metrics"),
        (b"[1]", "a JSON object"),
        (b"not json", "not JSON"),
        (b'{"step": NaN}', "not JSON"),
        (b'{"metrics": {"loss": Infinity}}', "not JSON"),
        (b'{"epoch": 1e999}', "epoch"),  # overflows to inf
        (_body({"step": -1}), "step"),
        (_body({"step": 2**60}), "step"),
        (_body({"totalSteps": 0}), "totalSteps"),
        (_body({"step": "ten"}), "step"),
        (_body({"metrics": {"": 1}}), "metrics"),
        (_body({"metrics": {"1loss": 1}}), "metrics"),
        (_body({"metrics": {"loss value": 1}}), "metrics"),
        (_body({"metrics": {"x" * 64: 1}}), "metrics"),
        (_body({"metrics": {"loss": "low"}}), "metrics"),
        (_body({"metrics": {f"m{i}": i for i in range(MAX_METRICS + 1)}}), "metrics"),
        (b" " * (MAX_REPORT_BYTES + 1), f"at most {MAX_REPORT_BYTES} bytes"),
    ],
)
def test_a_report_outside_the_bounds_is_refused_with_a_reason(body: bytes, why: str) -> None:
    with pytest.raises(ReportError, match=why.replace("(", r"\(")):
        parse_report(body)


def test_as_many_metrics_as_allowed_parse() -> None:
    metrics = {f"m{i}": float(i) for i in range(MAX_METRICS)}
    assert parse_report(_body({"metrics": metrics})).metrics == metrics


@pytest.mark.parametrize(
    ("step", "total", "text"),
    [
        (None, 100, None),
        (0, None, "0"),
        (420, 1000, "420/1000 (42%)"),
        (999, 1000, "999/1000 (99%)"),  # never rounded up to done
        (1000, 1000, "1000/1000 (100%)"),
        (1200, 1000, "1200/1000 (100%)"),  # ran past its estimate
    ],
)
def test_the_summary_kubectl_shows(step: int | None, total: int | None, text: str | None) -> None:
    assert summary(step, total) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(-3, "0s"), (45.9, "45s"), (60, "1m00s"), (725, "12m05s"), (10920, "3h02m"),
     (187200, "2d04h")],
)  # fmt: skip
def test_human_seconds(seconds: float, text: str) -> None:
    assert human_seconds(seconds) == text


@pytest.mark.parametrize("policy_model", [RunPolicy, MSRunPolicy])
def test_run_policy_progress_is_optional_and_bounded(policy_model: Any) -> None:
    assert policy_model.model_validate({}).progress is None
    parsed = policy_model.model_validate({"progress": {"hangTimeoutSeconds": 900}})
    assert parsed.progress == ProgressPolicy(hang_timeout_seconds=900, on_hang="Fail")
    restart = {"progress": {"hangTimeoutSeconds": 60, "onHang": "Restart"}}
    assert policy_model.model_validate(restart).progress.on_hang == "Restart"
    for bad in ({"hangTimeoutSeconds": 59}, {"hangTimeoutSeconds": 900, "onHang": "Wait"}, {}):
        with pytest.raises(ValidationError):
            policy_model.model_validate({"progress": bad})


def test_status_progress_round_trips() -> None:
    progress = {
        "step": 420,
        "totalSteps": 1000,
        "epoch": 2.0,
        "metrics": {"loss": 0.31},
        "replica": "job-worker-0",
        "lastReportTime": "2026-01-02T03:04:05Z",
        "stepsPerSecond": 1.5,
        "eta": "6m26s",
        "summary": "420/1000 (42%)",
    }
    parsed = Progress.model_validate(progress)
    assert parsed.model_dump(by_alias=True, exclude_none=True) == progress


def _versions(path: Path) -> list[dict[str, Any]]:
    crd = yaml.safe_load(path.read_text())
    return list(crd["spec"]["versions"])


@pytest.mark.parametrize("path", JOB_CRDS, ids=lambda p: p.name)
def test_every_job_crd_shows_progress_and_eta_and_bounds_the_policy(path: Path) -> None:
    for version in _versions(path):
        columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
        assert columns["Progress"]["jsonPath"] == ".status.progress.summary"
        assert columns["ETA"]["jsonPath"] == ".status.progress.eta"
        schema = version["schema"]["openAPIV3Schema"]["properties"]
        policy = schema["spec"]["properties"]["runPolicy"]["properties"]["progress"]
        assert "extension" in policy["description"]
        timeout = policy["properties"]["hangTimeoutSeconds"]
        assert (timeout["minimum"], timeout["maximum"]) == (60, 2**31 - 1)
        assert policy["properties"]["onHang"]["enum"] == ["Restart", "Fail"]
        progress = schema["status"]["properties"]["progress"]["properties"]
        assert progress["metrics"]["maxProperties"] == MAX_METRICS
