"""The local cluster's container logs (hack/third_party/kwok/pod_logs.py), read as every
client reads them: ``pods/log`` on the API server, which asks KWOK's kubelet
endpoint. Each container of a pod has its own log, each line naming the pod and
the container; a pod created again under the same name has logs of its own.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from t9k_operator.kube import BadRequest, KubeClient, NotFound
from t9k_operator.resources import PODS
from tests.integration.cluster import wait_for
from tests.integration.test_cli import LOG_TEXTS, log_lines

# kubelet's log reader writes a line's timestamp in RFC 3339 with nanoseconds,
# fixed width (k8s.io/cri-client/pkg/logs: timeFormatOut = RFC3339NanoFixed).
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z")


def pod(name: str, containers: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {"kwok.t9k.dev/run-duration": "600s"}},
        "spec": {"containers": [{"name": c, "image": "busybox"} for c in containers], **spec},
    }


def running(admin: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    def phase() -> dict[str, Any] | None:
        got: dict[str, Any] = admin.get(PODS, name, namespace)
        return got if (got.get("status") or {}).get("phase") == "Running" else None

    return wait_for(phase, 60, f"pod {name} Running")


def read(admin: KubeClient, namespace: str, name: str, container: str, **opts: Any) -> list[str]:
    return list(admin.pod_logs(namespace, name, container=container, **opts))


def test_every_container_of_a_pod_has_its_own_log(admin: KubeClient, namespace: str) -> None:
    init = [
        {"name": "fetch", "image": "busybox"},
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},  # a sidecar
    ]
    admin.create(PODS, pod("many", ["exporter", "main"], initContainers=init), namespace)
    running(admin, namespace, "many")
    for container in ("fetch", "proxy", "exporter", "main"):
        assert read(admin, namespace, "many", container) == log_lines("many", container)
    stamped = read(admin, namespace, "many", "main", timestamps=True)
    stamps = [line.split(" ", 1)[0] for line in stamped]
    assert all(STAMP.fullmatch(s) for s in stamps), stamped
    assert stamps == sorted(set(stamps))  # one line after another
    # The API server itself refuses a container the pod does not have.
    with pytest.raises(BadRequest, match="container nope is not valid for pod many"):
        read(admin, namespace, "many", "nope")


def test_a_pod_created_again_under_its_name_has_logs_of_its_own(
    admin: KubeClient, namespace: str
) -> None:
    first = admin.create(PODS, pod("again", ["old"]), namespace)
    running(admin, namespace, "again")
    assert read(admin, namespace, "again", "old") == log_lines("again", "old")
    admin.delete(PODS, "again", namespace, grace_period_seconds=0)

    def gone() -> bool:
        try:
            admin.get(PODS, "again", namespace)
        except NotFound:
            return True
        return False

    wait_for(gone, 60, "the first pod gone")
    second = admin.create(PODS, pod("again", ["new"]), namespace)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    running(admin, namespace, "again")
    assert read(admin, namespace, "again", "new") == log_lines("again", "new")
    assert [line.split(" ", 1)[1] for line in read(admin, namespace, "again", "new")] == LOG_TEXTS
