"""The SDK's typed errors: each carries the API server's own message.

::

    T9kError
      ApiRefused          the API server answered with an error (``.status``, ``.reason``)
        NotFound          404: no such job (or namespace)
        AlreadyExists     409: a job of that name exists
        Conflict          409: the object changed meanwhile, or a field manager conflict
        Invalid           422: admission refused the object (schema, CEL rules, strict fields)
        Forbidden         403: RBAC
        Unauthorized      401: the kubeconfig's credentials
      ConnectionFailed    no answer from the API server, or no usable kubeconfig
      BadJob              the input is not a job this SDK knows, or does not fit its model
      Unsupported         the kind cannot do that (pause an MSJob)
      JobFailed           wait: the job failed (``.reason``, ``.message``)
      WaitTimeout         wait: the wanted state did not come in time
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from t9k_operator import kube

T = TypeVar("T")


class T9kError(Exception):
    """Every error the SDK raises."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ApiRefused(T9kError):
    """The API server refused a request; ``message`` is its own."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class NotFound(ApiRefused):
    pass


class AlreadyExists(ApiRefused):
    pass


class Conflict(ApiRefused):
    pass


class Invalid(ApiRefused):
    pass


class Forbidden(ApiRefused):
    pass


class Unauthorized(ApiRefused):
    pass


class ConnectionFailed(T9kError):
    pass


class BadJob(T9kError):
    pass


class Unsupported(T9kError):
    pass


class JobFailed(T9kError):
    """The job ended Failed while being waited for."""

    def __init__(self, name: str, reason: str, message: str) -> None:
        super().__init__(f"job {name} failed: {reason}" + (f": {message}" if message else ""))
        self.name = name
        self.reason = reason
        self.detail = message


class WaitTimeout(T9kError):
    """The wanted state did not come in time; ``phase`` and ``reason`` are the last seen."""

    def __init__(self, name: str, wanted: str, phase: str, reason: str, timeout: float) -> None:
        text = f"timed out after {timeout:g}s waiting for job {name} to be {wanted}"
        text += f" (phase {phase or 'unknown'}" + (f", reason {reason})" if reason else ")")
        super().__init__(text)
        self.phase = phase
        self.reason = reason


TYPED_PATCH = "failed to create typed patch object"

_MAP: tuple[tuple[type[kube.ApiError], type[ApiRefused]], ...] = (
    (kube.NotFound, NotFound),
    (kube.AlreadyExists, AlreadyExists),
    (kube.Conflict, Conflict),
    (kube.Invalid, Invalid),
    (kube.Forbidden, Forbidden),
    (kube.Unauthorized, Unauthorized),
)


def from_api(exc: kube.ApiError) -> T9kError:
    """The SDK's error for a client error, with the API server's message."""
    if isinstance(exc, kube.TransportError):
        return ConnectionFailed(exc.message)
    if not exc.status and not exc.reason:  # the loaders: no kubeconfig, a broken one
        return ConnectionFailed(exc.message)
    if exc.message.startswith(TYPED_PATCH):
        # Server-side apply refuses a field the schema lacks with a 500 of this
        # wording (not a 422): it is the object that is invalid, not the server.
        return Invalid(exc.message, status=exc.status, reason=exc.reason)
    for source, target in _MAP:
        if isinstance(exc, source):
            return target(exc.message, status=exc.status, reason=exc.reason)
    return ApiRefused(exc.message, status=exc.status, reason=exc.reason)


def call(fn: Callable[[], T]) -> T:
    """``fn()``, its API error raised as the SDK's type for it."""
    try:
        return fn()
    except kube.ApiError as exc:
        raise from_api(exc) from None
