"""A small, raw-JSON Kubernetes REST client.

Requests and watches carry plain ``dict`` bodies: decoding into generated model
classes is the known CPU sink of the ``kubernetes`` package, and the operator
only needs dicts for built-in objects (its own CRDs are parsed by pydantic in
``api/``). Every call has explicit connect and read timeouts, passes a
client-side token bucket (``--kube-api-qps`` / ``--kube-api-burst``), and maps
failures onto :mod:`t9k_operator.kube.errors`. One urllib3 pool is shared by
all threads; size it to workers + watches.
"""

from __future__ import annotations

import builtins
import json
import ssl
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import urllib3

from t9k_operator.foundation import metrics
from t9k_operator.foundation.flowcontrol import TokenBucket
from t9k_operator.kube.config import Connection, load_connection
from t9k_operator.kube.errors import (
    ApiError,
    Gone,
    TransportError,
    error_from_response,
    error_from_status_object,
)
from t9k_operator.objects import Obj
from t9k_operator.resources import PODS, Resource


@dataclass(frozen=True)
class ClientOptions:
    qps: float = 20.0
    burst: int = 30
    pool_size: int = 16
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    # Longer than the API server's bookmark interval (about 1 min), so a quiet
    # but healthy watch is not mistaken for a dead one.
    watch_read_timeout: float = 150.0
    user_agent: str = "t9k-operator"


