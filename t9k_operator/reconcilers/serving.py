"""An integration's servers and controllers: what they get from the operator,
and how they start.

An integration that serves something of its own (the progress endpoint the
replicas report to) implements :class:`Serving`. When the operator builds its
controllers, before any reconcile runs, it calls ``servers(host)`` of every
enabled integration that does, in registry order; the manager starts the
servers returned with its own and stops them at shutdown (they serve on every
replica, leading or not).

A server that takes something in for the reconciles (reports, callbacks)
hands it over with :meth:`Host.provide` under its integration's name; the
integration's pure ``observe`` reads it back as it reads the informers'
caches, through ``Caches.source(name)`` (read-only, the state at that moment):
the integration itself holds no live store and is never changed once built.

An integration with objects of its own to reconcile (the TensorBoard's
controller) implements :class:`Controlling`: its controllers run beside the
job kinds' ones, on the leader only, with the same workers and workqueue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import structlog

from t9k_operator.informers.informer import SharedInformer
from t9k_operator.resources import Resource
from t9k_operator.runtime.controller import Controller, ControllerContext, Server

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Route:
    """A job kind the operator runs: its jobs' cache, and how to queue one of
    them (``namespace/name``) after a delay."""

    resource: Resource
    jobs: SharedInformer
    enqueue_after: Callable[[str, float], None]


@dataclass(frozen=True)
class Host:
    """What a server gets from the operator."""

    ctx: ControllerContext
    routes: Mapping[str, Route]
    """Every job kind, by its plural."""
    pods: SharedInformer
    """The pods of every job (the operator's labelled children)."""
    namespace: str | None = None
    """The operator's own namespace (its pod's; else the one it watches), if known."""
    sources: dict[str, object] = field(default_factory=dict)
    """What the servers provided, by integration name (read by ``Caches.source``)."""

    def provide(self, name: str, source: object) -> None:
        """Let the integration ``name`` observe ``source`` (see the module)."""
        self.sources[name] = source


@runtime_checkable
class Serving(Protocol):
    """An integration with servers of its own."""

    name: str

    def servers(self, host: Host) -> list[Server]:
        """The servers to start (built, not started: the manager starts them).
        A server that cannot be built is left out and said so in the log: the
        jobs run without it."""
        ...


@runtime_checkable
class Controlling(Protocol):
    """An integration with controllers of its own."""

    name: str

    def controllers(self, ctx: ControllerContext, peers: Sequence[object]) -> list[Controller]:
        """Its controllers, built on ``ctx`` (the manager runs them); ``peers``:
        every integration that is on, itself included, in registry order (for a
        contract another one may offer: ``pipeline/queued_pods.py``)."""
        ...


def controllers(ctx: ControllerContext, integrations: Sequence[object]) -> list[Controller]:
    """The controllers of every integration that has some, in registry order."""
    return [
        c
        for i in integrations
        if isinstance(i, Controlling)
        for c in i.controllers(ctx, integrations)
    ]


def start(host: Host, integrations: Sequence[object]) -> None:
    """Add the servers of every integration that serves to ``host.ctx.servers``."""
    for integration in integrations:
        if not isinstance(integration, Serving):
            continue
        try:
            host.ctx.servers.extend(integration.servers(host))
        except Exception as exc:  # one integration's trouble never stops the operator
            log.error(
                "an integration's server cannot start", integration=integration.name, error=str(exc)
            )
