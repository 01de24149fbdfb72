"""Queueing a pod that is no job's: a TensorBoard's pod, when the TensorBoard
names a queue (``spec.scheduler.t9kScheduler.queue``).

The integration that queues jobs queues such a pod too, with the same engine:
Kueue (``--kueue``: a Workload for the pod in the LocalQueue), else Volcano
(``--gang-scheduler volcano``: a PodGroup of one in the Volcano queue). Its
owner's controller asks the first integration that is on and queues pods
(:class:`QueuesPods`, found by :func:`queuer` among the integrations) to make
the pod ready for its queue before it creates it (:meth:`QueuesPods.queue_pod`:
pure, it adds what the engine needs and the label :data:`QUEUE`); the
integration's own controller does the rest for every pod with that label
(creates what the pod waits in, lets it go when admitted, says why it waits in
the annotation :data:`WAITING`). Without such an integration the queue is not
used, and the owner says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from t9k_operator.builders.common import MANAGED_BY, OPERATOR
from t9k_operator.objects import Obj, owner_reference
from t9k_operator.resources import Resource

QUEUE = "t9k.dev/queue"
"""Label of a pod that is no job's and waits in a queue: the queue's name."""
WAITING = "t9k.dev/queue-waiting"
"""Annotation of such a pod while it waits: why, in its engine's words."""


@runtime_checkable
class QueuesPods(Protocol):
    """An integration that queues a pod that is no job's."""

    name: str

    @property
    def engine(self) -> str:
        """The queue as a message names it: "Kueue LocalQueue", "Volcano queue"
        ("": it queues no pod, as a gang scheduler without queues)."""
        ...

    def queue_pod(self, pod: Obj, queue: str) -> Obj:
        """``pod`` (as built, not yet created) ready to wait in ``queue``:
        labelled :data:`QUEUE` and carrying what the engine needs. Pure."""
        ...


def queuer(integrations: Iterable[object]) -> QueuesPods | None:
    """The first integration that is on and queues pods (the registry's order:
    Kueue before gang scheduling, as for jobs), or None."""
    return next((i for i in integrations if isinstance(i, QueuesPods) and i.engine), None)


def labelled(pod: Obj, queue: str) -> Obj:
    """``pod`` with the label :data:`QUEUE`."""
    pod["metadata"].setdefault("labels", {})[QUEUE] = queue
    return pod


def owned_by(pod: Obj, name: str) -> Obj:
    """The metadata of what a queued pod waits in (its Workload, its PodGroup):
    ``name`` in the pod's namespace, the operator's label, owned by the pod, so
    it goes with it (no blockOwnerDeletion, which would need the pods' finalizers)."""
    meta = pod["metadata"]
    owner = owner_reference("v1", "Pod", meta["name"], meta["uid"])
    owner["blockOwnerDeletion"] = False
    return {
        "name": name,
        "namespace": meta["namespace"],
        "labels": {MANAGED_BY: OPERATOR},
        "ownerReferences": [owner],
    }


def queue_of(pod: Mapping[str, Any]) -> str | None:
    """The queue a pod waits in (its label), or None."""
    return ((pod.get("metadata") or {}).get("labels") or {}).get(QUEUE)


def waiting(pod: Mapping[str, Any]) -> str | None:
    """Why a queued pod waits, as its engine said, while it is held (a
    scheduling gate, or the annotation :data:`WAITING`); None when it is not held."""
    meta = pod.get("metadata") or {}
    said = (meta.get("annotations") or {}).get(WAITING)
    gated = bool((pod.get("spec") or {}).get("schedulingGates"))
    if not gated and said is None:
        return None
    return str(said or "not admitted yet")


@dataclass(frozen=True)
class Write:
    """One write a pass plans: ``create`` the companion, ``patch`` the pod (a
    JSON merge patch carrying the resourceVersion it was planned from),
    ``delete`` the pod (under its uid)."""

    verb: str  # create | patch | delete
    resource: Resource
    body: Obj
    why: str  # for the log


Get = Callable[[Resource, str | None, str], Obj | None]
"""A cache read: (resource, namespace, name) -> the object, or None."""
Plan = Callable[[Obj, Obj | None, Get], Sequence[Write]]
"""An integration's pure plan: (the queued pod, its companion or None, the
caches) -> the writes."""
