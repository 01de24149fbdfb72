"""A small, raw-JSON Kubernetes REST client.

Requests and watches carry plain ``dict`` bodies: decoding into generated model
classes is the known CPU sink of the ``kubernetes`` package, and the operator
only needs dicts for built-in objects (its own CRDs are parsed by pydantic in
``api/``). Every call has explicit connect and read timeouts, goes at the
client's pace (its token bucket, ``--kube-api-qps`` / ``--kube-api-burst``, or
the API server's: :mod:`t9k_operator.kube.pace`), and maps failures onto
:mod:`t9k_operator.kube.errors`. One urllib3 pool is shared by
all threads; size it to workers + watches.

This module owns the verbs (get, list, watch, create, replace, patch, delete,
pod logs); :mod:`t9k_operator.kube.transport` owns the connection and the
request machinery under them, :mod:`t9k_operator.kube.streams` the streamed
answers.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from typing import Any

import urllib3

from t9k_operator.kube.config import load_connection
from t9k_operator.kube.errors import Gone
from t9k_operator.kube.streams import LogStream, WatchStream
from t9k_operator.kube.transport import ClientOptions, Transport
from t9k_operator.objects import Obj
from t9k_operator.resources import PODS, Resource


def collect(pages: Iterable[Obj]) -> tuple[list[Obj], str]:
    """The items of a list's pages, and its resourceVersion (the last page's)."""
    items: list[Obj] = []
    meta: Obj = {}
    for page in pages:
        items.extend(page.get("items") or [])
        meta = page.get("metadata") or {}
    return items, str(meta.get("resourceVersion", ""))


class KubeClient(Transport):
    """Thread-safe; share one per process."""

    @classmethod
    def from_config(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        options: ClientOptions | None = None,
    ) -> KubeClient:
        return cls(load_connection(kubeconfig, context), options)

    # -- verbs -------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        return self.request("GET", resource.path(namespace, name))

    def get_raw(self, path: str) -> urllib3.BaseHTTPResponse:
        """A GET of ``path`` whose answer is not an API object (a Service's
        proxy): read whole, its status and headers as the server sent them."""
        return self._open("GET", path, None, None, "", self.options.read_timeout, stream=False)

    def post_raw(
        self, path: str, body: bytes, content_type: str, headers: dict[str, str]
    ) -> urllib3.BaseHTTPResponse:
        """A POST of ``body`` to ``path`` whose answer is not an API object (a
        Service's proxy), with the caller's ``headers`` too (never one of the
        client's own: its credentials and ``Content-Type`` win)."""
        timeout = self.options.read_timeout
        return self._open("POST", path, None, body, content_type, timeout, False, headers)

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
        answer: bool = True,
        dry_run: bool = False,
    ) -> Obj:
        """POST ``body``; the object created (``answer=False``: ``{}``, its
        answer not decoded, for a caller that does not read it).
        ``field_validation="Strict"`` makes the API server refuse a field it
        does not know instead of dropping it in silence; ``dry_run``: every
        check and admission, nothing stored (``dryRun=All``)."""
        ns = namespace or (body.get("metadata") or {}).get("namespace")
        asked = {"fieldValidation": field_validation, "dryRun": "All" if dry_run else None}
        query = {k: v for k, v in asked.items() if v}
        return self.request(
            "POST", resource.path(ns), body=body, query=query or None, decode=answer
        )

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
        dry_run: bool = False,
    ) -> Obj:
        """PATCH ``patch``; ``patch_type="apply"`` is server-side apply (with
        ``field_manager``), and ``field_validation="Strict"`` refuses unknown fields;
        ``dry_run``: the object as it would be, nothing stored (``dryRun=All``)."""
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
            "dryRun": "All" if dry_run else None,
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
        previous: bool = False,
    ) -> LogStream:
        """A pod's container log, line by line, as kubelet serves it through the
        API server (``pods/log``); ``follow`` keeps reading until the container
        ends or the stream is closed; ``previous``: the log of the container's
        run before its last restart."""
        query = {
            "container": container,
            "follow": "true" if follow else None,
            "previous": "true" if previous else None,
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
