"""The volumes of a Deployment's pod run by incluster.py, laid out as kubelet
lays them out: the ServiceAccount volume the admission plugin adds (unless
the pod says ``automountServiceAccountToken: false``), and the pod's own
emptyDir and ConfigMap volumes.

Needs root (tmpfs mounts).
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS
from tests.integration.podhost.volumes import atomic_write, payload

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def mount_tmpfs(target: Path, size: str) -> None:
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)],
        check=True,
        capture_output=True,
    )


def service_account(target: Path, token: str, ca: bytes, namespace: str) -> dict[str, Any]:
    """The projected volume kubelet makes for the ServiceAccount (token, CA,
    namespace; defaultMode 0644) on a tmpfs at ``target``: its read-only mount."""
    target.mkdir()
    mount_tmpfs(target, "1m")
    atomic_write(
        target,
        {
            "token": (token.encode(), 0o644),
            "ca.crt": (ca, 0o644),
            "namespace": (namespace.encode(), 0o644),
        },
    )
    return {"source": str(target), "path": SA_DIR, "readOnly": True}


def pod_volumes(
    pod_dir: Path,
    pod_spec: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    namespace: str,
    client: KubeClient | None,
) -> tuple[list[dict[str, Any]], list[Path]]:
    """The container's mounts of the pod's volumes, and the tmpfs mounts made.

    An emptyDir is a directory of mode 0777 (``setupDir``), or with medium
    Memory a tmpfs (its ``sizeLimit`` the tmpfs's size) whose root is
    drwxrwxrwt. A ConfigMap volume holds the ConfigMap of the pod's
    namespace, read from the API server with ``client`` as kubelet reads it,
    in the atomic writer's layout, and is mounted read-only whatever the
    container asks (kubelet has done so since 1.9.4)."""
    made: dict[str, Path] = {}
    read_only: set[str] = set()
    tmpfs: list[Path] = []
    for vol in pod_spec.get("volumes") or []:
        target = pod_dir / "volumes" / vol["name"]
        target.mkdir(parents=True)
        made[vol["name"]] = target
        if "configMap" in vol:
            if client is None:
                raise AssertionError(f"volume {vol['name']}: a ConfigMap is read with a client")
            source = vol["configMap"]
            obj = client.get(CONFIGMAPS, source["name"], namespace)
            data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
            binary = obj.get("binaryData") or {}
            data.update({k: base64.b64decode(v) for k, v in binary.items()})
            target.chmod(0o777)
            atomic_write(target, payload(data, source, 0o644))
            read_only.add(vol["name"])
        elif "emptyDir" in vol:
            empty = vol["emptyDir"] or {}
            if empty.get("medium") == "Memory":
                size = str(empty.get("sizeLimit", "64Mi")).replace("Mi", "m").replace("Ki", "k")
                mount_tmpfs(target, size)
                tmpfs.append(target)
                target.chmod(0o1777)
            else:
                target.chmod(0o777)
        else:
            raise AssertionError(f"a Deployment's pod here cannot have volume {vol}")
    mounts = [
        {
            "source": str(made[m["name"]]),
            "path": m["mountPath"],
            "readOnly": bool(m.get("readOnly")) or m["name"] in read_only,
        }
        for m in container.get("volumeMounts") or []
    ]
    return mounts, tmpfs
