"""The statuses a kubelet writes, built without I/O: each container's state,
the pod's phase and conditions, and an Event's body. :mod:`kubelet` writes
them through the API (its docstring lists the kubelet source each follows).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from t9k_operator.builders.common import DEFAULT_CONTAINER

Obj = dict[str, Any]

# Conditions only the kubelet writes; any other (DisruptionTarget, a readiness
# gate's) is kept as it is (generateAPIPodStatus).
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_container(pod: Obj) -> str:
    """The container ``kubectl logs`` picks without ``-c``: the one the pod's
    ``kubectl.kubernetes.io/default-container`` annotation names, else the
    spec's first (the KWOK stage ``pod-finish`` ends the same one)."""
    names = [c["name"] for c in pod["spec"]["containers"]]
    named = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER)
    return str(named) if named in names else names[0]


def pod_ip(uid: str) -> str:
    """A pod address of its own, from its uid (10.244.0.0/16, as a CNI's)."""
    digest = hashlib.blake2b(uid.encode(), digest_size=2).digest()
    return f"10.244.{digest[0]}.{max(digest[1], 1)}"


def image_of(pod: Obj, container: str) -> str:
    """The image of the pod's regular ``container``."""
    return next(
        str(c.get("image", "")) for c in pod["spec"]["containers"] if c["name"] == container
    )


def node_ip(node: str) -> str:
    """An address of a node's own from its name (172.18.0.0/16, as a kind
    cluster's nodes have), for a node that reports no InternalIP."""
    digest = hashlib.blake2b(node.encode(), digest_size=2).digest()
    return f"172.18.{digest[0]}.{max(digest[1], 2)}"


def native_sidecar(container: Obj) -> bool:
    return container.get("restartPolicy") == "Always"


def phase_of(statuses: Iterable[Obj]) -> str:
    """A pod's phase from its regular containers' statuses, as ``getPhase``
    reaches it for a pod with restartPolicy Never whose init containers have
    all completed."""
    running = stopped = succeeded = waiting = 0
    for s in statuses:
        state = s.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"].get("exitCode") == 0
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    return "Succeeded" if stopped == succeeded else "Failed"


def _container(c: Obj, state: Obj, *, ready: bool, restart_count: int = 0) -> Obj:
    return {
        "name": c["name"],
        "image": c.get("image", ""),
        "imageID": "",
        "ready": ready,
        "started": ready,
        "restartCount": restart_count,
        "state": state,
    }


def running(c: Obj, started: str, restart_count: int = 0) -> Obj:
    """A container that runs, since ``started``."""
    return _container(
        c, {"running": {"startedAt": started}}, ready=True, restart_count=restart_count
    )


def ended(
    c: Obj,
    code: int,
    started: str,
    *,
    reason: str | None = None,
    message: str | None = None,
    restart_count: int = 0,
) -> Obj:
    """A container that exited with ``code`` (reason ``Completed`` for 0, else
    ``Error``, unless given)."""
    terminated: Obj = {
        "exitCode": code,
        "reason": reason or ("Completed" if code == 0 else "Error"),
        "startedAt": started,
        "finishedAt": now(),
    }
    if message:
        terminated["message"] = message
    return _container(c, {"terminated": terminated}, ready=False, restart_count=restart_count)


def waiting(c: Obj, reason: str, message: str = "") -> Obj:
    """A container that waits with ``reason``."""
    state = {"reason": reason} | ({"message": message} if message else {})
    return _container(c, {"waiting": state}, ready=False)


def exited(
    pod: Obj,
    target: str,
    code: int,
    started: str,
    *,
    keep: set[str],
    reason: str | None,
    message: str | None,
    restart_count: int,
) -> list[Obj]:
    """The regular containers once ``target`` exited with ``code``: those in
    ``keep`` running on, every other exited 0."""
    out = []
    for c in pod["spec"]["containers"]:
        if c["name"] in keep:
            out.append(running(c, started, restart_count))
        elif c["name"] == target:
            out.append(
                ended(c, code, started, reason=reason, message=message, restart_count=restart_count)
            )
        else:
            out.append(ended(c, 0, started, restart_count=restart_count))
    return out


def disruption(message: str) -> Obj:
    """The condition kubelet's eviction manager adds to a pod it evicts."""
    return {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "TerminationByKubelet",
        "message": message,
        "lastTransitionTime": now(),
    }


