"""The GPUs page: the nodes with GPUs, allocatable and allocated, and the jobs
holding them: what ``t9k top nodes`` and ``t9k top -A jobs`` print, computed by
the same code (:func:`~t9k_operator.sdk.views.node_usage`,
:func:`~t9k_operator.sdk.views.job_usage` and the CLI's cells in
:mod:`~t9k_operator.cli.render`), kept live.

====================  ===========================================================
``GET /gpus``         the page (HTML; its script is a file)
``GET /api/gpus``     :func:`gpu_view` as JSON
``GET /api/gpus/...`` ``/events``: the same, then again after each change of a
                      node, a job or a pod that moves it, as Server-Sent Events
====================  ===========================================================

The jobs and pods are the board's (the informers' of the Jobs page), the
nodes a Node informer's (:mod:`~.nodes`). Unlike ``t9k top nodes``, which
reads every pod, ALLOCATED counts the pods of the jobs the console watches
(the operator's jobs): a GPU held by another pod is not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from t9k_operator.cli import top
from t9k_operator.console import layout
from t9k_operator.console.board import Change, JobBoard
from t9k_operator.console.events import KEEPALIVE_SECONDS, event
from t9k_operator.console.guard import session_of
from t9k_operator.console.nodes import NodeWatch
from t9k_operator.console.rows import job_key
from t9k_operator.kinds.gpus import GPU
from t9k_operator.sdk import views

Obj = Mapping[str, Any]
SETTLE_SECONDS = 0.5
"""Changes within this long make one update (a burst of pods scheduled)."""


def gpu_view(
    jobs: Sequence[tuple[Obj, Sequence[Obj]]], nodes: Sequence[Obj], reason: str = ""
) -> dict[str, Any]:
    """The page's data: ``nodes`` (those with GPUs allocatable or allocated,
    ``t9k top nodes``' cells, and each holding job's key and text) and ``jobs``
    (``t9k top -A jobs``' cells with NODES, the key of each job's page);
    ``reason``: why the nodes are unknown."""
    now = views.now_utc()
    summaries = [s for job, pods in jobs if pods for s in views.job_usage([job], list(pods), now)]
    summaries.sort(key=lambda r: (-r.gpus_allocated, r.namespace, r.name))
    kinds: dict[str, list[str]] = {}
    for s in summaries:
        kinds.setdefault(f"{s.namespace}/{s.name}", []).append(s.kind)
    pods = [p for _, job_pods in jobs for p in job_pods]
    usage = [u for u in views.node_usage(nodes, pods) if u.allocatable or u.allocated]
    node_rows = [
        {
            "key": u.node,
            "cells": top.top_node_cells(u),
            "jobs": [
                {"text": held, "key": _job_page_key(held, kind)}
                for held in u.jobs
                for kind in kinds.get(held, [""])
            ],
        }
        for u in usage
    ]
    job_rows = [
        {
            "key": job_key(s.namespace, s.kind, s.name),
            "cells": [*top.top_job_cells(s, True), ",".join(s.nodes) or "<none>"],
        }
        for s in summaries
    ]
    return {
        "nodes": {"headers": list(top.TOP_NODES_HEADERS), "rows": node_rows},
        "jobs": {"headers": [*top.top_job_headers(True), "NODES"], "rows": job_rows},
        "without_gpus": len(nodes) - sum(1 for n in nodes if _gpus_of(n)),
        "reason": reason,
    }


def _job_page_key(held: str, kind: str) -> str:
    """The key of the Job page of ``held`` (``namespace/name``) of ``kind``;
    ``""`` for a job the board does not have."""
    namespace, _, name = held.partition("/")
    return job_key(namespace, kind, name) if kind else ""


def _gpus_of(node: Obj) -> bool:
    return bool(((node.get("status") or {}).get("allocatable") or {}).get(GPU))


async def _view(board: JobBoard, watch: NodeWatch) -> dict[str, Any]:
    def compute() -> dict[str, Any]:
        watch.start()
        return gpu_view(board.objects(), watch.nodes(), watch.reason)

    return await asyncio.to_thread(compute)


async def gpu_updates(
    board: JobBoard, watch: NodeWatch, keepalive: float = KEEPALIVE_SECONDS
) -> AsyncIterator[str]:
    """The view, then the view again after each burst of changes that moves it,
    until the board closes or the client goes (the caller cancels)."""
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    closed = False

    def wake(change: Change | None = None) -> None:
        nonlocal closed
        closed = closed or (change is not None and change.type == "close")
        with contextlib.suppress(RuntimeError):  # the loop closed: the stream is over
            loop.call_soon_threadsafe(woken.set)

    unlisten_board = board.listen(wake)
    unlisten_nodes = watch.listen(wake)
    try:
        last = await _view(board, watch)
        yield event("snapshot", last)
        while True:
            try:
                await asyncio.wait_for(woken.wait(), keepalive)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if closed:
                return
            await asyncio.sleep(SETTLE_SECONDS)
            woken.clear()
            view = await _view(board, watch)
            if view != last:
                last = view
                yield event("snapshot", view)
    finally:
        unlisten_board()
        unlisten_nodes()


def gpu_routes(board: JobBoard, reads: Any) -> list[Route]:
    """The GPUs page's routes over ``board``; nodes are listed and watched with
    ``reads.kube`` (the SDK's client), from the page's first request."""
    page = layout.page("gpus", "GPUs", scripts=["gpus"], nav=[("/", "Jobs"), ("/new", "New job")])
    watch = NodeWatch(getattr(reads, "kube", None), board)

    async def gpus_page(request: Request) -> Response:
        token = html.escape(session_of(request).csrf_token, quote=True)
        return HTMLResponse(page.replace("{{csrf_token}}", token))

    async def gpus(request: Request) -> Response:
        return JSONResponse(await _view(board, watch))

    async def gpu_events(request: Request) -> Response:
        return StreamingResponse(
            gpu_updates(board, watch),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"},
        )

    return [
        Route("/gpus", gpus_page, methods=["GET"]),
        Route("/api/gpus", gpus, methods=["GET"]),
        Route("/api/gpus/events", gpu_events, methods=["GET"]),
    ]
