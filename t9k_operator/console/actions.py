"""The console's actions on one job: pause, resume, delete.

============================================  ====================================
``POST /api/jobs/{ns}/{kind}/{name}/pause``   ``t9k pause``: 200, or the refusal
``POST /api/jobs/{ns}/{kind}/{name}/resume``  ``t9k resume``: 200, or the refusal
``POST /api/jobs/{ns}/{kind}/{name}/delete``  ``t9k delete``: 202 (the API server
                                              deletes it and its children in the
                                              background), or the refusal
============================================  ====================================

Each is the SDK call ``t9k pause/resume/delete`` makes (``Client.pause``,
``resume``, ``delete``), as the console's user (its kubeconfig): what RBAC
refuses them is refused here too. A refusal is answered with the API
server's own status when it is a client error (403 Forbidden, 404, 409,
422), 502 when the API server failed or was not reached, and a JSON body
``{"error", "reason", "status"}`` carrying the API server's message; the
page writes it as text. These are POST requests: the guard has checked the
session's CSRF token before they get here.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from t9k_operator.console.job_page import SafeJSONResponse
from t9k_operator.sdk.errors import (
    ApiRefused,
    BadJob,
    ConnectionFailed,
    Invalid,
    T9kError,
    Unsupported,
)

Obj = dict[str, Any]

VERBS = {"pause": ("paused", 200), "resume": ("resumed", 200), "delete": ("deleted", 202)}
"""Each action, its past tense, and the status of its success."""


@runtime_checkable
class JobWrites(Protocol):
    """What the console's actions ask of the SDK's client (its writes)."""

    namespace: str

    def get(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj: ...

    def pause(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj: ...

    def resume(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj: ...

    def delete(self, name: str, kind: str | None = None, namespace: str | None = None) -> Obj: ...

    def submit(self, source: Any, *, dry_run: bool = False) -> list[Obj]: ...


UNDECLARED = re.compile(r"(\.[^\s:]+): field not declared in schema")
UNKNOWN = re.compile(r'unknown field "([^"]+)"')


def fields_of(message: str) -> list[str]:
    """The field paths a strict field validation refused, as the API server
    names them (server-side apply's ``.spec.x``, a create's ``spec.x``)."""
    return UNDECLARED.findall(message) + UNKNOWN.findall(message)


def refusal(exc: T9kError) -> tuple[int, dict[str, Any]]:
    """The console's HTTP status for an SDK error, and its JSON body: the API
    server's own status for a client error (a strict field refusal, which
    server-side apply answers with a 500, is the object's fault: 422), 502
    when the API server failed or was not reached, 400 for input that is no
    job, 409 for what the job's kind cannot do."""
    body: dict[str, Any] = {
        "error": exc.message,
        "reason": "",
        "status": 0,
        "fields": fields_of(exc.message),
    }
    if isinstance(exc, ApiRefused):
        body.update(reason=exc.reason, status=exc.status)
        if isinstance(exc, Invalid):
            return 422, body
        return (exc.status if 400 <= exc.status < 500 else 502), body
    if isinstance(exc, ConnectionFailed):
        return 502, body
    if isinstance(exc, BadJob):
        return 400, body
    if isinstance(exc, Unsupported):
        return 409, body
    return 500, body


async def attempt(action: Callable[[], Any], **more: Any) -> tuple[Any, Response | None]:
    """``action()`` in a thread; its result, or ``None`` and the refusal's
    response (its body with ``more``)."""
    try:
        return await asyncio.to_thread(action), None
    except T9kError as exc:
        return None, refused(exc, **more)


def refused(exc: T9kError, **more: Any) -> Response:
    """The response to an SDK error: :func:`refusal`'s, its body with ``more``."""
    status, body = refusal(exc)
    return SafeJSONResponse({**body, **more}, status_code=status)


def action_routes(writes: JobWrites | None, kinds: Sequence[str]) -> list[Route]:
    """The action routes, asking ``writes`` (``None``: the console makes no
    change, 503) for jobs of the console's ``kinds`` only."""

    async def act(request: Request) -> Response:
        p: Mapping[str, str] = request.path_params
        verb, kind = p["verb"], p["kind"]
        if verb not in VERBS:
            return SafeJSONResponse({"error": f"no such action: {verb}"}, status_code=404)
        if kind not in kinds:
            return SafeJSONResponse({"error": f"the console shows no {kind}"}, status_code=404)
        if writes is None:
            return SafeJSONResponse({"error": "this console changes nothing"}, status_code=503)
        method = getattr(writes, verb)
        _, refused = await attempt(lambda: method(p["name"], kind, p["namespace"]))
        if refused is not None:
            return refused
        past, status = VERBS[verb]
        done = f"{kind} {p['namespace']}/{p['name']} {past}"
        return SafeJSONResponse({"done": verb, "message": done}, status_code=status)

    return [Route("/api/jobs/{namespace}/{kind}/{name}/{verb}", act, methods=["POST"])]
