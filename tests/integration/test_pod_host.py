"""The pod host (tests/integration/podhost/) against what kubelet and the
container runtime give a pod, so the launch-path tests run the operator's pods
as a cluster would:

* runc's default /dev, no host devices, and the pod's ``/dev/shm``: one
  64 MiB tmpfs per pod, mounted into each of its containers (containerd's
  CRI), never the host's;
* one IPC namespace per pod, shared by its containers (the CRI sandbox's),
  and a UTS namespace with the pod's hostname;
* ``securityContext``: ``runAsUser``/``runAsGroup``/``supplementalGroups``/
  ``fsGroup`` (and ``fsGroup``'s ownership of the pod's volumes), the
  container's settings over the pod's;
* ``envFrom`` from ConfigMaps and Secrets, with ``prefix``, before ``env``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.podhost import Node
from tests.integration.podhost.host import PodFailed

SLEEP = ["sleep", "600"]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(
        tmp_path,
        objects=[
            {"kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"A": "1", "B": "2"}},
            {
                "kind": "Secret",
                "metadata": {"name": "creds"},
                "data": {"TOKEN": base64.b64encode(b"s3cret").decode()},
            },
        ],
    )
    yield n
    n.close()


def pod(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"hostname": name, "containers": containers, **spec},
    }


def sh(node_pod: Any, container: str, script: str) -> str:
    out = node_pod.exec(container, ["sh", "-c", script])
    assert out.returncode == 0, out.stderr
    return str(out.stdout).strip()


def test_dev_shm_is_the_runtimes_64_mib_and_no_host_device_shows(node: Node) -> None:
    run = node.run_pod(pod("shm", [{"name": "c", "image": "x", "command": SLEEP}]))
    # 64 MiB = 65536 KiB, as df reports a tmpfs's size.
    assert sh(run, "c", "df -k /dev/shm | tail -1 | awk '{print $2}'") == "65536"
    assert sh(run, "c", "stat -f -c %T /dev/shm") == "tmpfs"
    devices = set(sh(run, "c", "ls /dev").split())
    assert {"null", "zero", "random", "urandom", "tty", "shm", "pts", "ptmx"} <= devices
    assert not devices & {"sda", "vda", "kvm", "loop0", "mem"}
    assert sh(run, "c", "touch /sys/x 2>&1 || echo read-only").endswith("read-only")


def test_a_pods_containers_share_one_ipc_namespace_and_its_hostname(node: Node) -> None:
    both = [{"name": n, "image": "x", "command": SLEEP} for n in ("a", "b")]
    first = node.run_pod(pod("ipc", both))
    other = node.run_pod(pod("other", [{"name": "a", "image": "x", "command": SLEEP}]))
    ipc = {c: sh(first, c, "readlink /proc/self/ns/ipc") for c in ("a", "b")}
    assert ipc["a"] == ipc["b"]
    assert sh(other, "a", "readlink /proc/self/ns/ipc") != ipc["a"]
    # Shared memory made by one container is seen by the other, as in a pod.
    sh(first, "a", "echo hello > /dev/shm/x")
    assert sh(first, "b", "cat /dev/shm/x") == "hello"
    assert {sh(first, c, "hostname") for c in ("a", "b")} == {"ipc"}
    # Mount and PID namespaces stay per container.
    assert sh(first, "a", "readlink /proc/self/ns/pid") != sh(
        first, "b", "readlink /proc/self/ns/pid"
    )


def test_security_context_user_groups_and_fs_group(node: Node) -> None:
    containers = [
        {"name": "pod-level", "image": "x", "command": SLEEP},
        {
            "name": "own",
            "image": "x",
            "command": SLEEP,
            "securityContext": {"runAsUser": 2000, "runAsGroup": 3000},
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
        },
    ]
    run = node.run_pod(
        pod(
            "sc",
            containers,
            securityContext={"runAsUser": 1234, "supplementalGroups": [4000], "fsGroup": 5000},
            volumes=[{"name": "scratch", "emptyDir": {}}],
        )
    )
    assert sh(run, "pod-level", "id -u; id -g; id -G").split() == ["1234", "0", "0", "4000", "5000"]
    assert sh(run, "own", "id -u; id -g").split() == ["2000", "3000"]
    # fsGroup owns the volume: group 5000, setgid, and a new file inherits it.
    assert sh(run, "own", "stat -c '%g %A' /scratch") == "5000 drwxrwsrwx"
    assert sh(run, "own", "touch /scratch/f && stat -c %g /scratch/f") == "5000"
    # A non-root user has no capabilities: root's files stay closed to it.
    assert "Permission denied" in run.exec("own", ["cat", "/etc/shadow"]).stderr
    assert sh(run, "own", "echo $HOME") == "/"


def test_run_as_non_root_refuses_a_root_container(node: Node) -> None:
    with pytest.raises(PodFailed, match="runAsNonRoot"):
        node.run_pod(
            pod(
                "nonroot",
                [{"name": "c", "image": "x", "command": SLEEP}],
                securityContext={"runAsNonRoot": True},
            )
        )


def test_env_from_config_maps_and_secrets_then_env(node: Node) -> None:
    container = {
        "name": "c",
        "image": "x",
        "command": SLEEP,
        "envFrom": [
            {"configMapRef": {"name": "settings"}},
            {"secretRef": {"name": "creds"}, "prefix": "APP_"},
            {"configMapRef": {"name": "absent", "optional": True}},
        ],
        "env": [{"name": "B", "value": "from-env $(A)"}],
    }
    run = node.run_pod(pod("envfrom", [container]))
    assert sh(run, "c", 'echo "$A|$B|$APP_TOKEN"') == "1|from-env 1|s3cret"
    with pytest.raises(PodFailed, match="configmap missing not found"):
        node.run_pod(
            pod(
                "envfrom-missing",
                [{**container, "envFrom": [{"configMapRef": {"name": "missing"}}]}],
            )
        )
