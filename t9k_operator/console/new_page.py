"""The New job page's routes (what they take and answer: :mod:`~.creating`)."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from t9k_operator.cli import render
from t9k_operator.console import layout
from t9k_operator.console.actions import JobWrites, attempt, refused
from t9k_operator.console.creating import (
    MAX_BODY,
    accepted,
    form_manifest,
    one_manifest,
)
from t9k_operator.console.guard import session_of
from t9k_operator.console.job_page import SafeJSONResponse
from t9k_operator.console.rows import job_key
from t9k_operator.sdk.errors import AlreadyExists, BadJob, NotFound, T9kError
from t9k_operator.sdk.manifests import kind_of

Obj = dict[str, Any]


def _manifest(data: Any, kinds: Sequence[str]) -> Obj:
    """The job the request's JSON asks for: ``{"yaml": text}`` or ``{"form": {...}}``."""
    if isinstance(data, Mapping) and isinstance(data.get("yaml"), str):
        return one_manifest(data["yaml"], kinds)
    if isinstance(data, Mapping) and isinstance(data.get("form"), Mapping):
        return form_manifest(data["form"], kinds)
    raise BadJob('send {"yaml": text} or {"form": fields}')


def _where(writes: JobWrites, manifest: Obj) -> tuple[str, str, str]:
    """The job's namespace (the console's when it names none), kind and name."""
    meta = manifest["metadata"]
    namespace = str(meta.get("namespace") or writes.namespace)
    return namespace, str(manifest["kind"]), str(meta["name"])


def _absent(writes: JobWrites, manifest: Obj) -> None:
    """:class:`AlreadyExists` when a job of this kind and name is there: the
    page makes jobs, it never changes one (which an apply would)."""
    namespace, kind, name = _where(writes, manifest)
    try:
        writes.get(name, kind_of(manifest).cli_name, namespace)
    except NotFound:
        return
    raise AlreadyExists(
        f'{kind} "{name}" already exists in namespace "{namespace}": '
        "the console creates jobs, it does not change them",
        status=409,
        reason="AlreadyExists",
    )


def _apply(writes: JobWrites, manifest: Obj, real: bool) -> Obj:
    _absent(writes, manifest)
    return writes.submit(manifest, dry_run=not real)[0]


def new_routes(writes: JobWrites | None, kinds: Sequence[str]) -> list[Route]:
    """The New job page over ``writes`` (``None``: the page says it makes nothing)."""
    page = layout.page(
        "new",
        "New job",
        styles=["job", "actions"],
        scripts=["new"],
        nav=[("/", "Jobs"), ("/gpus", "GPUs")],
        confirm=("Create this job?", "Create"),
    )

    async def new_page(request: Request) -> Response:
        token = html.escape(session_of(request).csrf_token, quote=True)
        options = "".join(
            f'<option value="{html.escape(k)}">{html.escape(k)}</option>' for k in accepted(kinds)
        )
        return HTMLResponse(
            page.replace("{{csrf_token}}", token).replace("{{kind_options}}", options)
        )

    async def apply(request: Request, real: bool) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return SafeJSONResponse({"error": "the job is too large"}, status_code=413)
        if writes is None:
            return SafeJSONResponse({"error": "this console changes nothing"}, status_code=503)
        try:
            manifest = _manifest(json.loads(body or b"null"), kinds)
        except ValueError:
            return SafeJSONResponse({"error": "the request is not JSON"}, status_code=400)
        except T9kError as exc:
            return refused(exc)
        built = render.dump([manifest], "yaml")
        applied, refusal = await attempt(lambda: _apply(writes, manifest, real), manifest=built)
        if refusal is not None:
            return refusal
        namespace, kind, name = _where(writes, manifest)
        answer = {
            "yaml": render.dump([applied], "yaml"),
            "manifest": built,
            "key": job_key(namespace, kind, name),
            "url": "/jobs/" + "/".join(quote(p, safe="") for p in (namespace, kind, name)),
            "created": real,
        }
        return SafeJSONResponse(answer, status_code=201 if real else 200)

    async def preview(request: Request) -> Response:
        return await apply(request, real=False)

    async def create(request: Request) -> Response:
        return await apply(request, real=True)

    return [
        Route("/new", new_page, methods=["GET"]),
        Route("/api/new/preview", preview, methods=["POST"]),
        Route("/api/new/create", create, methods=["POST"]),
    ]
