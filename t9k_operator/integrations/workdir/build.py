"""A job's workdir: the ConfigMap that carries a packed directory, and what its
pods get to find it unpacked at their working directory (docs/workdir.md).

A job names its workdir in one place every kind has, its annotation
:data:`ANNOTATION` (the ConfigMap's name); the ConfigMap holds one key,
:data:`ARCHIVE_KEY`, a gzip'd tar (``t9k_operator/integrations/workdir/pack.py`` packs it). Every
pod of the job gets, from :func:`add_workdir`:

- the ConfigMap as a volume, read only by
- an init container, first of all, that unpacks it (``umask 0``: the files keep
  the modes they were packed with) into an emptyDir, with the training
  container's image, pull policy and securityContext (so the files belong to
  the user the training runs as);
- that emptyDir mounted at :data:`MOUNT_PATH` in every container, the same
  path on every pod of every kind (an ssh launcher's ``cd`` lands in it on the
  workers too), and as every container's ``workingDir`` unless it sets its
  own (a ``workingDir`` the user wrote wins; the files are still at
  :data:`MOUNT_PATH`).

Pure: no I/O, no clock.
"""

from __future__ import annotations

import base64
from typing import Any

from t9k_operator.builders.common import DEFAULT_CONTAINER, job_labels
from t9k_operator.objects import Obj, owner_reference

ANNOTATION = "batch.tensorstack.dev/workdir"
"""The job's annotation naming its workdir ConfigMap."""
MOUNT_PATH = "/t9k/workdir"
"""Where every replica finds the workdir, and runs."""
ARCHIVE_KEY = "workdir.tar.gz"
ARCHIVE_MOUNT = "/t9k/workdir-archive"
"""Where the init container reads the archive (the ConfigMap volume)."""
ARCHIVE_VOLUME = "t9k-workdir-archive"
VOLUME = "t9k-workdir"
INIT_CONTAINER = "t9k-workdir"
INIT_RESOURCES = {
    "requests": {"cpu": "10m", "memory": "16Mi"},
    "limits": {"cpu": "500m", "memory": "128Mi"},
}
"""Small and explicit, so namespaces whose quota demands requests and limits
accept the pod; the pod's effective request stays the training container's."""
UNPACK = (
    f"umask 0 && tar -xzf {ARCHIVE_MOUNT}/{ARCHIVE_KEY} -C {MOUNT_PATH} "
    f"|| {{ echo 't9k: cannot unpack the workdir into {MOUNT_PATH}: the image needs sh "
    "and tar with gzip' >&2; exit 1; }"
)


def config_map_name(job_name: str) -> str:
    return f"{job_name}-workdir"


def config_map(job: Obj, archive: bytes) -> Obj:
    """The ConfigMap carrying ``archive`` for ``job`` (as the API server
    returned it: its uid is the owner's), owned by the job and labelled as its
    children are, so the operator sees it."""
    meta = job["metadata"]
    name = (meta.get("annotations") or {}).get(ANNOTATION) or config_map_name(meta["name"])
    owner = owner_reference(job["apiVersion"], job["kind"], meta["name"], meta["uid"])
    # Created by the user, who may not update the job's finalizers, which a
    # blocking reference asks of them where OwnerReferencesPermissionEnforcement is on.
    owner.pop("blockOwnerDeletion")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": job_labels(job["kind"], meta["name"]),
            "ownerReferences": [owner],
        },
        "binaryData": {ARCHIVE_KEY: base64.b64encode(archive).decode()},
    }


def add_workdir(pod: Obj, config_map: str) -> None:
    """Give ``pod`` the workdir of ConfigMap ``config_map`` (see the module's
    docstring); a pod whose template already has the volume is left as it is."""
    spec = pod["spec"]
    volumes = spec.setdefault("volumes", [])
    if any(v.get("name") in (VOLUME, ARCHIVE_VOLUME) for v in volumes):
        return
    volumes.extend(
        [
            {"name": ARCHIVE_VOLUME, "configMap": {"name": config_map}},
            {"name": VOLUME, "emptyDir": {}},
        ]
    )
    containers: list[Obj] = spec.get("containers") or []
    source = _training(pod, containers)
    init: Obj = {
        "name": INIT_CONTAINER,
        "image": source.get("image"),
        "command": ["/bin/sh", "-c", UNPACK],
        "resources": {k: dict(v) for k, v in INIT_RESOURCES.items()},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [
            {"name": ARCHIVE_VOLUME, "mountPath": ARCHIVE_MOUNT, "readOnly": True},
            {"name": VOLUME, "mountPath": MOUNT_PATH},
        ],
    }
    for key in ("imagePullPolicy", "securityContext"):
        if source.get(key):
            init[key] = source[key]
    spec["initContainers"] = [init, *(spec.get("initContainers") or [])]
    for container in containers:
        mounts = container.setdefault("volumeMounts", [])
        if not any(m.get("mountPath") == MOUNT_PATH for m in mounts):
            mounts.append({"name": VOLUME, "mountPath": MOUNT_PATH})
        container.setdefault("workingDir", MOUNT_PATH)


def _training(pod: Obj, containers: list[Obj]) -> Any:
    """The container the kind marked as training (the default container), else the first."""
    named = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER)
    return next((c for c in containers if c.get("name") == named), containers[0])
