"""A Prometheus server's HTTP API, as the operator and the t9k command ask it:
one instant query (``/api/v1/query``), its vector back (or a range query,
``/api/v1/query_range``, its matrix back, for the console's charts), or a
:class:`PrometheusError` saying what went wrong (unreachable, an HTTP error,
an answer that is not a success). Knows nothing of jobs."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

TIMEOUT = 10.0
"""Seconds a query may take, connection included."""


class PrometheusError(Exception):
    """A query that got no vector back, and why."""


def check_url(url: str) -> str | None:
    """What is wrong with ``url`` as a Prometheus address, or None."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"{url!r} is not an http:// or https:// address"
    return None


def query(url: str, expr: str, *, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
    """The instant vector ``expr`` evaluates to now at the Prometheus at ``url``
    (its base: ``http://prometheus:9090``, or with a path prefix). Sent as a
    form POST, so a long expression fits."""
    return _ask(url, "query", {"query": expr}, "vector", timeout)


def query_range(
    url: str, expr: str, start: float, end: float, step: int, *, timeout: float = TIMEOUT
) -> list[dict[str, Any]]:
    """The range vector (matrix) ``expr`` evaluates to from ``start`` to ``end``
    (unix seconds) every ``step`` seconds, at the Prometheus at ``url``."""
    form = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": str(step)}
    return _ask(url, "query_range", form, "matrix", timeout)


def points(series: Mapping[str, Any]) -> Iterator[tuple[float, float]]:
    """One series of a :func:`query_range` answer as (unix seconds, value)
    points, leaving out values that do not parse and NaN."""
    for at, value in series.get("values") or []:
        try:
            v = float(value)
        except (TypeError, ValueError):
            continue
        if v == v:  # not NaN
            yield float(at), v


def _ask(
    url: str, api: str, form: dict[str, str], result_type: str, timeout: float
) -> list[dict[str, Any]]:
    endpoint = url.rstrip("/") + "/api/v1/" + api
    body = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(
        endpoint,
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            answer = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        detail = _error_of(exc.read())
        raise PrometheusError(f"{endpoint}: HTTP {exc.code}{detail}") from None
    except (OSError, ValueError) as exc:  # unreachable, timed out, not JSON
        raise PrometheusError(f"{endpoint}: {exc}") from None
    if not isinstance(answer, dict) or answer.get("status") != "success":
        raise PrometheusError(f"{endpoint}: {_error_of(answer) or 'not a success'}")
    data = answer.get("data") or {}
    if data.get("resultType") != result_type or not isinstance(data.get("result"), list):
        what = "an instant vector" if result_type == "vector" else "a range vector"
        raise PrometheusError(f"{endpoint}: not {what} ({data.get('resultType')})")
    return list(data["result"])


def _error_of(body: Any) -> str:
    """Prometheus's own words on an error, if the body carries them."""
    if isinstance(body, bytes):
        try:
            body = json.loads(body)
        except ValueError:
            return ""
    if isinstance(body, dict) and body.get("error"):
        return f": {body.get('errorType', '')} {body['error']}".rstrip()
    return ""
