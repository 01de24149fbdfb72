"""The Job page's routes: one job in full, kept current, and its pods' logs.

============================================  ====================================
``GET /jobs/{ns}/{kind}/{name}``              the Job page (HTML; its script is a file)
``GET /api/jobs/{ns}/{kind}/{name}``          the job's :func:`~.detail.job_detail`,
                                              as JSON
``GET /api/jobs/{ns}/{kind}/{name}/events``   the same, then again at each change of
                                              the job or its pods, as Server-Sent Events
``GET /api/jobs/{ns}/{kind}/{name}/logs``     one container's log as text (``pod``,
                                              ``container``, ``previous``, ``follow``,
                                              ``download``)
============================================  ====================================

The job and its pods are the informers' (the :class:`~.board.JobBoard`'s); the
API server is asked only for the job's Events (the SDK client's ``events``)
and for a log, of a pod of the job and a container of that pod, never for
anything else: no Secret is read (the operator's per-job ssh keys among them).
A followed log is the API server's own stream (``follow=true``), closed as
soon as the page stops reading it.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from t9k_operator import kube
from t9k_operator.console import layout
from t9k_operator.console.board import JobBoard
from t9k_operator.console.detail import job_detail
from t9k_operator.console.guard import session_of
from t9k_operator.console.rows import job_key
from t9k_operator.sdk import views
from t9k_operator.sdk.errors import T9kError

SETTLE_SECONDS = 0.3
"""A burst of changes (a pod's status written, then its job's) makes one update."""
REFRESH_SECONDS = 10.0
"""Without a change, the page is sent afresh this often (new Events, durations)."""

Obj = Mapping[str, Any]


class JobReads(Protocol):
    """What the Job page asks the API server (the SDK's client is one)."""

    kube: kube.KubeClient

    def events(self, job: Obj, pods: Sequence[Obj] = ()) -> list[dict[str, Any]]: ...


def _key(request: Request) -> str:
    p = request.path_params
    return job_key(p["namespace"], p["kind"], p["name"])


def _safe_name(text: str) -> str:
    """A file name's part of ``text``: letters, digits, ``.``, ``_`` and ``-``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:200] or "log"


def safe_json(data: Any) -> str:
    """``data`` as JSON with ``<``, ``>`` and ``&`` escaped too: no string from
    the cluster reads as markup, whatever a client takes the answer for."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class SafeJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return safe_json(content).encode()


def sse(name: str, data: Any) -> str:
    """One event in the SSE wire format, its data :func:`safe_json`."""
    return f"event: {name}\ndata: {safe_json(data)}\n\n"


class JobData:
    """A job's page data: the job and its pods from ``board``, its Events from
    ``reads`` (``None``: not read)."""

    def __init__(self, board: JobBoard, reads: JobReads | None) -> None:
        self.board, self.reads = board, reads

    async def detail(self, key: str) -> dict[str, Any] | None:
        found = self.board.job(key)
        if found is None:
            return None
        job, pods = found
        events, error = None, "not read"
        if self.reads is not None:
            try:
                events, error = await asyncio.to_thread(self.reads.events, job, pods), ""
            except T9kError as exc:
                error = str(exc)
        return job_detail(job, pods, events, views.now_utc(), events_error=error)


async def job_updates(
    data: JobData,
    key: str,
    refresh: float = REFRESH_SECONDS,
    settle: float = SETTLE_SECONDS,
) -> AsyncIterator[str]:
    """The job's page data as a ``job`` event, then again after each change of
    the job or its pods (a burst of changes within ``settle`` makes one) and
    every ``refresh`` seconds when it differs; ``gone`` when it is deleted;
    a keep-alive comment otherwise. Ends when the console closes."""
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    closed = threading.Event()

    def watcher(closing: bool) -> None:
        if closing:
            closed.set()
        with contextlib.suppress(RuntimeError):  # the loop closed: the stream is over
            loop.call_soon_threadsafe(woken.set)

    unwatch = data.board.watch(key, watcher)
    try:
        last: dict[str, Any] | None = {}
        while not closed.is_set():
            detail = await data.detail(key)
            if detail is None and last is not None:
                yield sse("gone", {"key": key})
            elif detail is not None and detail != last:
                yield sse("job", detail)
            else:
                yield ": keep-alive\n\n"
            last = detail
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), refresh)
            woken.clear()
            await asyncio.sleep(settle)
    finally:
        unwatch()


