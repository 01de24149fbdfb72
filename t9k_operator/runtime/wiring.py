"""Informer -> queue wiring, in one place, as controller-runtime's builder does
it with ``For`` and ``Owns``.

:func:`watch` registers the event handlers that turn a cache's changes into
keys on a controller's queue: an object the controller reconciles is
enqueued by its own key (``for_``); a child by its controller owner's key,
if the owner is of the controller's kind (``owns``), optionally after a
short batch period so that the changes of many children meet one reconcile.
Handlers only enqueue keys: what to do is decided by the reconcile, from the
caches, whatever the event was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from t9k_operator.informers.informer import SharedInformer
from t9k_operator.objects import Obj, controller_ref, object_key
from t9k_operator.runtime.controller import Controller, controller_owner_key


@dataclass(frozen=True)
class Owns:
    """Children in ``informer`` whose controller owner is what the controller reconciles."""

    informer: SharedInformer
    batch: float = 0.0
    """Seconds a change waits before its owner is reconciled (0: at once)."""
    on_delete: Callable[[Obj], None] | None = None
    """Called with a deleted child before its owner is enqueued."""
    unowned: Callable[[Obj], str | None] | None = None
    """The key of a child that has no controller owner yet, if it names one
    otherwise (another controller made it for the owner to take)."""


class _ToOwner:
    """Enqueues a child's controller owner."""

    def __init__(self, controller: Controller, owner: tuple[str, str], spec: Owns) -> None:
        self.controller, self.group, self.kind, self.spec = controller, *owner, spec

    def changed(self, obj: Obj) -> None:
        key = controller_owner_key(obj, api_group=self.group, kind=self.kind)
        if key is None and self.spec.unowned is not None and controller_ref(obj) is None:
            key = self.spec.unowned(obj)
        if key is None:
            return
        if self.spec.batch > 0:
            self.controller.enqueue_after(key, self.spec.batch)
        else:
            self.controller.enqueue(key)

    def updated(self, old: Obj, new: Obj) -> None:
        self.changed(new)

    def deleted(self, obj: Obj) -> None:
        if self.spec.on_delete is not None:
            self.spec.on_delete(obj)
        self.changed(obj)


def watch(
    controller: Controller,
    for_: Iterable[SharedInformer],
    *,
    owns: Iterable[SharedInformer | Owns] = (),
    owner: tuple[str, str],
) -> None:
    """Wire ``for_`` (objects enqueued by their own ``namespace/name``) and
    ``owns`` (children enqueued by their controller owner's key when that owner
    is of kind ``owner`` = (API group, kind)) to ``controller``'s queue."""

    def by_key(obj: Obj) -> None:
        controller.enqueue(object_key(obj))

    def updated(old: Obj, new: Obj) -> None:
        by_key(new)

    for informer in for_:
        informer.add_event_handler(on_add=by_key, on_update=updated, on_delete=by_key)
    for child in owns:
        handler = _ToOwner(controller, owner, child if isinstance(child, Owns) else Owns(child))
        handler.spec.informer.add_event_handler(
            on_add=handler.changed, on_update=handler.updated, on_delete=handler.deleted
        )