class _Lines:
    """The lines of one streamed response (a watch, a log), without their
    newlines; ``close()`` ends it, also from another thread blocked reading it."""

    what = "stream"

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self._closed = False

    def lines(self) -> Iterator[bytes]:
        buffer = b""
        try:
            for chunk in self._response.stream(amt=None, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    yield line
            if buffer:
                yield buffer
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if not self._closed:
                raise TransportError(f"{self.what} stream broken: {exc}") from exc
        finally:
            self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """End the stream, also from another thread blocked reading it.

        The connection is closed, never handed back to the pool: it still has
        unread chunks of this stream on it.
        """
        if self._closed:
            return
        self._closed = True
        shutdown = getattr(self._response, "shutdown", None)  # urllib3 >= 2.3
        try:
            if shutdown is not None:
                shutdown()
            self._response.close()
        except Exception:
            pass


class LogStream(_Lines):
    """The lines of one log request, decoded (bad UTF-8 replaced)."""

    what = "log"

    def __iter__(self) -> Iterator[str]:
        for line in self.lines():
            yield line.decode("utf-8", "replace")


class WatchStream(_Lines):
    """Iterates the events of one watch request; ``close()`` ends it early.

    Yields ``{"type": ADDED|MODIFIED|DELETED|BOOKMARK, "object": {...}}``.
    An ``ERROR`` event is raised as the mapped :class:`ApiError` (410 ->
    :class:`Gone`). A read timeout or a dropped connection ends iteration
    with :class:`TransportError`; a server-side timeout ends it normally.
    """

    what = "watch"

    def __iter__(self) -> Iterator[Obj]:
        for line in self.lines():
            if line.strip():
                yield self._decode(line)

    @staticmethod
    def _decode(line: bytes) -> Obj:
        event: Obj = json.loads(line)
        if event.get("type") == "ERROR":
            raise error_from_status_object(event.get("object") or {})
        return event


def collect(pages: Iterable[Obj]) -> tuple[list[Obj], str]:
    """The items of a list's pages, and its resourceVersion (the last page's)."""
    items: list[Obj] = []
    meta: Obj = {}
    for page in pages:
        items.extend(page.get("items") or [])
        meta = page.get("metadata") or {}
    return items, str(meta.get("resourceVersion", ""))


class KubeClient:
    """Thread-safe; share one per process."""

    def __init__(self, connection: Connection, options: ClientOptions | None = None) -> None:
        self.connection = connection
        self.options = options or ClientOptions()
        self._limiter = TokenBucket(self.options.qps, self.options.burst)
        # Metric labels: the API server as host:port, this client by its user agent.
        self._host = urlsplit(connection.host).netloc or connection.host
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
        self._pool = urllib3.PoolManager(**pool_kwargs)

    @classmethod
    def from_config(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        options: ClientOptions | None = None,
    ) -> KubeClient:
        return cls(load_connection(kubeconfig, context), options)

    def close(self) -> None:
        self._pool.clear()

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
    ) -> urllib3.BaseHTTPResponse:
        waited = self._limiter.accept()
        metrics.API_LIMITER_WAIT.labels(self.options.user_agent, method).observe(waited)
        url = self.connection.host + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        headers = {"Accept": "application/json", "User-Agent": self.options.user_agent}
        auth = self.connection.authorization()
        if auth:
            headers["Authorization"] = auth
        data: bytes | None = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            response = self._pool.request(
                method,
                url,
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(connect=self.options.connect_timeout, read=read_timeout),
                preload_content=not stream,
                redirect=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            metrics.API_REQUESTS.labels("<error>", method, self._host).inc()
            raise TransportError(f"{method} {path}: {exc}") from exc
        metrics.API_REQUESTS.labels(str(response.status), method, self._host).inc()
        if response.status >= 300:
            payload = response.data if not stream else response.read()
            if stream:
                response.release_conn()
            raise error_from_response(response.status, payload, response.headers.get("Retry-After"))
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
    ) -> Obj:
        response = self._open(
            method,
            path,
            query,
            body,
            content_type,
            timeout or self.options.read_timeout,
            stream=False,
        )
        if not response.data:
            return {}
        try:
            decoded: Obj = json.loads(response.data)
        except ValueError as exc:
            raise ApiError(f"{method} {path}: answer is not JSON") from exc
        return decoded

    # -- verbs -------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        return self.request("GET", resource.path(namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Obj:
        query = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "resourceVersion": resource_version,
            "limit": limit,
            "continue": continue_token,
        }
        return self.request("GET", resource.path(namespace), query=query)

    def list_pages(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> Iterator[Obj]:
        """Each page of a paginated list, one request each; the last has no
        ``continue`` token and carries the list's resourceVersion."""
        token: str | None = None
        while True:
            page = self.list(
                resource,
                namespace,
                label_selector=label_selector,
                limit=page_size,
                continue_token=token,
            )
            yield page
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return

    def list_all(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[builtins.list[Obj], str]:
        """Every item (paginated) and the list's resourceVersion."""
        return collect(
            self.list_pages(resource, namespace, label_selector=label_selector, page_size=page_size)
        )

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None,
        timeout_seconds: int,
        label_selector: str | None = None,
        allow_bookmarks: bool = True,
    ) -> WatchStream:
        query = {
            "watch": "true",
            "labelSelector": label_selector,
            "resourceVersion": resource_version,
            "timeoutSeconds": timeout_seconds,
            "allowWatchBookmarks": "true" if allow_bookmarks else None,
        }
        try:
            response = self._open(
                "GET",
                resource.path(namespace),
                query,
                None,
                "",
                self.options.watch_read_timeout,
                stream=True,
            )
        except Gone:
            raise
        return WatchStream(response)

    def create(
        self,
        resource: Resource,
        body: Obj,
        namespace: str | None = None,
        *,
        field_validation: str | None = None,
    ) -> Obj:
        """POST ``body``. ``field_validation="Strict"`` makes the API server refuse
        a field it does not know instead of dropping it in silence."""
        ns = namespace or (body.get("metadata") or {}).get("namespace")
        query = {"fieldValidation": field_validation} if field_validation else None
        return self.request("POST", resource.path(ns), body=body, query=query)

    def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj:
        meta = body["metadata"]
        path = resource.path(meta.get("namespace"), meta["name"], subresource)
        return self.request("PUT", path, body=body)

    def replace_status(self, resource: Resource, body: Obj) -> Obj:
        return self.replace(resource, body, subresource="status")

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        field_validation: str | None = None,
    ) -> Obj:
        """PATCH ``patch``; ``patch_type="apply"`` is server-side apply (with
        ``field_manager``), and ``field_validation="Strict"`` refuses unknown fields."""
        content_type = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "apply": "application/apply-patch+yaml",
        }[patch_type]
        query = {
            "fieldManager": field_manager,
            "force": None if force is None else str(force).lower(),
            "fieldValidation": field_validation,
        }
        return self.request(
            "PATCH",
            resource.path(namespace, name, subresource),
            query=query,
            body=patch,
            content_type=content_type,
        )

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj:
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        return self.request("DELETE", resource.path(namespace, name), body=body)

    def pod_logs(
        self,
        namespace: str,
        name: str,
        *,
        container: str | None = None,
        follow: bool = False,
        since_seconds: int | None = None,
        timestamps: bool = False,
        tail_lines: int | None = None,
    ) -> LogStream:
        """A pod's container log, line by line, as kubelet serves it through the
        API server (``pods/log``); ``follow`` keeps reading until the container
        ends or the stream is closed."""
        query = {
            "container": container,
            "follow": "true" if follow else None,
            "sinceSeconds": since_seconds,
            "timestamps": "true" if timestamps else None,
            "tailLines": tail_lines,
        }
        response = self._open(
            "GET",
            PODS.path(namespace, name, "log"),
            query,
            None,
            "",
            self.options.watch_read_timeout if follow else self.options.read_timeout,
            stream=True,
        )
        return LogStream(response)
