"""The API error hierarchy.

Every failure of a call to the API server surfaces as a :class:`ApiError`
subclass chosen by HTTP status (and, for 409, by the Status reason), so callers
branch on types, never on numbers::

    ApiError
      NotFound (404)           AlreadyExists (409, reason AlreadyExists)
      Conflict (409)           Gone (410: resourceVersion too old)
      Invalid (422)            Forbidden (403)   Unauthorized (401)
      BadRequest (400)         TooManyRequests (429)
      ServerError (5xx)        TransportError (no HTTP answer: connect/read/TLS)
"""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A call to the API server failed."""

    status: int = 0

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        self.reason = reason
        self.body = body or {}
        self.retry_after = retry_after


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class AlreadyExists(Conflict):
    """A create hit an object of the same name (409, reason AlreadyExists)."""


class Gone(ApiError):
    """The requested resourceVersion is too old (410): relist."""

    status = 410


class Invalid(ApiError):
    status = 422


class TooManyRequests(ApiError):
    status = 429


class ServerError(ApiError):
    status = 500


class TransportError(ApiError):
    """No HTTP answer at all: connection refused, timeout, TLS failure."""


_BY_STATUS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        Gone,
        Invalid,
        TooManyRequests,
    )
}
"""The class of each 4xx status that has one, keyed by the status it declares."""


def error_from_response(status: int, data: bytes, retry_after: str | None = None) -> ApiError:
    """Map an HTTP error answer (a ``metav1.Status`` body) to an exception."""
    body: dict[str, Any] = {}
    try:
        parsed = json.loads(data) if data else {}
        if isinstance(parsed, dict):
            body = parsed
    except ValueError:
        pass
    reason = str(body.get("reason", ""))
    message = str(body.get("message") or data[:500].decode("utf-8", "replace") or f"HTTP {status}")
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif status == 504 or status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    delay: float | None = None
    if retry_after:
        try:
            delay = float(retry_after)
        except ValueError:
            delay = None
    return cls(message, status=status, reason=reason, body=body, retry_after=delay)


def error_from_status_object(obj: dict[str, Any]) -> ApiError:
    """Map a ``Status`` delivered as a watch ERROR event to an exception."""
    code = int(obj.get("code") or 500)
    return error_from_response(code, json.dumps(obj).encode())
