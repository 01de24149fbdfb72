"""The in-cluster console's sign-in: a token the API server accepts opens the
person's own console, one it refuses gets the form again; CSRF on sign-in and
sign-out; Secure cookies; the token never in a response or a log record."""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from typing import Any

import pytest
import structlog
from starlette.testclient import TestClient

from t9k_operator import kube
from t9k_operator.console.board import JobBoard
from t9k_operator.console.guard import COOKIE, CSRF_HEADER
from t9k_operator.console.identity import Person, person_client, token_expiry
from t9k_operator.console.people import PersonSessions, Workspace
from t9k_operator.console.signin import SIGNIN_COOKIE, SignInConsole
from t9k_operator.console.watch import watch_namespaces
from t9k_operator.kinds.registry import KINDS
from t9k_operator.kube.transport import Transport
from t9k_operator.resources import PODS
from tests.unit.console.helpers import csrf_token_of

ALICE = "alice-token-0123456789-do-not-show"
STRANGER = "stranger-token-9876543210-do-not-show"
BASE = "https://console.example"


class FakeApi:
    """A client of a fake API server that knows one token, alice's, and
    refuses her every list and anything of namespace b."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.closed = False

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        assert (method, path) == ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews")
        if self.token != ALICE:
            raise kube.Unauthorized("Unauthorized", status=401)
        user = {"username": "system:serviceaccount:a:alice", "groups": ["system:authenticated"]}
        return {"status": {"userInfo": user}}

    def list(self, resource: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        raise kube.Forbidden(f"{resource.plural} is forbidden", status=403)

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        raise kube.Forbidden(
            f'{resource.plural} "{name}" is forbidden: User "system:serviceaccount:a:alice" '
            f'cannot get resource "{resource.plural}" in the namespace "{namespace}"',
            status=403,
        )

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def made() -> list[FakeApi]:
    return []


@pytest.fixture
def console(made: list[FakeApi]) -> tuple[TestClient, PersonSessions]:
    def connect(token: str) -> Any:
        made.append(FakeApi(token))
        return made[-1]

    people = PersonSessions()
    app = SignInConsole(people, connect, session_seconds=3600)
    return TestClient(app, base_url=BASE, follow_redirects=False), people


def _form(client: TestClient) -> str:
    page = client.get("/signin")
    assert page.status_code == 200
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match
    return match.group(1)


def _sign_in(client: TestClient, token: str, csrf: str | None = None) -> Any:
    csrf = _form(client) if csrf is None else csrf
    return client.post("/signin", data={"csrf": csrf, "token": token, "namespaces": ""})


def _everything(response: Any) -> str:
    return str(response.text) + json.dumps(dict(response.headers))


def test_the_form_sets_a_secure_strict_cookie_for_its_csrf_token(console: Any) -> None:
    client, _ = console
    page = client.get("/signin")
    cookie = page.headers["set-cookie"]
    assert cookie.startswith(f"{SIGNIN_COOKIE}=")
    for flag in ("HttpOnly", "Secure", "SameSite=strict", "Path=/signin"):
        assert flag.lower() in cookie.lower()
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "<script" not in page.text


def test_a_form_read_again_behind_an_open_one_keeps_it_valid(console: Any) -> None:
    """A browser reads /signin again behind the form it shows (its favicon's
    request, redirected there; a second tab): that form still signs in."""
    client, _ = console
    first = _form(client)
    favicon = client.get("/favicon.ico")
    assert (favicon.status_code, favicon.headers["location"]) == (303, "/signin")
    assert _form(client) == first
    assert _sign_in(client, ALICE, csrf=first).status_code == 303
    # A cookie this process could not have made is replaced, never echoed.
    other = TestClient(client.app, base_url=BASE, cookies={SIGNIN_COOKIE: "x\n<b>"})
    cookie = other.get("/signin").headers["set-cookie"]
    assert re.match(rf"{SIGNIN_COOKIE}=[A-Za-z0-9_-]{{43}};", cookie), cookie


def test_sign_in_without_or_with_a_wrong_csrf_token_is_refused(console: Any, made: Any) -> None:
    client, people = console
    assert _sign_in(client, ALICE, csrf="forged").status_code == 403
    other = TestClient(client.app, base_url=BASE)  # a form's token, not its cookie
    assert _sign_in(other, ALICE, csrf=_form(client)).status_code == 403
    assert client.post("/signin", data={"token": ALICE}).status_code == 403
    assert (len(people), made) == (0, [])


def test_a_token_the_api_server_accepts_opens_the_persons_console(console: Any) -> None:
    client, people = console
    with structlog.testing.capture_logs() as records:
        signed_in = _sign_in(client, ALICE)
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
        cookie = signed_in.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=")
        for flag in ("HttpOnly", "Secure", "SameSite=strict", "Max-Age=3600"):
            assert flag.lower() in cookie.lower()
        responses = [signed_in, client.get("/"), client.get("/api/jobs")]
    assert [r.status_code for r in responses[1:]] == [200, 200]
    assert (
        '<p id="whoami">Signed in as <span class="user">system:serviceaccount:a:alice</span></p>'
        in responses[1].text
    )
    assert responses[2].json()["rows"] == []
    assert len(people) == 1
    assert any(r.get("user") == "system:serviceaccount:a:alice" for r in records)
    for response in responses:
        assert ALICE not in _everything(response)
    assert ALICE not in repr(records)


def test_a_token_the_api_server_refuses_gets_the_form_again(
    console: Any, made: Any, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    client, people = console
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as records:
        refused = _sign_in(client, STRANGER)
    assert refused.status_code == 401
    assert "did not accept this token" in refused.text
    assert COOKIE not in refused.headers.get("set-cookie", "")
    assert STRANGER not in _everything(refused)
    assert STRANGER not in repr(records) + caplog.text + "".join(capsys.readouterr())
    assert len(people) == 0 and made[0].closed
    assert client.get("/api/jobs").status_code == 401


def test_without_a_session_pages_go_to_the_sign_in_form(console: Any) -> None:
    client, _ = console
    assert client.get("/").headers["location"] == "/signin"
    assert client.get("/jobs/a/PyTorchTrainingJob/x").headers["location"] == "/signin"
    assert client.get("/api/jobs").status_code == 401
    assert client.get("/?token=anything").status_code == 303
    assert client.get("/healthz").text == "ok"
    assert client.get("/static/console.css").status_code == 200


def test_a_job_the_api_server_refuses_gets_its_reason(console: Any) -> None:
    client, _ = console
    _sign_in(client, ALICE)
    refused = client.get("/api/jobs/b/PyTorchTrainingJob/mnist")
    assert refused.status_code == 403
    assert (
        'cannot get resource "pytorchtrainingjobs" in the namespace "b"' in refused.json()["error"]
    )
    page = client.get("/jobs/b/PyTorchTrainingJob/mnist")
    assert page.status_code == 403 and "forbidden" in page.text


def test_sign_out_needs_the_csrf_token_and_drops_the_token(console: Any, made: Any) -> None:
    client, people = console
    _sign_in(client, ALICE)
    assert client.post("/api/logout").status_code == 403
    csrf = csrf_token_of(client.get("/").text)
    assert client.post("/api/logout", headers={CSRF_HEADER: csrf}).status_code == 204
    assert len(people) == 0
    assert client.get("/api/jobs").status_code == 401
    deadline = time.monotonic() + 5
    while not made[-1].closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert made[-1].closed


def test_an_expired_session_ends_and_closes_its_client() -> None:
    now = [1000.0]
    people = PersonSessions(clock=lambda: now[0])
    api = FakeApi(ALICE)
    session = people.start(Workspace(Person("alice"), api), expires=1060.0)  # type: ignore[arg-type]
    assert people.get(session.id) is session
    now[0] = 1061.0
    assert people.get(session.id) is None
    deadline = time.monotonic() + 5
    while not api.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert api.closed and "alice" not in repr(people)


def _jwt(payload: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"e30.{body}.signature"


def test_a_session_lasts_no_longer_than_its_token() -> None:
    assert token_expiry(_jwt({"exp": 1700000000})) == 1700000000
    assert token_expiry("not-a-jwt") is None
    assert token_expiry(_jwt({"sub": "x"})) is None
    assert Person("system:serviceaccount:a:alice").home_namespace == "a"
    assert Person("oidc:alice@example.com").home_namespace is None


class TwoNamespaces:
    """Lists as a person who may read jobs and pods in a and b only."""

    def list(self, resource: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        if namespace not in ("a", "b"):
            raise kube.Forbidden("forbidden", status=403)
        return {"items": []}


def test_a_person_is_watched_in_each_namespace_they_may_list_once() -> None:
    fake = TwoNamespaces()
    board = JobBoard()
    watches = watch_namespaces(fake, board, ["a", "b", "c", "a"])  # type: ignore[arg-type]
    assert set(watches.kinds) == {k.crd.kind for k in KINDS}
    assert all(scopes == ["a", "b"] for scopes in watches.scopes.values())
    assert watches.pod_scopes == ["a", "b"]
    assert len(watches.informers) == 2 * (len(KINDS) + 1)
    again = watch_namespaces(fake, board, ["b", "a"], watches)  # type: ignore[arg-type]
    assert (again.informers, again.scopes, again.pod_scopes) == ([], {}, [])


def test_a_persons_client_carries_their_token_and_shows_it_nowhere() -> None:
    client = person_client("https://api.example:6443", None, ALICE)
    try:
        assert client.connection.authorization() == f"Bearer {ALICE}"
        assert ALICE not in repr(client.connection) + repr(client)
    finally:
        client.close()


def test_a_token_the_api_server_stops_accepting_ends_the_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise kube.Unauthorized("Unauthorized", status=401)

    monkeypatch.setattr(Transport, "_open", refused)
    client = person_client("https://api.example:6443", None, ALICE)
    ended: list[str] = []
    client.on_refused = lambda: ended.append("ended")
    for _ in range(2):
        with pytest.raises(kube.Unauthorized):
            client.get(PODS, "p", "a")
    assert ended == ["ended"]
    client.close()


def test_the_persons_name_is_shown_as_text_and_only_in_cluster() -> None:
    from t9k_operator.console.layout import whoami
    from tests.unit.console.helpers import logged_in

    # An OIDC user's name is the identity provider's text: never markup.
    shown = whoami('oidc:<img src=x onerror="alert(1)">@example.com')
    assert shown == (
        '<p id="whoami">Signed in as <span class="user">'
        "oidc:&lt;img src=x onerror=&quot;alert(1)&quot;&gt;@example.com</span></p>"
    )
    assert "a user the API server did not name" in whoami("")
    # t9k console's user is the kubeconfig's: no line, and no placeholder left.
    client, _ = logged_in()
    page = client.get("/").text
    assert "whoami" not in page and "{{" not in page
