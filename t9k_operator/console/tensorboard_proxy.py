"""A job's TensorBoard through the console, in a page that can read nothing of it.

``GET /tensorboard/{ns}/{kind}/{name}/`` (the Job page's "Open TensorBoard"
link, in a tab of its own) needs the console's session: for a job of the
board that has a TensorBoard it mints a grant (:mod:`~.board_grants`) for
that session's client and that job's TensorBoard only, and redirects to
``/tb/<grant>/``. Under that path each request goes to the API server's
service proxy of the job's own TensorBoard,
``/api/v1/namespaces/<ns>/services/<name>-tensorboard:6006/proxy/<path>``,
with the person's own credentials (RBAC decides: ``get`` on
``services/proxy``, and ``create`` for TensorBoard's POSTs). The Service is
named from the job when the grant is minted, never from the request; the
path below it is checked segment by segment (no ``.`` or ``..``, no
backslash) and quoted again, so no request reaches anything but that
TensorBoard. TensorBoard's own page (``/`` and ``/index.html``), which the
service proxy cannot carry, comes through a port-forward to the
TensorBoard's pod instead (:mod:`~.tensorboard_index`).

TensorBoard serves what the job wrote, from an image the job's author may
have chosen: it is untrusted. Its pages come with a Content-Security-Policy
of their own (:data:`POLICY`) ending in ``sandbox`` without
``allow-same-origin``: the page runs in an opaque origin, so even a hostile
TensorBoard reads nothing of the console (not its pages, its cookie, nor its
CSRF token), and its requests carry no cookie. The grant in their path lets
them through instead, for that TensorBoard alone. Being cross-origin (``Origin:
null``), they get ``Access-Control-Allow-Origin: null`` (never credentials)
on the grant's paths only, and a preflight answer for TensorBoard's own
headers. Methods: GET, and POST with TensorBoard's form body to its data
routes (``data/...``, as its scalars and time-series dashboards ask); else
405. An answer keeps only a few of TensorBoard's headers (its type,
validators); never a cookie. Its HTML pages get the console's in-memory
storage (:mod:`~.tensorboard_page`), which the sandbox denies them.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from t9k_operator import kube
from t9k_operator.api.tensorboard import SERVICE_SUFFIX
from t9k_operator.console.board import JobBoard
from t9k_operator.console.board_grants import GRANTS, PREFIX, Grant, Grants
from t9k_operator.console.guard import session_of
from t9k_operator.console.job_page import JobReads
from t9k_operator.console.rows import job_key
from t9k_operator.console.tensorboard_index import INDEX_PATHS, fetch_index
from t9k_operator.console.tensorboard_page import POLICY, page_routes, with_storage
from t9k_operator.sdk.forward import TENSORBOARD_PORT

KEPT_HEADERS = ("content-type", "etag", "last-modified", "content-language")
"""TensorBoard's headers the console passes on; the console adds its own."""
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
POST_FORMS = ("multipart/form-data", "application/x-www-form-urlencoded")
"""The bodies TensorBoard's data routes take (its frontend posts FormData)."""
PASSED_HEADERS = ("x-xsrf-protected",)
"""Request headers passed on: TensorBoard refuses a POST without this one."""
MAX_BODY = 1024 * 1024
EXPIRED = "This TensorBoard link has expired: open it again from the job's page."
CORS = {
    "Access-Control-Allow-Origin": "null",
    "Vary": "Origin",
}
PREFLIGHT = {
    **CORS,
    "Access-Control-Allow-Methods": "GET, POST",
    # TensorBoard's own request headers (its feature flags go unread).
    "Access-Control-Allow-Headers": "Content-Type, X-XSRF-Protected, X-TensorBoard-Feature-Flags",
    "Access-Control-Max-Age": "600",
}


def proxy_path(namespace: str, job_name: str, path: str) -> str | None:
    """The API server's path to ``path`` of the job's TensorBoard; ``None`` for
    a path that is not plainly below it."""
    below = quoted_below(path)
    if below is None:
        return None
    return service_base(namespace, job_name) + below


def service_base(namespace: str, job_name: str) -> str:
    """The API server's path of the job's TensorBoard's Service proxy."""
    service = urllib.parse.quote(f"{job_name}{SERVICE_SUFFIX}", safe="")
    ns = urllib.parse.quote(namespace, safe="")
    return f"/api/v1/namespaces/{ns}/services/{service}:{TENSORBOARD_PORT}/proxy/"


