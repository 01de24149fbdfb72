"""The console's Starlette application: its routes, behind the :class:`~.guard.Guard`.

==========================  ====================================================
``GET /``                   the Jobs page (HTML; its script and style are files)
``GET /api/jobs``           the rows as JSON: ``{"headers", "kinds", "rows"}``
``GET /api/jobs/events``    the same, then each change, as Server-Sent Events
``POST /api/logout``        ends the session (needs the CSRF token, as every
                            request that changes something)
``GET /static/...``         the page's script and style sheet
``GET /jobs/{ns}/{k}/{n}``  a job's page; its data, updates and logs under
                            ``/api/jobs/{ns}/{k}/{n}`` (:mod:`~.job_page`)
``POST /api/jobs/.../...``  pause, resume, delete a job (:mod:`~.actions`)
``GET /new``                a new job from YAML or a form (:mod:`~.creating`)
``GET /api/jobs/.../charts`` a job's steps, GPUs, idle flag (:mod:`~.charts`)
``GET /tensorboard/...``    a job's TensorBoard, proxied (:mod:`~.tensorboard_proxy`)
``GET /gpus``               nodes' GPUs and the jobs holding them (:mod:`~.gpus`)
==========================  ====================================================

The page gets its CSRF token in a ``<meta>`` element of its HTML, escaped;
everything from the cluster reaches it as JSON data, which its script writes
with ``textContent`` only.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from t9k_operator.console import assets, layout
from t9k_operator.console.actions import JobWrites, action_routes
from t9k_operator.console.board import JobBoard
from t9k_operator.console.charts import chart_routes
from t9k_operator.console.events import snapshot, stream
from t9k_operator.console.gpus import gpu_routes
from t9k_operator.console.guard import COOKIE, Guard, session_of
from t9k_operator.console.job_page import JobReads, job_routes
from t9k_operator.console.new_page import new_routes
from t9k_operator.console.sessions import Sessions
from t9k_operator.console.tensorboard_proxy import tensorboard_routes

STATIC = assets.STATIC


def create_app(
    board: JobBoard,
    sessions: Sessions,
    kinds: Sequence[str],
    *,
    secure_cookie: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    reads: JobReads | None = None,
    writes: JobWrites | None = None,
    prometheus_url: str | None = None,
    signed_in_as: str | None = None,
) -> Starlette:
    """The console over ``board``'s rows; ``kinds``: the job kinds watched (the
    kind filter's choices); ``allowed_hosts``: the Host headers served (all
    when ``None``), against DNS rebinding of a console on loopback;
    ``writes``: the client of its actions (``reads`` when that is the SDK's);
    ``prometheus_url``: the Prometheus of the charts (``--prometheus-url``);
    ``signed_in_as``: the in-cluster person's name, beside Log out."""
    whoami = layout.whoami(signed_in_as)
    page = layout.page("jobs", "Jobs", scripts=["jobs"]).replace("{{whoami}}", whoami)
    if writes is None and isinstance(reads, JobWrites):
        writes = reads

    async def jobs_page(request: Request) -> Response:
        token = html.escape(session_of(request).csrf_token, quote=True)
        return HTMLResponse(page.replace("{{csrf_token}}", token))

    async def jobs(request: Request) -> Response:
        return JSONResponse(snapshot(board.rows(), kinds))

    async def job_events(request: Request) -> Response:
        return StreamingResponse(
            stream(board, kinds),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"},
        )

    async def logout(request: Request) -> Response:
        sessions.end(session_of(request))
        response = Response(status_code=204)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    middleware = [Middleware(Guard, sessions=sessions, secure_cookie=secure_cookie)]
    if allowed_hosts is not None:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    routes = [
        Route("/", jobs_page, methods=["GET"]),
        Route("/api/jobs", jobs, methods=["GET"]),
        Route("/api/jobs/events", job_events, methods=["GET"]),
        Route("/api/logout", logout, methods=["POST"]),
        *job_routes(board, reads),
        *chart_routes(board, prometheus_url),
        *tensorboard_routes(board, reads),
        *gpu_routes(board, reads),
        *action_routes(writes, kinds),
        *new_routes(writes, kinds),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes, middleware=middleware)
