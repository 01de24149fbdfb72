"""The informers that keep the :class:`~.board.JobBoard` current.

One :class:`~t9k_operator.informers.SharedInformer` per job kind the
operator serves (:data:`~t9k_operator.kinds.registry.KINDS`, MSJob too) and
one on the pods the operator labels with their job, each over the cluster if
the user may list it there, else over the user's namespace, else not at all
(:func:`readable_scope` asks the API server once, before watching: an
informer the user may not read would only retry). A kind the cluster does not
serve (its CRD not installed) is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from t9k_operator import kube
from t9k_operator.builders.common import JOB_NAME
from t9k_operator.console.board import JobBoard
from t9k_operator.informers import ResourceListerWatcher, SharedInformer, transform_for
from t9k_operator.kinds.registry import KINDS
from t9k_operator.resources import PODS, Resource

log = structlog.get_logger(__name__)

ALL_NAMESPACES = ""
"""The scope of an informer over every namespace."""


def readable_scope(client: kube.KubeClient, resource: Resource, namespace: str) -> str | None:
    """Where the user may list ``resource``: :data:`ALL_NAMESPACES`, ``namespace``,
    or ``None`` (nowhere, or the cluster does not serve it)."""
    for scope in (ALL_NAMESPACES, namespace):
        try:
            client.list(resource, scope or None, limit=1)
            return scope
        except kube.Forbidden:
            continue
        except kube.NotFound:
            return None
    return None


class _KindHandlers:
    """An informer's handlers for one kind: its jobs onto the board, each with
    its ``apiVersion`` and ``kind`` (a list's items lack them) in a new dict."""

    def __init__(self, board: JobBoard, api_version: str, kind: str) -> None:
        self.board, self.api_version, self.kind = board, api_version, kind

    def _typed(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, **obj}

    def add(self, job: Mapping[str, Any]) -> None:
        self.board.put_job(self._typed(job))

    def update(self, _old: Mapping[str, Any], job: Mapping[str, Any]) -> None:
        self.board.put_job(self._typed(job))

    def delete(self, job: Mapping[str, Any]) -> None:
        self.board.drop_job(self._typed(job))


def _put_pod_update(board: JobBoard) -> Callable[[Mapping[str, Any], Mapping[str, Any]], None]:
    return lambda _old, pod: board.put_pod(pod)


@dataclass
class Watches:
    """The console's informers, and what each kind is watched over."""

    informers: list[SharedInformer] = field(default_factory=list)
    scopes: dict[str, str] = field(default_factory=dict)  # kind -> ALL_NAMESPACES | namespace

    @property
    def kinds(self) -> list[str]:
        return list(self.scopes)

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def wait_for_sync(self, timeout: float) -> bool:
        return all(i.wait_for_sync(timeout) for i in self.informers)

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop(timeout=2.0)


def _informer(
    client: kube.KubeClient, resource: Resource, scope: str, selector: str | None = None
) -> SharedInformer:
    lw = ResourceListerWatcher(client, resource, scope or None, selector)
    return SharedInformer(lw, name=f"console-{resource.plural}", transform=transform_for(resource))


def watch_jobs(client: kube.KubeClient, board: JobBoard, namespace: str) -> Watches:
    """Informers (not started) that feed ``board`` with the jobs and pods the
    user may read: cluster-wide where allowed, else in ``namespace``."""
    watches = Watches()
    for kind in KINDS:
        scope = readable_scope(client, kind.resource, namespace)
        if scope is None:
            log.info("console does not watch a kind", kind=kind.crd.kind)
            continue
        handlers = _KindHandlers(board, kind.crd.api_version, kind.crd.kind)
        informer = _informer(client, kind.resource, scope)
        informer.add_event_handler(handlers.add, handlers.update, handlers.delete)
        watches.informers.append(informer)
        watches.scopes[kind.crd.kind] = scope
    pod_scope = readable_scope(client, PODS, namespace)
    if pod_scope is not None:
        pods = _informer(client, PODS, pod_scope, selector=JOB_NAME)
        pods.add_event_handler(
            on_add=board.put_pod,
            on_update=_put_pod_update(board),
            on_delete=board.drop_pod,
        )
        watches.informers.append(pods)
    return watches
