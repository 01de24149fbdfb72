"""Drive a pod's status by hand, the way a kubelet reports it.

Pods that carry the annotation ``kwok.t9k.dev/manual: "true"`` are left alone
by the KWOK stages (hack/kwok/stages.yaml); a test moves them to Running,
Succeeded or Failed with chosen exit codes and restart counts through the
pod's status subresource, exactly where a kubelet writes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from t9k_operator.kube import KubeClient
from t9k_operator.resources import PODS

MANUAL = {"kwok.t9k.dev/manual": "true"}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kubelet:
    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def _containers(self, namespace: str, name: str) -> tuple[dict[str, Any], list[str]]:
        pod = self.client.get(PODS, name, namespace)
        return pod, [c["name"] for c in pod["spec"]["containers"]]

    def _write(self, namespace: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
        return self.client.patch(PODS, name, {"status": status}, namespace, subresource="status")

    def run(self, namespace: str, name: str, *, restart_count: int = 0) -> dict[str, Any]:
        pod, containers = self._containers(namespace, name)
        now = _now()
        return self._write(
            namespace,
            name,
            {
                "phase": "Running",
                "startTime": pod.get("status", {}).get("startTime") or now,
                "podIP": "10.244.0.99",
                "conditions": [
                    {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                    {"type": "Ready", "status": "True", "lastTransitionTime": now},
                ],
                "containerStatuses": [
                    {
                        "name": c,
                        "image": "x",
                        "imageID": "",
                        "ready": True,
                        "started": True,
                        "restartCount": restart_count,
                        "state": {"running": {"startedAt": now}},
                    }
                    for c in containers
                ],
            },
        )

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
    ) -> dict[str, Any]:
        """End the pod. ``exit_code`` goes to ``container`` (default: the first);
        other containers exit 0. Non-zero ends the pod Failed."""
        pod, containers = self._containers(namespace, name)
        target = container or containers[0]
        now = _now()
        started = pod.get("status", {}).get("startTime") or now
        statuses = []
        for c in containers:
            code = exit_code if c == target else 0
            terminated: dict[str, Any] = {
                "exitCode": code,
                "reason": reason or ("Completed" if code == 0 else "Error"),
                "startedAt": started,
                "finishedAt": now,
            }
            if message and c == target:
                terminated["message"] = message
            statuses.append(
                {
                    "name": c,
                    "image": "x",
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": restart_count,
                    "state": {"terminated": terminated},
                }
            )
        status: dict[str, Any] = {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "startTime": started,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "PodCompleted",
                    "lastTransitionTime": now,
                },
            ],
            "containerStatuses": statuses,
        }
        if pod_reason:
            status["reason"] = pod_reason
            status["message"] = message or pod_reason
        return self._write(namespace, name, status)

    def succeed(self, namespace: str, name: str, **kw: Any) -> dict[str, Any]:
        return self.terminate(namespace, name, exit_code=0, **kw)

    def fail(self, namespace: str, name: str, exit_code: int = 1, **kw: Any) -> dict[str, Any]:
        return self.terminate(namespace, name, exit_code=exit_code, **kw)

    def evict(self, namespace: str, name: str) -> dict[str, Any]:
        """Failed without an exit code, as when the node evicts the pod."""
        _pod, containers = self._containers(namespace, name)
        return self._write(
            namespace,
            name,
            {
                "phase": "Failed",
                "reason": "Evicted",
                "message": "The node was low on resource: memory.",
                "containerStatuses": [
                    {
                        "name": c,
                        "image": "x",
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {
                            "terminated": {
                                "exitCode": 137,
                                "reason": "ContainerStatusUnknown",
                                "finishedAt": _now(),
                            }
                        },
                    }
                    for c in containers
                ],
            },
        )
