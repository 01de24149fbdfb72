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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from t9k_operator import kube
from t9k_operator.builders.common import JOB_NAME
from t9k_operator.console.board import JobBoard
from t9k_operator.console.sharing import console_transform
from t9k_operator.informers import ResourceListerWatcher, SharedInformer
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


def readable_scopes(
    client: kube.KubeClient, resource: Resource, namespaces: Sequence[str]
) -> list[str]:
    """Where the user may list ``resource``: ``[ALL_NAMESPACES]``, else those of
    ``namespaces`` they may list it in (none when the cluster does not serve it)."""
    scopes: list[str] = []
    for namespace in dict.fromkeys(namespaces):
        scope = readable_scope(client, resource, namespace)
        if scope == ALL_NAMESPACES:
            return [ALL_NAMESPACES]
        if scope is not None:
            scopes.append(scope)
    return scopes


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
    # kind -> [ALL_NAMESPACES] or the namespaces it is watched in
    scopes: dict[str, list[str]] = field(default_factory=dict)
    pod_scopes: list[str] = field(default_factory=list)

    @property
    def kinds(self) -> list[str]:
        return list(self.scopes)

    def watching(self, kind: str, scope: str) -> bool:
        """Jobs of ``kind`` (``""``: the jobs' pods) in ``scope`` are watched already."""
        had = self.scopes.get(kind, []) if kind else self.pod_scopes
        return ALL_NAMESPACES in had or scope in had

    def add(self, more: Watches) -> None:
        """``more``'s informers and scopes, to stop with these."""
        self.informers += more.informers
        for kind, scopes in more.scopes.items():
            self.scopes.setdefault(kind, []).extend(scopes)
        self.pod_scopes += more.pod_scopes

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
    return SharedInformer(
        lw, name=f"console-{resource.plural}", transform=console_transform(resource)
    )


def watch_jobs(client: kube.KubeClient, board: JobBoard, namespace: str) -> Watches:
    """Informers (not started) that feed ``board`` with the jobs and pods the
    user may read: cluster-wide where allowed, else in ``namespace``."""
    return watch_namespaces(client, board, [namespace])


def watch_namespaces(
    client: kube.KubeClient,
    board: JobBoard,
    namespaces: Sequence[str],
    watched: Watches | None = None,
) -> Watches:
    """Informers (not started) that feed ``board`` with the jobs and pods the
    user may read: cluster-wide where allowed, else in each of ``namespaces``
    they may list them in; none for what ``watched`` watches already."""
    before = watched or Watches()
    watches = Watches()
    for kind in KINDS:
        name = kind.crd.kind
        scopes = [
            s
            for s in readable_scopes(client, kind.resource, namespaces)
            if not before.watching(name, s)
        ]
        if not scopes:
            log.info("console does not watch a kind", kind=name)
            continue
        handlers = _KindHandlers(board, kind.crd.api_version, name)
        for scope in scopes:
            informer = _informer(client, kind.resource, scope)
            informer.add_event_handler(handlers.add, handlers.update, handlers.delete)
            watches.informers.append(informer)
        watches.scopes[name] = scopes
    for scope in readable_scopes(client, PODS, namespaces):
        if before.watching("", scope):
            continue
        pods = _informer(client, PODS, scope, selector=JOB_NAME)
        pods.add_event_handler(
            on_add=board.put_pod,
            on_update=_put_pod_update(board),
            on_delete=board.drop_pod,
        )
        watches.informers.append(pods)
        watches.pod_scopes.append(scope)
    return watches
