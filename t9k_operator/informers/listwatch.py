"""The seam the reflector lists and watches through: :class:`ListerWatcher`
and the :class:`WatchEvents` one watch yields, and
:class:`ResourceListerWatcher`, which adapts it to
:class:`~t9k_operator.kube.KubeClient` for one resource and counts its
requests in ``t9k_informer_requests_total``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from t9k_operator.foundation.metrics_client import INFORMER_REQUESTS
from t9k_operator.kube.client import collect
from t9k_operator.objects import Obj

if TYPE_CHECKING:
    from t9k_operator.kube.client import KubeClient
    from t9k_operator.resources import Resource


class WatchEvents(Protocol):
    """One watch: iterate it for ``{"type": ..., "object": {...}}``; ``close()`` ends it.

    ``close()`` may be called from another thread while iteration blocks; the
    iteration must then end (normally or with an error) soon after.
    """

    def __iter__(self) -> Iterator[Obj]: ...

    def close(self) -> None: ...


class ListerWatcher(Protocol):
    def list(self) -> tuple[list[Obj], str]:
        """Every object and the list's resourceVersion."""
        ...

    def watch(self, resource_version: str, timeout_seconds: int) -> WatchEvents:
        """Watch from ``resource_version``; the server ends it after ``timeout_seconds``."""
        ...


class ResourceListerWatcher:
    """:class:`ListerWatcher` over a :class:`KubeClient` for one resource.

    ``namespace=None`` watches all namespaces; ``label_selector`` narrows both
    the list and the watch. Watches ask for bookmarks.
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector

    def list(self) -> tuple[list[Obj], str]:
        """Every object, a page per request, each counted in
        ``t9k_informer_requests_total``."""
        requests = INFORMER_REQUESTS.labels(resource=self.resource.plural, verb="list")

        def counted() -> Iterator[Obj]:
            for page in self.client.list_pages(
                self.resource, self.namespace, label_selector=self.label_selector
            ):
                requests.inc()
                yield page

        return collect(counted())

    def watch(self, resource_version: str, timeout_seconds: int) -> WatchEvents:
        INFORMER_REQUESTS.labels(resource=self.resource.plural, verb="watch").inc()
        return self.client.watch(
            self.resource,
            self.namespace,
            resource_version=resource_version or None,
            timeout_seconds=timeout_seconds,
            label_selector=self.label_selector,
            allow_bookmarks=True,
        )

    def __repr__(self) -> str:
        where = self.namespace or "*"
        sel = f" -l {self.label_selector}" if self.label_selector else ""
        return f"<ResourceListerWatcher {self.resource.plural} in {where}{sel}>"
