"""What ``--kueue`` and ``--gang`` need in the cluster before the operator
starts (so its informers list it at start): the priority classes, Kueue's
queues, and KWOK nodes for the pods a gang scheduler places (the local
cluster's four hold 110 pods each, its NODE_CAPACITY: the bench adds more of
the same shape for a quarter more pods than the run has)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from hack.cluster.handle import ROOT
from t9k_operator.builders.scheduling import priority_class
from t9k_operator.integrations.kueue import build as kueue_objects
from t9k_operator.integrations.kueue.integration import (
    POD_PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
)
from t9k_operator.kube import KubeClient
from t9k_operator.resources import NODES, Resource

from ..common.cluster import wait_until
from ..common.jobs import NAMESPACE
from ..common.log import log
from .integrations import (
    CLUSTER_QUEUE,
    CPU_MILLIS,
    FLAVOR,
    FLAVOR_LABELS,
    LOCAL_QUEUE,
    PRIORITY,
    Integrations,
)

KUEUE_API = f"{kueue_objects.GROUP}/{kueue_objects.VERSION}"
CLUSTER_QUEUES = Resource(
    kueue_objects.GROUP, kueue_objects.VERSION, "clusterqueues", "ClusterQueue", namespaced=False
)
LOCAL_QUEUES = Resource(kueue_objects.GROUP, kueue_objects.VERSION, "localqueues", "LocalQueue")
PODS_PER_NODE = 110
NODE_HEADROOM = 1.25


def nodes_to_add(pods: int, present: int) -> int:
    """KWOK nodes to add so that ``pods`` fit with :data:`NODE_HEADROOM` to spare."""
    return max(0, math.ceil(pods * NODE_HEADROOM / PODS_PER_NODE) - present)


def manifest_object(path: Path, name: str) -> dict[str, Any]:
    """The object ``name`` of the multi-document manifest ``path``."""
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc["metadata"]["name"] == name:
            return dict(doc)
    raise LookupError(f"no {name} in {path}")


def active(obj: dict[str, Any]) -> bool:
    """Whether a Kueue queue's condition ``Active`` is True."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Active" and c.get("status") == "True" for c in conditions)


def kueue_queues(pods: int) -> list[tuple[Resource, dict[str, Any]]]:
    """The ResourceFlavor (with node labels), the ClusterQueue (open to the
    bench's namespace, with CPU quota for all ``pods`` at once) and the
    LocalQueue the bench's jobs wait in, in the order to create them."""

    def obj(kind: str, name: str, **fields: Any) -> dict[str, Any]:
        return {"apiVersion": KUEUE_API, "kind": kind, "metadata": {"name": name}, **fields}

    namespaces = {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}}
    quota = [{"name": "cpu", "nominalQuota": f"{pods * CPU_MILLIS}m"}]
    return [
        (RESOURCE_FLAVORS, obj("ResourceFlavor", FLAVOR, spec={"nodeLabels": FLAVOR_LABELS})),
        (
            CLUSTER_QUEUES,
            obj(
                "ClusterQueue",
                CLUSTER_QUEUE,
                spec={
                    "namespaceSelector": namespaces,
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [{"name": FLAVOR, "resources": quota}],
                        }
                    ],
                },
            ),
        ),
        (LOCAL_QUEUES, obj("LocalQueue", LOCAL_QUEUE, spec={"clusterQueue": CLUSTER_QUEUE})),
    ]


def prepare(client: KubeClient, using: Integrations, pods: int, timeout: float = 60) -> None:
    """What the integrations need, made before the operator starts (so its
    informers list it at start): with ``--kueue`` the WorkloadPriorityClass of
    :data:`PRIORITY` (from manifests/kueue; with ``--gang`` too, the
    PriorityClass of that name from manifests/scheduling, which the pods then
    name) and the queues, Active; with ``--gang`` the nodes for ``pods``."""
    if using.kueue:
        name = priority_class(PRIORITY)
        wpcs = ROOT / "manifests" / "kueue" / "workload-priority-classes.yaml"
        client.create(WORKLOAD_PRIORITY_CLASSES, manifest_object(wpcs, name))
        if using.gang:
            pcs = ROOT / "manifests" / "scheduling" / "priority-classes.yaml"
            client.create(POD_PRIORITY_CLASSES, manifest_object(pcs, name))
        for resource, body in kueue_queues(pods):
            client.create(resource, body, NAMESPACE if resource.namespaced else None)
        wait_until(
            "the ClusterQueue Active",
            lambda: active(client.get(CLUSTER_QUEUES, CLUSTER_QUEUE)),
            timeout,
        )
        wait_until(
            "the LocalQueue Active",
            lambda: active(client.get(LOCAL_QUEUES, LOCAL_QUEUE, NAMESPACE)),
            timeout,
        )
    if using.gang:
        add_nodes(client, pods, timeout)


def add_nodes(client: KubeClient, pods: int, timeout: float) -> None:
    """KWOK nodes like the cluster's first (its labels, annotations and
    capacity), as many as :func:`nodes_to_add` says, Ready."""
    nodes = client.list(NODES)["items"]
    first = next(n for n in nodes if n["metadata"]["name"] == "kwok-node-0")
    capacity = int(first["status"]["capacity"]["pods"])
    if capacity != PODS_PER_NODE:
        raise RuntimeError(
            f"kwok-node-0 holds {capacity} pods, the bench counts on {PODS_PER_NODE}"
        )
    names = [f"kwok-bench-node-{i}" for i in range(nodes_to_add(pods, len(nodes)))]
    for name in names:
        meta = first["metadata"]
        client.create(
            NODES,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": dict(meta.get("annotations") or {}),
                    "labels": {**meta["labels"], "kubernetes.io/hostname": name},
                },
                "status": {
                    "capacity": first["status"]["capacity"],
                    "allocatable": first["status"]["allocatable"],
                },
            },
        )

    def ready() -> bool:
        by_name = {n["metadata"]["name"]: n for n in client.list(NODES)["items"]}
        return all(
            any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (by_name[n].get("status") or {}).get("conditions") or []
            )
            for n in names
        )

    if names:
        log(f"added {len(names)} KWOK nodes for {pods} pods")
        wait_until(f"{len(names)} KWOK nodes Ready", ready, timeout)
