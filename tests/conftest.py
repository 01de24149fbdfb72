"""The whole suite's rules: under ``CI=true`` a test that skips or is marked to
fail is a failure, and so is a module that skips itself whole (a module-level
``pytest.skip`` or ``pytest.importorskip``), so a missing cluster, tool or part
never passes as green."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _reason(longrepr: object) -> str:
    return str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[Any]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not in_ci() or not (report.skipped or hasattr(report, "wasxfail")):
        return
    why = getattr(report, "wasxfail", "") or _reason(report.longrepr)
    kind = "expected to fail" if hasattr(report, "wasxfail") else "skipped"
    report.outcome = "failed"
    report.longrepr = f"{item.nodeid} {kind} under CI=true, where nothing may: {why}"
    if hasattr(report, "wasxfail"):
        del report.wasxfail


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    """A module that skips while it is collected has no test report to fail:
    its collection fails instead, which ends the run as a collection error."""
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if not in_ci() or not report.skipped:
        return
    why = _reason(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"{collector.nodeid} skipped under CI=true, where nothing may: {why}"