def quoted_below(path: str) -> str | None:
    """``path`` quoted for below the proxy's path; ``None`` if it is not
    plainly below it."""
    segments = path.split("/") if path else []
    if any(s in (".", "..") or "\\" in s or "\x00" in s for s in segments):
        return None
    return "/".join(urllib.parse.quote(s, safe="-._~!$&'()*+,;=:@") for s in segments)


def kept(headers: Mapping[str, str]) -> dict[str, str]:
    """The answer's headers the console passes on, its policy and CORS."""
    out = {k: str(headers[k]) for k in KEPT_HEADERS if headers.get(k)}
    out["Content-Security-Policy"] = POLICY
    return {**out, **CORS}


def text(message: str, status: int, **headers: str) -> Response:
    """A refusal of the grant's paths, readable by the board's page."""
    return PlainTextResponse(message, status_code=status, headers={**CORS, **headers})


def tensorboard_routes(
    board: JobBoard, reads: JobReads | None, grants: Grants = GRANTS
) -> list[Route]:
    """The link that opens the TensorBoard of each of ``board``'s jobs that
    has one, and the grants' paths (:func:`grant_routes`)."""

    async def open_board(request: Request) -> Response:
        if request.method != "GET":
            return PlainTextResponse("GET only", status_code=405, headers={"Allow": "GET"})
        p = request.path_params
        found = board.job(job_key(p["namespace"], p["kind"], p["name"]))
        if found is None:
            return PlainTextResponse("no such job", status_code=404)
        job = found[0]
        if not (job.get("spec") or {}).get("tensorboardSpec"):
            return PlainTextResponse("this job has no TensorBoard", status_code=404)
        if reads is None:
            return PlainTextResponse("the console reaches no TensorBoard", status_code=503)
        below = quoted_below(p["path"])
        if below is None:
            return PlainTextResponse("not a path of the TensorBoard", status_code=400)
        session, sessions = session_of(request), request.scope["state"]["sessions"]
        name = job["metadata"]["name"]
        alive = lambda: sessions.get(session.id) is not None  # noqa: E731
        pod = (p["namespace"], f"{name}{SERVICE_SUFFIX}")
        token = grants.mint(reads.kube, service_base(p["namespace"], name), alive, pod)
        return RedirectResponse(f"{PREFIX}{token}/{below}", status_code=303)

    return [
        Route(
            "/tensorboard/{namespace}/{kind}/{name}/{path:path}", open_board, methods=ALL_METHODS
        ),
        *grant_routes(grants),
    ]


def grant_routes(grants: Grants = GRANTS) -> list[Route]:
    """``/tb/<grant>/<path>``: the granted TensorBoard's ``path``, for its page."""

    async def granted(request: Request) -> Response:
        grant = grants.get(request.path_params["grant"])
        if grant is None:
            return text(EXPIRED, 404)
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=PREFLIGHT)
        below = quoted_below(request.path_params["path"])
        if below is None:
            return text("not a path of the TensorBoard", 400)
        query = ""
        if request.url.query:
            query = "?" + urllib.parse.urlencode(request.query_params.multi_items())
        path = grant.base + below + query
        if request.method == "GET" and below in INDEX_PATHS:
            namespace, pod = grant.pod
            return await answered(fetch_index, grant.kube, namespace, pod, below + query)
        if request.method == "GET":
            return await answered(grant.kube.get_raw, path)
        if request.method == "POST" and below.startswith("data/"):
            return await posted(request, grant, path)
        return text("GET, or POST to TensorBoard's data/", 405, Allow="GET, POST")

    return [*page_routes(), Route(PREFIX + "{grant}/{path:path}", granted, methods=ALL_METHODS)]


async def posted(request: Request, grant: Grant, path: str) -> Response:
    """TensorBoard's POST of a form to one of its data routes, passed on."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() not in POST_FORMS:
        return text("TensorBoard's data routes take a form", 415)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return text("too large a body", 413)
    headers = {k: request.headers[k] for k in PASSED_HEADERS if k in request.headers}
    return await answered(grant.kube.post_raw, path, body, content_type, headers)


async def answered(call: Callable[..., Any], *args: Any) -> Response:
    """TensorBoard's answer that ``call(*args)`` reads, or the API server's
    refusal as text."""
    try:
        answer = await asyncio.to_thread(call, *args)
    except kube.ApiError as exc:
        status = exc.status if exc.status and 400 <= exc.status < 600 else 502
        return text(f"TensorBoard: {exc}", status)
    headers = kept(answer.headers)
    body = with_storage(answer.data, headers.get("content-type", ""))
    return Response(body, status_code=answer.status, headers=headers)
