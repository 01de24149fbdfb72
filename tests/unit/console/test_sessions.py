"""The one-time token: exchanged once for a session cookie, never twice; no
session, no access."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from t9k_operator.console.guard import COOKIE
from t9k_operator.console.sessions import Sessions
from tests.unit.console.helpers import TOKEN, console, logged_in


def test_the_token_is_exchanged_for_a_session_cookie_and_a_url_without_it() -> None:
    client, sessions = console()
    response = client.get(f"/?token={TOKEN}")
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Secure" not in cookie  # plain http on loopback
    assert TOKEN not in cookie
    assert sessions.spent
    page = client.get("/")
    assert page.status_code == 200
    assert "<table" in page.text


def test_other_query_parameters_survive_the_redirect() -> None:
    client, _ = console()
    response = client.get(f"/?kind=MSJob&token={TOKEN}")
    assert response.headers["location"] == "/?kind=MSJob"


def test_the_token_works_once_only() -> None:
    first, _ = console()
    assert first.get(f"/?token={TOKEN}").status_code == 303
    # Another browser (no cookie) with the same URL gets nothing.
    second = TestClient(first.app, base_url="http://127.0.0.1:8890", follow_redirects=False)
    again = second.get(f"/?token={TOKEN}")
    assert again.status_code == 403
    assert "set-cookie" not in again.headers
    assert second.get("/api/jobs").status_code == 401
    # The first browser's session still works.
    assert first.get("/api/jobs").status_code == 200


def test_a_wrong_token_is_refused_and_does_not_spend_the_right_one() -> None:
    client, sessions = console()
    assert client.get("/?token=guess").status_code == 403
    assert client.get("/?token=").status_code == 403
    assert not sessions.spent
    assert client.get(f"/?token={TOKEN}").status_code == 303


@pytest.mark.parametrize("path", ["/", "/api/jobs", "/api/jobs/events", "/static/jobs.js"])
def test_without_a_session_every_page_is_401(path: str) -> None:
    client, _ = console()
    response = client.get(path)
    assert response.status_code == 401
    assert "t9k console" in response.text


def test_a_made_up_session_cookie_is_401() -> None:
    client, _ = console()
    client.cookies.set(COOKIE, "made-up")
    assert client.get("/api/jobs").status_code == 401


def test_over_https_the_cookie_is_secure() -> None:
    client, _ = console(base_url="https://127.0.0.1:8890")
    response = client.get(f"/?token={TOKEN}")
    assert response.status_code == 303
    assert "Secure" in response.headers["set-cookie"]


def test_a_foreign_host_header_is_refused() -> None:
    # DNS rebinding: a page of another site that resolves to 127.0.0.1.
    client, _ = logged_in()
    assert client.get("/api/jobs", headers={"host": "evil.example"}).status_code == 400


def test_sessions_keep_their_secrets_out_of_repr() -> None:
    sessions = Sessions(TOKEN)
    session = sessions.exchange(TOKEN)
    assert session is not None
    assert sessions.exchange(TOKEN) is None
    for text in (repr(sessions), repr(session)):
        assert TOKEN not in text and session.id not in text and session.csrf_token not in text
    assert sessions.get(session.id) is session
    sessions.end(session)
    assert sessions.get(session.id) is None
