"""What an opened TensorBoard's page gets besides TensorBoard's own answer.

The page runs in an opaque origin (the ``sandbox`` of :data:`POLICY`), where
``window.localStorage`` and ``sessionStorage`` throw ``SecurityError``;
TensorBoard reads its settings there, and without them its dashboards stop
at "Data could not be loaded". So each HTML answer of TensorBoard's gets,
first in its ``<head>``, the console's :data:`STORAGE_SCRIPT` (served at
:data:`STORAGE_PATH`, a file of the console's, as the policy allows no
inline script): an in-memory storage for the page's life. It gives the page
nothing of the console's: it only stands in for the storage the sandbox
withholds.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from t9k_operator.console.board_grants import PREFIX

POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",  # TensorBoard's components style themselves
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "sandbox allow-scripts allow-popups allow-downloads",
    )
)
"""The policy of a TensorBoard's answers: an opaque origin (``sandbox``
without ``allow-same-origin``), never framed, talking only to its own paths."""

STORAGE_PATH = f"{PREFIX}storage.js"
STORAGE_SCRIPT = """\
// An in-memory localStorage and sessionStorage for a page the sandbox denies them.
(() => {
  const memory = () => {
    const data = new Map();
    return {
      get length() { return data.size; },
      key: (i) => (i < data.size ? Array.from(data.keys())[i] : null),
      getItem: (k) => (data.has(String(k)) ? data.get(String(k)) : null),
      setItem: (k, v) => { data.set(String(k), String(v)); },
      removeItem: (k) => { data.delete(String(k)); },
      clear: () => { data.clear(); },
    };
  };
  for (const name of ["localStorage", "sessionStorage"]) {
    try {
      window[name].length;
    } catch (e) {
      Object.defineProperty(window, name, { value: memory(), configurable: true });
    }
  }
})();
"""
TAG = f'<script src="{STORAGE_PATH}"></script>'.encode()
HEAD = re.compile(rb"<head\b[^>]*>", re.IGNORECASE)


def with_storage(body: bytes, content_type: str) -> bytes:
    """``body`` with the storage script first in its ``<head>`` (at its very
    start when it has none), if it is HTML; else as it is."""
    if not content_type.lower().startswith("text/html"):
        return body
    head = HEAD.search(body)
    at = head.end() if head else 0
    return body[:at] + TAG + body[at:]


async def storage_script(request: Request) -> Response:
    return Response(STORAGE_SCRIPT, media_type="text/javascript")


def page_routes() -> list[Route]:
    return [Route(STORAGE_PATH, storage_script, methods=["GET"])]
