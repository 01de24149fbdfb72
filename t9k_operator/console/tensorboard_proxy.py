"""A job's TensorBoard through the console: ``GET /tensorboard/{ns}/{kind}/{name}/...``.

Each request goes to the API server's service proxy of the job's own
TensorBoard, ``/api/v1/namespaces/<ns>/services/<name>-tensorboard:6006/proxy/<path>``,
with the session's client (the person's own credentials: RBAC's ``get`` on
``services/proxy`` decides). The Service is named from the job the board
holds, never from the request; the path below it is checked segment by
segment (no ``.`` or ``..``, no backslash) and quoted again, so no request
reaches anything but that TensorBoard. GET only: any other method is 405.

The answer keeps only a few of TensorBoard's headers (its type, length,
validators); never a cookie. Its body is TensorBoard's, and TensorBoard
serves what the job wrote, from an image the job's author may have chosen:
it is treated as untrusted. The console's Content-Security-Policy stays, with
``sandbox`` added: the page runs in an opaque origin, so even a hostile
TensorBoard can read nothing of the console (not its pages, nor its CSRF
token) and act with nobody's session. The Job page opens it in a tab of its
own (the console's ``frame-ancestors 'none'`` stays too).
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from t9k_operator import kube
from t9k_operator.api.tensorboard import SERVICE_SUFFIX
from t9k_operator.console.board import JobBoard
from t9k_operator.console.guard import CONTENT_SECURITY_POLICY
from t9k_operator.console.job_page import JobReads
from t9k_operator.console.rows import job_key
from t9k_operator.sdk.forward import TENSORBOARD_PORT

SANDBOX = "sandbox allow-scripts allow-forms allow-popups allow-downloads"
POLICY = f"{CONTENT_SECURITY_POLICY}; {SANDBOX}"
KEPT_HEADERS = ("content-type", "etag", "last-modified", "content-language")
"""TensorBoard's headers the console passes on; the console adds its own."""
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def proxy_path(namespace: str, job_name: str, path: str) -> str | None:
    """The API server's path to ``path`` of the job's TensorBoard; ``None`` for
    a path that is not plainly below it."""
    segments = path.split("/") if path else []
    if any(s in (".", "..") or "\\" in s or "\x00" in s for s in segments):
        return None
    below = "/".join(urllib.parse.quote(s, safe="-._~!$&'()*+,;=:@") for s in segments)
    service = urllib.parse.quote(f"{job_name}{SERVICE_SUFFIX}", safe="")
    ns = urllib.parse.quote(namespace, safe="")
    return f"/api/v1/namespaces/{ns}/services/{service}:{TENSORBOARD_PORT}/proxy/{below}"


def kept(headers: Mapping[str, str]) -> dict[str, str]:
    """The answer's headers the console passes on, and its policy."""
    out = {k: str(headers[k]) for k in KEPT_HEADERS if headers.get(k)}
    out["Content-Security-Policy"] = POLICY
    return out


def tensorboard_routes(board: JobBoard, reads: JobReads | None) -> list[Route]:
    """The proxy to the TensorBoard of each of ``board``'s jobs that has one."""

    async def proxy(request: Request) -> Response:
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
        path = proxy_path(p["namespace"], job["metadata"]["name"], p["path"])
        if path is None:
            return PlainTextResponse("not a path of the TensorBoard", status_code=400)
        if request.url.query:
            path += "?" + urllib.parse.urlencode(request.query_params.multi_items())
        try:
            answer = await asyncio.to_thread(reads.kube.get_raw, path)
        except kube.ApiError as exc:
            status = exc.status if exc.status and 400 <= exc.status < 600 else 502
            return PlainTextResponse(f"TensorBoard: {exc}", status_code=status)
        return Response(answer.data, status_code=answer.status, headers=kept(answer.headers))

    return [
        Route("/tensorboard/{namespace}/{kind}/{name}/{path:path}", proxy, methods=ALL_METHODS),
    ]