def job_routes(board: JobBoard, reads: JobReads | None) -> list[Route]:
    """The Job page's routes over ``board``'s jobs, asking ``reads`` for Events
    and logs (``None``: neither, the page says so)."""
    page = layout.page(
        "job",
        "Job",
        styles=["job", "actions", "chart"],
        scripts=["job", "chart"],
        nav=[("/", "Jobs")],
        confirm=("Confirm", "OK"),
    )
    data = JobData(board, reads)

    async def job_page(request: Request) -> Response:
        token = html.escape(session_of(request).csrf_token, quote=True)
        return HTMLResponse(page.replace("{{csrf_token}}", token))

    async def job(request: Request) -> Response:
        detail = await data.detail(_key(request))
        if detail is None:
            return SafeJSONResponse({"error": "no such job"}, status_code=404)
        return SafeJSONResponse(detail)

    async def job_events(request: Request) -> Response:
        key = _key(request)
        if board.job(key) is None:
            return SafeJSONResponse({"error": "no such job"}, status_code=404)
        return StreamingResponse(
            job_updates(data, key),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"},
        )

    return [
        Route("/jobs/{namespace}/{kind}/{name}", job_page, methods=["GET"]),
        Route("/api/jobs/{namespace}/{kind}/{name}", job, methods=["GET"]),
        Route("/api/jobs/{namespace}/{kind}/{name}/events", job_events, methods=["GET"]),
        Route("/api/jobs/{namespace}/{kind}/{name}/logs", log_route(board, reads), methods=["GET"]),
    ]


def log_route(board: JobBoard, reads: JobReads | None) -> Callable[[Request], Awaitable[Response]]:
    """The Job page's log of one of the job's containers, as text: once,
    followed, or as a download (``reads`` None: none is read)."""

    async def logs(request: Request) -> Response:
        chosen = _log_source(board, request)
        if isinstance(chosen, Response):
            return chosen
        pod, container = chosen
        q = request.query_params
        if reads is None:
            return PlainTextResponse("the console reads no logs", status_code=503)
        previous, follow = q.get("previous") == "1", q.get("follow") == "1"
        try:
            stream = await asyncio.to_thread(
                reads.kube.pod_logs,
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
                container=container,
                previous=previous,
                follow=follow and not previous,
            )
        except kube.ApiError as exc:
            return PlainTextResponse(f"no log: {exc}", status_code=exc.status or 502)
        headers = {"X-Accel-Buffering": "no"}
        if q.get("download") == "1":
            name = f"{pod['metadata']['name']}_{container}{'_previous' if previous else ''}.log"
            headers["Content-Disposition"] = f'attachment; filename="{_safe_name(name)}"'
        return StreamingResponse(
            log_lines(stream), media_type="text/plain; charset=utf-8", headers=headers
        )

    return logs


def _log_source(board: JobBoard, request: Request) -> tuple[Obj, str] | Response:
    """The job's pod and container a log request names (its first container
    when it names none), or why there is none: only the job's own are read."""
    found = board.job(_key(request))
    if found is None:
        return PlainTextResponse("no such job", status_code=404)
    job, pods = found
    q = request.query_params
    pod = next(
        (p for p in views.job_pods(job, pods) if p["metadata"]["name"] == q.get("pod")), None
    )
    if pod is None:
        return PlainTextResponse("no such pod of this job", status_code=404)
    spec = pod.get("spec") or {}
    names = [c.get("name") for k in ("initContainers", "containers") for c in spec.get(k) or []]
    container = q.get("container") or (names[0] if names else "")
    if container not in names:
        return PlainTextResponse("no such container in this pod", status_code=404)
    return pod, str(container)


async def log_lines(stream: kube.LogStream) -> AsyncIterator[bytes]:
    """The lines of a log stream as they come, read in a thread of their own;
    the stream is closed when the reader goes (the page left, the log switched)."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()

    def put(item: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed
            loop.call_soon_threadsafe(lines.put_nowait, item)

    def read() -> None:
        try:
            for line in stream:
                put(line)
        except kube.ApiError as exc:
            put(f"[t9k console: the log stream broke: {exc}]")
        finally:
            put(None)

    threading.Thread(target=read, daemon=True, name="console-log").start()
    try:
        while (line := await lines.get()) is not None:
            yield (line + "\n").encode()
    finally:
        stream.close()
