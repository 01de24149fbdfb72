"""Neither the one-time token nor a session's id or CSRF token is ever logged:
not on the exchange, not on a refusal, not on any request."""

from __future__ import annotations

import logging

import pytest
import structlog

from t9k_operator.console.guard import COOKIE
from tests.unit.console.helpers import TOKEN, console, csrf_token_of


def test_no_secret_reaches_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs:
        client, _ = console()
        client.get(f"/?token={TOKEN}")
        session_id = client.cookies[COOKIE]
        csrf = csrf_token_of(client.get("/").text)
        client.get("/api/jobs")
        client.get(f"/?token={TOKEN}")  # spent: refused
        client.post("/api/logout")  # no CSRF token: refused
        client.post("/api/logout", headers={"X-CSRF-Token": csrf})
    events = [entry["event"] for entry in logs]
    assert "console session started" in events
    assert "console token refused: spent or wrong" in events
    assert "console request refused: no CSRF token" in events
    # The console's records; the test's HTTP client (httpx2) logs the URLs it
    # asked for, as a browser's history would hold them: not the console's.
    server = [r.getMessage() for r in caplog.records if not r.name.startswith("httpx")]
    logged = repr(logs) + "\n".join(server)
    for secret in (TOKEN, session_id, csrf):
        assert len(secret) >= 32
        assert secret not in logged
