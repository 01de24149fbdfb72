"""HTTP answers map onto the error hierarchy by status and reason."""

from __future__ import annotations

import json

import pytest

from t9k_operator.kube import errors as e


def status_body(code: int, reason: str, message: str = "msg") -> bytes:
    return json.dumps(
        {"kind": "Status", "code": code, "reason": reason, "message": message}
    ).encode()


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (400, "BadRequest", e.BadRequest),
        (401, "Unauthorized", e.Unauthorized),
        (403, "Forbidden", e.Forbidden),
        (404, "NotFound", e.NotFound),
        (409, "AlreadyExists", e.AlreadyExists),
        (409, "Conflict", e.Conflict),
        (410, "Expired", e.Gone),
        (422, "Invalid", e.Invalid),
        (429, "TooManyRequests", e.TooManyRequests),
        (500, "InternalError", e.ServerError),
        (503, "ServiceUnavailable", e.ServerError),
        (418, "Teapot", e.ApiError),
    ],
)
def test_status_maps_to_type(code: int, reason: str, cls: type[e.ApiError]) -> None:
    err = e.error_from_response(code, status_body(code, reason, "the message"))
    assert type(err) is cls
    assert err.status == code
    assert err.reason == reason
    assert err.message == "the message"


def test_conflict_that_is_not_already_exists() -> None:
    err = e.error_from_response(409, status_body(409, "Conflict"))
    assert isinstance(err, e.Conflict) and not isinstance(err, e.AlreadyExists)
    assert isinstance(e.error_from_response(409, status_body(409, "AlreadyExists")), e.Conflict)


def test_non_json_body_and_retry_after() -> None:
    err = e.error_from_response(429, b"slow down", retry_after="3")
    assert isinstance(err, e.TooManyRequests)
    assert err.message == "slow down"
    assert err.retry_after == 3.0
    assert e.error_from_response(429, b"", retry_after="soon").retry_after is None
    assert e.error_from_response(502, b"").message == "HTTP 502"


def test_watch_error_event_410_is_gone() -> None:
    err = e.error_from_status_object(
        {"code": 410, "reason": "Expired", "message": "too old resource version: 1 (300)"}
    )
    assert isinstance(err, e.Gone)
    assert "too old" in err.message
