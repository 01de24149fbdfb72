"""The connection and request machinery under :class:`~t9k_operator.kube.KubeClient`:
the client's options, the shared urllib3 pool (TLS as the connection says),
and the one HTTP entry point that paces (:mod:`t9k_operator.kube.pace`: the
client-side limit, the retries of 429s), times, authorizes, counts and maps
every request onto :mod:`t9k_operator.kube.errors`."""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import urllib3

from t9k_operator.foundation.clock import REAL_CLOCK, Clock
from t9k_operator.foundation.metrics_client import API_REQUESTS
from t9k_operator.kube.config import Connection
from t9k_operator.kube.errors import ApiError, TransportError, error_from_response
from t9k_operator.kube.pace import Pace
from t9k_operator.objects import Obj


@dataclass(frozen=True)
class ClientOptions:
    # The client-side limit; a negative qps: none.
    qps: float = 20.0
    burst: int = 30
    # Drop that limit at the first answer showing the API server runs API
    # Priority and Fairness, which then paces this client (kube/pace.py).
    lift_limit_under_apf: bool = False
    # 429 answers retried per request before it fails (client-go's count).
    max_retries: int = 10
    pool_size: int = 16
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    # Longer than the API server's bookmark interval (about 1 min), so a quiet
    # but healthy watch is not mistaken for a dead one.
    watch_read_timeout: float = 150.0
    user_agent: str = "t9k-operator"


class Transport:
    """Sends requests to one API server; thread-safe, one pool for all threads."""

    def __init__(
        self,
        connection: Connection,
        options: ClientOptions | None = None,
        *,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.connection = connection
        self.options = options or ClientOptions()
        self.pace = Pace(
            self.options.user_agent,
            self.options.qps,
            self.options.burst,
            lift_under_apf=self.options.lift_limit_under_apf,
            max_retries=self.options.max_retries,
            clock=clock,
        )
        # Metric labels: the API server as host:port, this client by its user agent.
        where = urlsplit(connection.host)
        self._host = where.netloc or connection.host
        # A server behind a path (a proxy's ``https://host/k8s/clusters/c-1``).
        self._prefix = where.path.rstrip("/")
        pool_kwargs: dict[str, Any] = {
            "maxsize": self.options.pool_size,
            "block": False,
            "retries": False,
        }
        if connection.host.startswith("https"):
            if connection.verify:
                pool_kwargs["cert_reqs"] = ssl.CERT_REQUIRED
                if connection.ca_file:
                    pool_kwargs["ca_certs"] = connection.ca_file
            else:
                pool_kwargs["cert_reqs"] = ssl.CERT_NONE
                pool_kwargs["assert_hostname"] = False
            if connection.cert_file:
                pool_kwargs["cert_file"] = connection.cert_file
            if connection.key_file:
                pool_kwargs["key_file"] = connection.key_file
            if connection.tls_server_name:
                pool_kwargs["server_hostname"] = connection.tls_server_name
        # One server: its connection pool itself, not a PoolManager, which
        # parses each request's URL again to find that pool.
        self._pool = urllib3.connection_from_url(connection.host, **pool_kwargs)

    def close(self) -> None:
        self._pool.close()

    # -- the one HTTP entry point ------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str,
        read_timeout: float,
        stream: bool,
        headers: dict[str, str] | None = None,
    ) -> urllib3.BaseHTTPResponse:
        url = self._prefix + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        data: bytes | None = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        attempt = 0
        while True:
            response = self._send(
                method, url, path, data, content_type, read_timeout, stream, headers
            )
            if response.status < 300:
                return response
            payload = response.data if not stream else response.read()
            if stream:
                response.release_conn()
            error = error_from_response(
                response.status, payload, response.headers.get("Retry-After")
            )
            # A 429 was refused before it was processed: any verb may go again,
            # when the server says when (a 429 without, such as a disruption
            # budget refusing an eviction, is an answer, not a pace).
            if (
                response.status != 429
                or error.retry_after is None
                or self.pace.retry_wait(attempt, error.retry_after) is None
            ):
                raise error
            attempt += 1

    def _send(
        self,
        method: str,
        url: str,
        path: str,
        data: bytes | None,
        content_type: str,
        read_timeout: float,
        stream: bool,
        extra: dict[str, str] | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """One attempt: wait for the limiter, send, count the answer;
        ``extra``: headers of the caller's (a Service proxy's request), under
        the client's own."""
        self.pace.before_send(method)
        headers = {**(extra or {}), "Accept": "application/json"}
        headers["User-Agent"] = self.options.user_agent
        auth = self.connection.authorization()
        if auth:
            headers["Authorization"] = auth
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            response = self._pool.urlopen(
                method,
                url,
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(connect=self.options.connect_timeout, read=read_timeout),
                preload_content=not stream,
                redirect=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            API_REQUESTS.labels("<error>", method, self._host).inc()
            raise TransportError(f"{method} {path}: {exc}") from exc
        API_REQUESTS.labels(str(response.status), method, self._host).inc()
        self.pace.answered(response.headers)
        return response

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        decode: bool = True,
    ) -> Obj:
        """The answer, decoded; ``decode=False``: read but not decoded (``{}``),
        for a caller that needs only to know the request succeeded."""
        response = self._open(
            method,
            path,
            query,
            body,
            content_type,
            timeout or self.options.read_timeout,
            stream=False,
        )
        if not response.data or not decode:
            return {}
        try:
            decoded: Obj = json.loads(response.data)
        except ValueError as exc:
            raise ApiError(f"{method} {path}: answer is not JSON") from exc
        return decoded
