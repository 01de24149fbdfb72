"""The in-cluster console's front door: sign in with your own token, then your
own console.

==========================  ====================================================
``GET /signin``             the sign-in form (a CSRF token tied to a cookie)
``POST /signin``            sign in: ``csrf``, ``token``, ``namespaces``
``GET /healthz``            ``ok`` (the Deployment's probes)
``GET /static/...``         the pages' script and style sheet
``/tb/<grant>/...``         an opened TensorBoard (:mod:`~.tensorboard_proxy`):
                            the grant in its path, not a cookie, says whose
anything else               the signed-in person's console (:mod:`~.app`), or a
                            redirect to ``/signin`` (401 for a non-page request)
==========================  ====================================================

Signing in: the token pasted is tried on the API server (:func:`~.identity.who_is`,
with that token); a token it refuses gets the form again, 401. One it accepts
opens the person's :class:`~.people.Workspace` and a session (its cookie
HttpOnly, Secure, SameSite=Strict, lasting at most the session's time and
never past the token's own expiry; ended as soon as the API server refuses
the token, revoked, with a 401). The token stays in the workspace's client,
server-side: it is never written to a page, a header or a log. The form's CSRF
token is an HMAC, under a key of this process, of a random value in a
SameSite=Strict cookie that only the form's page sets.

A request for a job the person's informers do not hold is first asked of the
API server with their token: refused, it gets the API server's refusal (403
and its message); allowed, the job's namespace is watched for them from then on.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import re
import secrets
import time
from collections.abc import Callable
from urllib.parse import parse_qs

import structlog
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from t9k_operator import kube
from t9k_operator.console import layout
from t9k_operator.console.app import STATIC, create_app
from t9k_operator.console.guard import COOKIE, SECURITY_HEADERS
from t9k_operator.console.identity import Person, PersonClient, seconds_left, who_is
from t9k_operator.console.people import PersonSessions, Workspace
from t9k_operator.console.rows import job_key
from t9k_operator.console.tensorboard_proxy import grant_routes
from t9k_operator.kinds.registry import KINDS

log = structlog.get_logger(__name__)

SIGNIN_COOKIE = "t9k_console_signin"
NONCE = re.compile(r"[A-Za-z0-9_-]{43}")
"""A nonce as :func:`secrets.token_urlsafe` (32 bytes) makes it."""
MAX_FORM_BYTES = 64 * 1024
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
RESOURCES = {k.crd.kind: k.resource for k in KINDS}

Connect = Callable[[str], kube.KubeClient]
"""A client of the API server whose requests carry the token given."""


class SignInConsole:
    """The in-cluster console (an ASGI app): sign-in, then each person's console.

    ``connect``: a client per token; ``session_seconds``: how long a session
    lasts at most; ``secure_cookie``: mark cookies Secure (off only in tests
    that speak plain http to a browser-less client)."""

    def __init__(
        self,
        people: PersonSessions,
        connect: Connect,
        *,
        session_seconds: float = 8 * 3600,
        secure_cookie: bool = True,
        prometheus_url: str | None = None,
    ) -> None:
        self.people, self.connect = people, connect
        self.prometheus_url = prometheus_url
        self.session_seconds = session_seconds
        self.secure_cookie = secure_cookie
        self._key = secrets.token_bytes(32)
        self._page = layout.page("signin", "Sign in", csrf_meta=False)
        self._router = Router(
            routes=[
                Route("/signin", self.signin_page, methods=["GET"]),
                Route("/signin", self.sign_in, methods=["POST"]),
                Route("/healthz", _healthz, methods=["GET"]),
                Mount("/static", StaticFiles(directory=STATIC), name="static"),
                *grant_routes(),
            ],
            default=self.person,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await self._router(scope, receive, _with_headers(send))

    # -- signing in -----------------------------------------------------------------

    def _csrf_for(self, nonce: str) -> str:
        return hmac.new(self._key, nonce.encode(), hashlib.sha256).hexdigest()

    def _form(
        self, message: str, status: int = 200, namespaces: str = "", nonce: str = ""
    ) -> Response:
        """The form, its CSRF token that of ``nonce`` when it is one this
        process could have made (the browser's cookie), else of a new one."""
        if not NONCE.fullmatch(nonce):
            nonce = secrets.token_urlsafe(32)
        page = (
            self._page.replace("{{csrf_token}}", self._csrf_for(nonce))
            .replace("{{message}}", html.escape(message))
            .replace("{{namespaces}}", html.escape(namespaces, quote=True))
        )
        response = HTMLResponse(page, status_code=status)
        response.set_cookie(
            SIGNIN_COOKIE,
            nonce,
            path="/signin",
            httponly=True,
            samesite="strict",
            secure=self.secure_cookie,
        )
        return response

    async def signin_page(self, request: Request) -> Response:
        # The browser's nonce is kept: a form already open stays valid when
        # /signin is read again behind it (the favicon's request, redirected
        # here, or a second tab).
        nonce = request.cookies.get(SIGNIN_COOKIE, "")
        return self._form("Paste your token to sign in.", nonce=nonce)

    async def sign_in(self, request: Request) -> Response:
        fields = await _form_fields(request)
        if fields is None:
            return PlainTextResponse("Not a sign-in form.", status_code=400)
        nonce = request.cookies.get(SIGNIN_COOKIE, "")
        given = fields.get("csrf", "")
        if not nonce or not hmac.compare_digest(given.encode(), self._csrf_for(nonce).encode()):
            log.warning("console sign-in refused: no CSRF token")
            return PlainTextResponse("Missing or wrong CSRF token: sign in again.", 403)
        token = fields.get("token", "").strip()
        wanted = fields.get("namespaces", "")
        namespaces = [n for n in re.split(r"[\s,]+", wanted) if n]
        if not token or any(not NAMESPACE.match(n) for n in namespaces):
            return self._form("Paste a token; namespaces are DNS labels.", 400, wanted)
        return await self._open(token, namespaces, wanted)

    async def _open(self, token: str, namespaces: list[str], wanted: str) -> Response:
        client = self.connect(token)
        try:
            person = await asyncio.to_thread(who_is, client)
        except kube.Unauthorized:
            client.close()
            log.warning("console sign-in refused: the API server did not accept the token")
            return self._form("The API server did not accept this token.", 401, wanted)
        except kube.ApiError as exc:
            client.close()
            log.warning("console sign-in failed", error=str(exc))
            return self._form(f"The API server could not be asked: {exc}", 502, wanted)
        left = seconds_left(token)
        seconds = self.session_seconds if left is None else min(left, self.session_seconds)
        workspace = self._workspace(person, client)
        home = [person.home_namespace] if person.home_namespace else []
        try:
            await asyncio.to_thread(workspace.watch, [*home, *namespaces] or ["default"])
        except kube.ApiError as exc:
            workspace.close()
            log.warning("console sign-in failed", user=person.username, error=str(exc))
            return self._form(f"Your jobs could not be listed: {exc}", 502, wanted)
        session = self.people.start(workspace, time.time() + seconds)
        if isinstance(client, PersonClient):
            client.on_refused = lambda: self.people.end(session)
        log.info("console sign-in", user=person.username, kinds=len(workspace.kinds))
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            COOKIE,
            session.id,
            max_age=max(int(seconds), 1),
            path="/",
            httponly=True,
            samesite="strict",
            secure=self.secure_cookie,
        )
        response.delete_cookie(SIGNIN_COOKIE, path="/signin", httponly=True, samesite="strict")
        return response

    def _workspace(self, person: Person, client: kube.KubeClient) -> Workspace:
        workspace = Workspace(person, client)
        workspace.app = create_app(
            workspace.board,
            self.people,
            workspace.kinds,
            secure_cookie=self.secure_cookie,
            reads=workspace.reads,
            prometheus_url=self.prometheus_url,
            signed_in_as=person.username,
        )
        return workspace

    # -- a signed-in person's console -------------------------------------------------

    async def person(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        found = self.people.workspace(request.cookies.get(COOKIE))
        if found is None:
            if request.method == "GET" and not request.url.path.startswith("/api/"):
                response: Response = RedirectResponse("/signin", status_code=303)
            else:
                response = PlainTextResponse("Not signed in: open /signin.", status_code=401)
            await response(scope, receive, send)
            return
        _, workspace = found
        refusal = await _job_refusal(request.url.path, workspace)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        assert workspace.app is not None
        await workspace.app(scope, receive, send)


async def _job_refusal(path: str, workspace: Workspace) -> Response | None:
    """For a job the person's board lacks: the API server's refusal, if it
    refuses them the job; else ``None`` (its namespace now watched, if the
    job is there)."""
    parts = path.strip("/").split("/")
    api = parts[:2] == ["api", "jobs"]
    where = parts[2:5] if api else parts[1:4] if parts[:1] == ["jobs"] else []
    if len(where) != 3 or where[1] not in RESOURCES:
        return None
    namespace, kind, name = where
    if workspace.board.job(job_key(namespace, kind, name)) is not None:
        return None
    try:
        await asyncio.to_thread(workspace.kube.get, RESOURCES[kind], name, namespace)
    except (kube.Forbidden, kube.Unauthorized) as exc:
        status = exc.status or 403
        if api:
            return JSONResponse({"error": exc.message}, status_code=status)
        return PlainTextResponse(exc.message, status_code=status)
    except kube.ApiError:
        return None  # not found, or not asked: the console's own answer
    await asyncio.to_thread(workspace.watch, [namespace])
    return None


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def _form_fields(request: Request) -> dict[str, str] | None:
    """A url-encoded form's fields (the first value of each), or ``None``."""
    if request.headers.get("content-type", "").split(";")[0] != (
        "application/x-www-form-urlencoded"
    ):
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    try:
        parsed = parse_qs(body.decode(), max_num_fields=10)
    except (UnicodeDecodeError, ValueError):
        return None
    return {k: v[0] for k, v in parsed.items()}


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k.lower(), v) for k, v in message.get("headers", [])]
            have = {k for k, _ in headers}
            for name, value in SECURITY_HEADERS.items():
                if name.lower().encode() not in have:
                    headers.append((name.lower().encode(), value.encode()))
            message = {**message, "headers": headers}
        await send(message)

    return sending
