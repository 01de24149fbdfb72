"""Kueue's queues as a start estimate reads them, each object at most once
per refresh: a LocalQueue's pending workloads (Kueue's visibility API,
``visibility.kueue.x-k8s.io/v1beta2``), the LocalQueue, the ClusterQueue and
its pending workloads (``kueue.x-k8s.io/v1beta2``, as the Workloads).

Where the visibility API cannot be read (a Kueue without it, a missing
APIService, no permission), a Workload's positions are counted among this
operator's own Workloads, in Kueue's order (priority, then creation), and the
place says so: never a silent guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from t9k_operator.integrations.start_estimate.integration import VISIBILITY_GROUP, QueuePlace
from t9k_operator.kube import ApiError, KubeClient, NotFound
from t9k_operator.objects import Obj
from t9k_operator.resources import WORKLOADS, Resource

# Kueue v0.15 and later serve v1beta2 of both groups (the visibility API's
# v1beta1 stays beside it in v0.17, Kueue's queues' only through its conversion
# webhook).
LOCAL_QUEUES = Resource(WORKLOADS.group, WORKLOADS.version, "localqueues", "LocalQueue")
CLUSTER_QUEUES = Resource(
    WORKLOADS.group, WORKLOADS.version, "clusterqueues", "ClusterQueue", namespaced=False
)
VISIBILITY_VERSION = "v1beta2"
PENDING_IN_LOCAL = Resource(VISIBILITY_GROUP, VISIBILITY_VERSION, "localqueues", "LocalQueue")
PENDING_IN_CLUSTER = Resource(
    VISIBILITY_GROUP, VISIBILITY_VERSION, "clusterqueues", "ClusterQueue", namespaced=False
)


def _name(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _pending(workload: Obj) -> bool:
    return not ((workload.get("status") or {}).get("admission"))


class KueueReads:
    """What one refresh reads of Kueue (a fresh one each refresh)."""

    def __init__(self, client: KubeClient, max_ahead: int) -> None:
        self.client, self.max_ahead = client, max_ahead
        self._got: dict[tuple[str, str, str], Any] = {}

    def _get(
        self, what: str, resource: Resource, namespace: str | None, name: str, sub: str = ""
    ) -> Any:
        """The object (a dict), None when it does not exist, or the ApiError."""
        key = (what, namespace or "", name)
        if key not in self._got:
            try:
                path = resource.path(namespace, name, sub or None)
                self._got[key] = self.client.request("GET", path)
            except NotFound as exc:
                self._got[key] = exc if sub else None
            except ApiError as exc:
                self._got[key] = exc
        return self._got[key]

    def cluster_queue(self, name: str) -> Obj | None:
        found = self._get("cq", CLUSTER_QUEUES, None, name)
        return found if isinstance(found, dict) else None

    def _cluster_queue_of(self, namespace: str, local_queue: str) -> str:
        found = self._get("lq", LOCAL_QUEUES, namespace, local_queue)
        return (
            str(((found or {}).get("spec") or {}).get("clusterQueue") or "")
            if isinstance(found, dict)
            else ""
        )

    def place(self, workload: Obj, own: Sequence[Obj]) -> QueuePlace:
        """Where ``workload`` waits; ``own``: this operator's Workloads."""
        namespace, name = _name(workload)
        local = str((workload.get("spec") or {}).get("queueName") or "")
        cluster = self._cluster_queue_of(namespace, local)
        listed = self._get("lq-pending", PENDING_IN_LOCAL, namespace, local, "pendingworkloads")
        if isinstance(listed, ApiError):
            return self._counted(workload, own, local, cluster, f"Kueue's visibility API: {listed}")
        items = listed.get("items") or []
        mine = next((i for i in items if _name(i) == (namespace, name)), None)
        if mine is None:
            return self._counted(
                workload, own, local, cluster, "Kueue's visibility API does not list it yet"
            )
        cq_position = int(mine.get("positionInClusterQueue") or 0)
        place = QueuePlace(
            local, cluster, int(mine.get("positionInLocalQueue") or 0) + 1, cq_position + 1
        )
        if cq_position == 0 or not cluster:
            return place
        if cq_position > self.max_ahead:
            return place  # the estimate says how many of those ahead it read: none
        ahead = self._ahead(cluster, cq_position, own)
        return QueuePlace(
            place.local_queue, cluster, place.local_position, place.cluster_position, ahead
        )

    def _ahead(self, cluster: str, position: int, own: Sequence[Obj]) -> tuple[Obj, ...]:
        listed = self._get("cq-pending", PENDING_IN_CLUSTER, None, cluster, "pendingworkloads")
        if isinstance(listed, ApiError):
            return ()
        cached = {_name(w): w for w in own}
        out = []
        for item in listed.get("items") or []:
            if int(item.get("positionInClusterQueue") or 0) >= position:
                continue
            key = _name(item)
            found = cached.get(key)
            if found is None:
                got = self._get("wl", WORKLOADS, key[0], key[1])
                found = got if isinstance(got, dict) else None
            if found is not None:
                out.append(found)
        return tuple(out)

    def _counted(
        self, workload: Obj, own: Sequence[Obj], local: str, cluster: str, why: str
    ) -> QueuePlace:
        """The positions among this operator's own pending Workloads, in Kueue's
        order: the higher priority first, then the older, then (created in the
        same second) the lower uid, as Kueue v0.17 breaks the tie."""

        def order(w: Obj) -> tuple[int, str, str]:
            spec = w.get("spec") or {}
            return (
                -int(spec.get("priority") or 0),
                str(w["metadata"].get("creationTimestamp") or ""),
                str(w["metadata"].get("uid") or _name(w)[1]),
            )

        same_cq = [
            w
            for w in own
            if _pending(w)
            and self._cluster_queue_of(
                _name(w)[0], str((w.get("spec") or {}).get("queueName") or "")
            )
            == cluster
        ]
        queue = sorted(same_cq, key=order)
        key = order(workload)
        ahead = tuple(w for w in queue if order(w) < key)
        in_local = [w for w in ahead if (w.get("spec") or {}).get("queueName") == local]
        note = f"positions count only this operator's jobs: {why}"
        return QueuePlace(local, cluster, len(in_local) + 1, len(ahead) + 1, ahead, note)