def init_statuses(pod: Obj, started: str, *, sidecars_run: bool) -> list[Obj]:
    """The init containers' statuses: each regular one exited 0, each native
    sidecar running while ``sidecars_run``, else exited 0."""
    out = []
    for c in pod["spec"].get("initContainers") or []:
        if native_sidecar(c) and sidecars_run:
            out.append(running(c, started))
        else:
            out.append(ended(c, 0, started))
    return out


def conditions(
    old: Mapping[str, Any], phase: str, *, ready: bool, sandbox: bool, extra: tuple[Obj, ...]
) -> list[Obj]:
    """The pod's conditions: those the kubelet does not own kept (``extra``
    added or replacing theirs), the kubelet's written anew, each keeping its
    time while its status stays. A pod whose containers wait (Pending) is not
    ready for ``ContainersNotReady``, one whose containers ended for
    ``PodCompleted``."""
    at = now()
    was = {c["type"]: c for c in old.get("conditions") or []}
    kept = [c for t, c in was.items() if t not in (*KUBELET_CONDITIONS, "PodScheduled")]
    kept = [c for c in kept if c["type"] not in {e["type"] for e in extra}] + list(extra)

    def condition(type_: str, true: bool, why: str | None = None) -> Obj:
        status = "True" if true else "False"
        before = was.get(type_) or {}
        same = before.get("status") == status and before.get("lastTransitionTime")
        out = {"type": type_, "status": status, "lastTransitionTime": same or at}
        if why:
            out["reason"] = why
        return out

    done = None if ready else "ContainersNotReady" if phase == "Pending" else "PodCompleted"
    return [
        *kept,
        condition("PodReadyToStartContainers", sandbox),
        condition("Initialized", True),
        condition("Ready", ready, done),
        condition("ContainersReady", ready, done),
        condition("PodScheduled", True),
    ]


def pod_status(
    pod: Obj,
    host_ip: str,
    phase: str,
    containers: list[Obj],
    init_containers: list[Obj],
    *,
    ready: bool,
    reason: str | None,
    message: str | None,
    extra: tuple[Obj, ...],
    sandbox: bool,
) -> Obj:
    """The pod's status on its node at ``host_ip``: the containers' statuses
    sorted by name, as kubelet sorts them; without a ``sandbox`` (its volumes
    not mounted) no IP and PodReadyToStartContainers False
    (generateAPIPodStatus)."""
    old = pod.get("status") or {}
    ip = pod_ip(pod["metadata"]["uid"])
    status: Obj = {
        "phase": phase,
        "startTime": old.get("startTime") or now(),
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ip if sandbox else None,
        "podIPs": [{"ip": ip}] if sandbox else None,
        "qosClass": old.get("qosClass") or "BestEffort",
        "conditions": conditions(old, phase, ready=ready, sandbox=sandbox, extra=extra),
        "containerStatuses": _sorted(containers),
    }
    if init_containers:
        status["initContainerStatuses"] = _sorted(init_containers)
    if reason:
        status["reason"] = reason
        status["message"] = message or reason
    return status


def _sorted(statuses: list[Obj]) -> list[Obj]:
    return sorted(statuses, key=lambda s: str(s["name"]))


def event(pod: Obj, type_: str, reason: str, message: str) -> Obj:
    """An Event on ``pod`` from its node's kubelet, as kubelet's recorder
    sends one (source component ``kubelet``, host the node)."""
    meta, node, at = pod["metadata"], pod["spec"]["nodeName"], now()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "type": type_,
        "reason": reason,
        "message": message,
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "reportingComponent": "kubelet",
        "reportingInstance": node,
    }


def volume_refs(pod: Obj) -> list[tuple[str, str, Obj]]:
    """(volume, ``configmap`` or ``secret``, the reference) of each configMap
    or secret the pod's volumes (projected ones' sources too) read, in order."""
    out = []
    for v in pod["spec"].get("volumes") or []:
        sources = [v, *((v.get("projected") or {}).get("sources") or [])]
        for source in sources:
            if "configMap" in source:
                out.append((v["name"], "configmap", source["configMap"]))
            if "secret" in source:
                out.append((v["name"], "secret", source["secret"]))
    return out
