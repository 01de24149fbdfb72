"""Security headers on every response, a page with no inline script, and the
CSRF token every state-changing request must carry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from t9k_operator.console import app as console_app
from tests.unit.console.helpers import TOKEN, console, csrf_token_of, logged_in


def _csp_directives(value: str) -> dict[str, str]:
    return dict(d.strip().split(" ", 1) for d in value.split(";"))


@pytest.mark.parametrize(
    ("path", "status"),
    [("/", 401), ("/api/jobs", 401), (f"/?token={TOKEN}", 303), ("/?token=wrong", 403)],
)
def test_every_response_carries_the_security_headers(path: str, status: int) -> None:
    client, _ = console()
    response = client.get(path)
    assert response.status_code == status
    csp = response.headers["content-security-policy"]
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    directives = _csp_directives(csp)
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_the_pages_and_files_of_a_session_carry_them_too() -> None:
    client, _ = logged_in()
    for path, content_type in [
        ("/", "text/html"),
        ("/api/jobs", "application/json"),
        ("/static/jobs.js", "text/javascript"),
        ("/static/console.css", "text/css"),
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith(content_type), path
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"


def test_the_page_has_no_inline_script_style_or_handlers() -> None:
    client, _ = logged_in()
    page = client.get("/").text
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.S)
    assert scripts == [(' src="/static/jobs.js" defer', "")]
    assert "<style" not in page
    assert not re.search(r"\s(on\w+|style)=", page)


def test_the_script_writes_text_never_html() -> None:
    script = (Path(console_app.STATIC) / "jobs.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert "textContent" in script


def test_a_state_changing_request_without_the_csrf_token_is_403() -> None:
    client, _ = logged_in()
    assert client.post("/api/logout").status_code == 403
    assert client.post("/api/logout", headers={"X-CSRF-Token": "guess"}).status_code == 403
    # Refused: the session goes on.
    assert client.get("/api/jobs").status_code == 200


def test_the_csrf_check_guards_every_method_that_changes_something() -> None:
    client, _ = logged_in()
    token = csrf_token_of(client.get("/").text)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert client.request(method, "/api/jobs").status_code == 403, method
        # With the token the request passes the guard and meets the router.
        with_token = client.request(method, "/api/jobs", headers={"X-CSRF-Token": token})
        assert with_token.status_code == 405, method


def test_logout_with_the_csrf_token_ends_the_session() -> None:
    client, _ = logged_in()
    token = csrf_token_of(client.get("/").text)
    response = client.post("/api/logout", headers={"X-CSRF-Token": token})
    assert response.status_code == 204
    assert client.get("/api/jobs").status_code == 401
