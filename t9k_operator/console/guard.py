"""The gate every request to the console passes (pure ASGI middleware).

In order:

1. Every response gets the security headers (:data:`SECURITY_HEADERS`): a
   Content-Security-Policy that allows only the console's own files (no
   inline script or style, no eval, no framing), ``nosniff``, no referrer,
   no caching.
2. A request carrying ``?token=`` exchanges it (:class:`~.sessions.Sessions`):
   the first time, for a session cookie (HttpOnly, SameSite=Strict, Secure
   when served over https) and a redirect to the same URL without the
   token; any later time, or with a wrong token, 403.
3. A request without a valid session cookie gets 401.
4. A request that may change something (any method but GET, HEAD and
   OPTIONS) must carry the session's CSRF token in :data:`CSRF_HEADER`; else 403.

Requests under :data:`~.board_grants.PREFIX` (an opened TensorBoard's, from
a sandboxed page that sends no cookie) skip 2-4: the grant in their path is
their authority, checked by :mod:`~.tensorboard_proxy`.

The app behind it finds the session in ``scope["state"]["session"]``, and
the sessions in ``scope["state"]["sessions"]``. Neither
the token nor a session id is ever logged: the guard logs that a session
started or was refused, nothing of the request's URL.
"""

from __future__ import annotations

import structlog
from starlette.datastructures import URL, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from t9k_operator.console.board_grants import PREFIX as GRANT_PREFIX
from t9k_operator.console.sessions import Session, Sessions

COOKIE = "t9k_console_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
}

log = structlog.get_logger(__name__)


class Guard:
    """Security headers, token exchange, session and CSRF checks, before ``app``.

    ``secure_cookie``: always mark the session cookie Secure (behind a proxy
    that ends TLS, in a cluster); it is marked Secure anyway on an https request.
    """

    def __init__(self, app: ASGIApp, sessions: Sessions, *, secure_cookie: bool = False) -> None:
        self.app = app
        self.sessions = sessions
        self.secure_cookie = secure_cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(send)
        request = Request(scope, receive)
        response = self._refusal_or_exchange(request)
        if response is not None:
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal_or_exchange(self, request: Request) -> Response | None:
        """The response the guard gives itself, or ``None`` to pass the request on."""
        if request.url.path.startswith(GRANT_PREFIX):
            return None
        token = request.query_params.get("token")
        if token is not None:
            return self._exchange(request, token)
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            return PlainTextResponse(
                "No console session: open the URL `t9k console` printed.", status_code=401
            )
        if request.method not in SAFE_METHODS and not session.csrf_ok(
            request.headers.get(CSRF_HEADER)
        ):
            log.warning("console request refused: no CSRF token", method=request.method)
            return PlainTextResponse("Missing or wrong CSRF token.", status_code=403)
        state = request.scope.setdefault("state", {})
        state["session"], state["sessions"] = session, self.sessions
        return None

    def _exchange(self, request: Request, token: str) -> Response:
        session = self.sessions.exchange(token)
        if session is None:
            log.warning("console token refused: spent or wrong")
            return PlainTextResponse(
                "This console link was used already or is wrong: "
                "run `t9k console` again for a new one.",
                status_code=403,
            )
        log.info("console session started")
        response = RedirectResponse(_without_token(request.url), status_code=303)
        self.set_cookie(response, request, session)
        return response

    def set_cookie(self, response: Response, request: Request, session: Session) -> None:
        response.set_cookie(
            COOKIE,
            session.id,
            path="/",
            httponly=True,
            samesite="strict",
            secure=self.secure_cookie or request.url.scheme == "https",
        )


def _without_token(url: URL) -> str:
    """The path and query of ``url`` without its ``token`` parameter."""
    rest = url.remove_query_params("token")
    return rest.path + (f"?{rest.query}" if rest.query else "")


def session_of(request: Request) -> Session:
    """The session the guard let this request in with."""
    session: Session = request.scope["state"]["session"]
    return session


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS.items():
                headers.setdefault(name, value)
        await send(message)

    return sending
