"""Drive a pod's status by hand, the way a kubelet reports it.

Pods that carry the annotation ``kwok.t9k.dev/manual: "true"`` are left alone
by the KWOK stages (hack/kwok/stages.yaml); a test moves them to Running,
Succeeded or Failed with chosen exit codes and restart counts through the
pod's status subresource, exactly where a kubelet writes.

What a real kubelet does, and this stand-in does too (the kubelet's source is
pkg/kubelet/kubelet_pods.go of Kubernetes 1.34):

* It runs only pods bound to its node: ``run`` and ``terminate`` wait for a
  scheduler's binding (``spec.nodeName``) and fail the test without one.
* ``containerStatuses`` and ``initContainerStatuses`` are sorted by container
  name, not listed in the spec's order (``convertToAPIContainerStatuses``
  ends with ``sort.Sort(kubetypes.SortedContainerStatuses(statuses))``).
* Every pod has an IP of its own and its node's ``hostIP``/``hostIPs``
  (``generateAPIPodStatus``); the stand-in gives the node's InternalIP (or,
  for a KWOK node that reports none, an address of that node's own) and an
  address made from the pod's uid.
* The kubelet writes its own conditions, ``PodScheduled`` among them, which it
  re-asserts ``True`` (``generateAPIPodStatus``: "set all Kubelet-owned
  conditions"), keeping the time it first became true.
* The phase follows ``getPhase``: ``Running`` while any regular container
  runs, whatever the others' exit codes; once every regular container has
  terminated, ``Succeeded`` if all exited 0, else ``Failed`` (restartPolicy
  Never, as the operator's pods have). Native sidecars (init containers with
  ``restartPolicy: Always``) do not count, and run until the regular
  containers have ended, when the kubelet stops them; regular init containers
  have terminated with 0 before any regular container started.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from t9k_operator.builders.common import DEFAULT_CONTAINER
from t9k_operator.kube import KubeClient
from t9k_operator.resources import NODES, PODS

MANUAL = {"kwok.t9k.dev/manual": "true"}
BIND_TIMEOUT = 30.0
"""How long ``run``/``terminate`` wait for a scheduler to bind the pod."""
# Conditions only the kubelet writes; any other (DisruptionTarget, a readiness
# gate's) is kept as it is (generateAPIPodStatus).
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_container(pod: dict[str, Any]) -> str:
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


def native_sidecar(container: dict[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def phase_of(statuses: Iterable[dict[str, Any]]) -> str:
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


def _sorted(statuses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(statuses, key=lambda s: str(s["name"]))


class Kubelet:
    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def _bound(self, namespace: str, name: str) -> dict[str, Any]:
        """The pod once a scheduler has bound it (a kubelet sees no other)."""
        deadline = time.monotonic() + BIND_TIMEOUT
        while True:
            pod = self.client.get(PODS, name, namespace)
            if pod["spec"].get("nodeName"):
                return pod
            if time.monotonic() > deadline:
                raise AssertionError(f"pod {namespace}/{name} was never bound to a node")
            time.sleep(0.1)

    def _host_ip(self, node: str) -> str:
        """The node's InternalIP (the local cluster's KWOK nodes all report
        127.0.0.1, where KWOK serves their kubelet endpoint); for a node that
        reports none, an address of the node's own from its name
        (172.18.0.0/16, as a kind cluster's nodes have)."""
        addresses = (self.client.get(NODES, node).get("status") or {}).get("addresses") or []
        for a in addresses:
            if a.get("type") == "InternalIP":
                return str(a["address"])
        digest = hashlib.blake2b(node.encode(), digest_size=2).digest()
        return f"172.18.{digest[0]}.{max(digest[1], 2)}"

    def _write(
        self,
        pod: dict[str, Any],
        phase: str,
        containers: list[dict[str, Any]],
        init_containers: list[dict[str, Any]],
        *,
        ready: bool,
        reason: str | None = None,
        message: str | None = None,
        extra: tuple[dict[str, Any], ...] = (),
    ) -> dict[str, Any]:
        meta, old = pod["metadata"], pod.get("status") or {}
        now = _now()
        was = {c["type"]: c for c in old.get("conditions") or []}
        host_ip = self._host_ip(pod["spec"]["nodeName"])
        ip = pod_ip(meta["uid"])
        kept = [c for t, c in was.items() if t not in (*KUBELET_CONDITIONS, "PodScheduled")]
        kept = [c for c in kept if c["type"] not in {e["type"] for e in extra}] + list(extra)

        def condition(type_: str, true: bool, why: str | None = None) -> dict[str, Any]:
            """A kubelet-owned condition; its time moves only when its status does."""
            status = "True" if true else "False"
            before = was.get(type_) or {}
            same = before.get("status") == status and before.get("lastTransitionTime")
            out = {"type": type_, "status": status, "lastTransitionTime": same or now}
            if why:
                out["reason"] = why
            return out

        done = None if ready else "PodCompleted"
        status: dict[str, Any] = {
            "phase": phase,
            "startTime": old.get("startTime") or now,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": old.get("qosClass") or "BestEffort",
            "conditions": [
                *kept,
                condition("PodReadyToStartContainers", True),
                condition("Initialized", True),
                condition("Ready", ready, done),
                condition("ContainersReady", ready, done),
                condition("PodScheduled", True),
            ],
            "containerStatuses": _sorted(containers),
        }
        if init_containers:
            status["initContainerStatuses"] = _sorted(init_containers)
        if reason:
            status["reason"] = reason
            status["message"] = message or reason
        return self.client.patch(
            PODS, meta["name"], {"status": status}, meta["namespace"], subresource="status"
        )

    @staticmethod
    def _running(c: dict[str, Any], started: str, restart_count: int = 0) -> dict[str, Any]:
        return {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": True,
            "started": True,
            "restartCount": restart_count,
            "state": {"running": {"startedAt": started}},
        }

    @staticmethod
    def _ended(
        c: dict[str, Any],
        code: int,
        started: str,
        *,
        reason: str | None = None,
        message: str | None = None,
        restart_count: int = 0,
    ) -> dict[str, Any]:
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": reason or ("Completed" if code == 0 else "Error"),
            "startedAt": started,
            "finishedAt": _now(),
        }
        if message:
            terminated["message"] = message
        return {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": False,
            "started": False,
            "restartCount": restart_count,
            "state": {"terminated": terminated},
        }

    def _init_statuses(
        self, pod: dict[str, Any], started: str, *, sidecars_run: bool
    ) -> list[dict[str, Any]]:
        out = []
        for c in pod["spec"].get("initContainers") or []:
            if native_sidecar(c) and sidecars_run:
                out.append(self._running(c, started))
            else:
                out.append(self._ended(c, 0, started))
        return out

    def run(self, namespace: str, name: str, *, restart_count: int = 0) -> dict[str, Any]:
        """Every container running (native sidecars too), once the pod is bound."""
        pod = self._bound(namespace, name)
        started = (pod.get("status") or {}).get("startTime") or _now()
        containers = [self._running(c, started, restart_count) for c in pod["spec"]["containers"]]
        inits = self._init_statuses(pod, started, sidecars_run=True)
        return self._write(pod, "Running", containers, inits, ready=True)

    def terminate(
        self,
        namespace: str,
        name: str,
        *,
        exit_code: int = 0,
        container: str | None = None,
        restart_count: int = 0,
        reason: str | None = None,
        pod_reason: str | None = None,
        message: str | None = None,
        running: Iterable[str] = (),
    ) -> dict[str, Any]:
        """End ``container`` (default: the pod's default container, as
        ``kubectl.kubernetes.io/default-container`` names it, which the operator
        sets to the training container; else the spec's first) with ``exit_code``; the
        other regular containers exit 0, except those named in ``running``
        (sidecars), which go on running and keep the pod Running. Native
        sidecars stop once no regular container runs."""
        pod = self._bound(namespace, name)
        spec_containers = pod["spec"]["containers"]
        target = container or default_container(pod)
        keep = set(running)
        started = (pod.get("status") or {}).get("startTime") or _now()
        statuses = []
        for c in spec_containers:
            if c["name"] in keep:
                statuses.append(self._running(c, started, restart_count))
            elif c["name"] == target:
                statuses.append(
                    self._ended(
                        c,
                        exit_code,
                        started,
                        reason=reason,
                        message=message,
                        restart_count=restart_count,
                    )
                )
            else:
                statuses.append(self._ended(c, 0, started, restart_count=restart_count))
        phase = phase_of(statuses)
        inits = self._init_statuses(pod, started, sidecars_run=phase == "Running")
        return self._write(
            pod,
            phase,
            statuses,
            inits,
            ready=False,
            reason=pod_reason,
            message=message if pod_reason else None,
        )

    def succeed(self, namespace: str, name: str, **kw: Any) -> dict[str, Any]:
        return self.terminate(namespace, name, exit_code=0, **kw)

    def fail(self, namespace: str, name: str, exit_code: int = 1, **kw: Any) -> dict[str, Any]:
        return self.terminate(namespace, name, exit_code=exit_code, **kw)

    def evict(self, namespace: str, name: str) -> dict[str, Any]:
        """Failed without an exit code of the training's own, as when the node
        evicts the pod under resource pressure: every container killed (137),
        the pod's reason ``Evicted``, and first the condition
        ``DisruptionTarget`` (reason ``TerminationByKubelet``) that kubelet's
        eviction manager adds with the same message
        (pkg/kubelet/eviction/eviction_manager.go, evictPod)."""
        pod = self._bound(namespace, name)
        message = (
            "The node was low on resource: memory. Threshold quantity: 100Mi, available: 52Mi."
        )
        disruption = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "TerminationByKubelet",
            "message": message,
            "lastTransitionTime": _now(),
        }
        started = (pod.get("status") or {}).get("startTime") or _now()
        statuses = [self._ended(c, 137, started, reason="Error") for c in pod["spec"]["containers"]]
        inits = self._init_statuses(pod, started, sidecars_run=False)
        return self._write(
            pod,
            "Failed",
            statuses,
            inits,
            ready=False,
            reason="Evicted",
            message=message,
            extra=(disruption,),
        )
