"""TensorBoard builders: a TensorBoard's pod and Service, and the TensorBoard a
T9k job with ``spec.tensorboardSpec`` owns.

Pure functions, like the replicas' builders. The pod runs one container,
``tensorboard``, with the spec's image and resources and the command
:func:`command` renders::

    tensorboard --logdir_spec <name>:<path>,<name>:<path>,... --host 0.0.0.0 --port 6006

where the run groups are the places of logs ``sources.py`` reads from
either layout: claims mounted read-only, S3 URIs (the Secret's keys as
environment variables by reference), HTTP files that a second container,
``fetch``, keeps copied into a volume both share.

The pod restarts its containers itself (``restartPolicy: Always``): TensorBoard
is a server, not a task that ends. It carries a hash of its spec, so the
reconciler can tell a pod built from an older spec and replace it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from t9k_operator.api.tensorboard import (
    API_VERSION,
    KIND,
    SERVICE_SUFFIX,
    TensorBoardObject,
    TensorBoardSpec,
)
from t9k_operator.builders.common import (
    MANAGED_BY,
    OPERATOR,
    Job,
    child_metadata,
    job_labels,
)
from t9k_operator.integrations.tensorboard import fetch, sources
from t9k_operator.integrations.tensorboard.sources import (
    HTTP_ROOT,
    MOUNT_ROOT,
    Run,
    claims,
    runs,
)
from t9k_operator.objects import Obj

__all__ = ["MOUNT_ROOT", "Run", "claims", "runs"]  # long imported from here
PORT = 6006
PORT_NAME = "http"
CONTAINER = "tensorboard"
FETCHER = "fetch"
"""The container that keeps the HTTP files copied (``fetch.py``)."""
FETCH_INTERVAL = 30
HTTP_VOLUME = "http"
TENSORBOARD = "t9k.dev/tensorboard"
"""Label of a TensorBoard's pod and Service: the TensorBoard's name."""
SPEC_HASH = "t9k.dev/spec-hash"
"""Annotation of a TensorBoard's pod: a hash of the pod spec it was built with."""


def command(spec: TensorBoardSpec, mount_root: str = MOUNT_ROOT) -> list[str]:
    """The TensorBoard container's command (``mount_root`` is where the claims are)."""
    logdir_spec = ",".join(f"{run.name}:{run.path}" for run in runs(spec, mount_root))
    return ["tensorboard", "--logdir_spec", logdir_spec, "--host", "0.0.0.0", "--port", str(PORT)]


def fetcher(spec: TensorBoardSpec) -> Obj | None:
    """The container that keeps the HTTP files copied (None: no logDir.http)."""
    urls = sources.http_urls(spec)
    if not urls:
        return None
    program = Path(fetch.__file__).read_text()
    return {
        "name": FETCHER,
        "image": spec.image,
        "command": ["python3", "-c", program, HTTP_ROOT, str(FETCH_INTERVAL), *urls],
        "volumeMounts": [{"name": HTTP_VOLUME, "mountPath": HTTP_ROOT}],
    }


def service_name(name: str) -> str:
    """The Service (and the pod) of the TensorBoard ``name``."""
    return f"{name}{SERVICE_SUFFIX}"


def labels(name: str) -> dict[str, str]:
    return {MANAGED_BY: OPERATOR, TENSORBOARD: name}


def url(namespace: str, name: str) -> str:
    """The TensorBoard's address inside the cluster."""
    return f"http://{service_name(name)}.{namespace}.svc:{PORT}/"


def port_forward(namespace: str, name: str) -> str:
    """The kubectl command that makes the TensorBoard http://127.0.0.1:6006 on your machine."""
    return f"kubectl -n {namespace} port-forward service/{service_name(name)} {PORT}:{PORT}"


def spec_hash(pod_spec: Obj) -> str:
    return hashlib.sha256(json.dumps(pod_spec, sort_keys=True).encode()).hexdigest()[:16]


def build_pod(tb: TensorBoardObject, queue: Callable[[Obj], Obj] | None = None) -> Obj:
    """The TensorBoard's pod: its claims mounted read-only, TensorBoard on port 6006;
    made ready for its queue by ``queue`` (before its spec is hashed)."""
    spec = tb.spec
    volumes, mounts = [], []
    for i, claim in enumerate(claims(spec)):
        volume = f"pvc-{i}"
        volumes.append(
            {"name": volume, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}
        )
        mounts.append({"name": volume, "mountPath": f"{MOUNT_ROOT}/{claim}", "readOnly": True})
    fetching = fetcher(spec)
    if fetching is not None:
        volumes.append({"name": HTTP_VOLUME, "emptyDir": {}})
        mounts.append({"name": HTTP_VOLUME, "mountPath": HTTP_ROOT, "readOnly": True})
    container: Obj = {
        "name": CONTAINER,
        "image": spec.image,
        "command": command(spec),
        "ports": [{"name": PORT_NAME, "containerPort": PORT, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/", "port": PORT_NAME},
            "periodSeconds": 10,
        },
        "volumeMounts": mounts,
    }
    env = sources.s3_env(spec)
    if env:
        container["env"] = env
    if spec.resources:
        container["resources"] = json.loads(json.dumps(spec.resources))
    containers = [container] if fetching is None else [container, fetching]
    pod_spec: Obj = {"restartPolicy": "Always", "containers": containers, "volumes": volumes}
    meta = child_metadata(tb, service_name(tb.name), labels(tb.name))
    pod: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
    if queue is not None:
        pod = queue(pod)
    hashed = {"spec": pod["spec"], "labels": pod["metadata"].get("labels") or {}}
    hashed["annotations"] = pod["metadata"].get("annotations") or {}
    hash_of = spec_hash(pod["spec"]) if queue is None else spec_hash(hashed)
    pod["metadata"].setdefault("annotations", {})[SPEC_HASH] = hash_of
    return pod


def build_service(tb: TensorBoardObject) -> Obj:
    """The Service in front of the TensorBoard's pod (port 6006)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(tb, service_name(tb.name), labels(tb.name)),
        "spec": {
            "selector": labels(tb.name),
            "ports": [
                {"name": PORT_NAME, "port": PORT, "targetPort": PORT_NAME, "protocol": "TCP"}
            ],
        },
    }


def for_job(job: Job, spec: TensorBoardSpec | None) -> Obj | None:
    """The TensorBoard a job with ``spec.tensorboardSpec`` owns: the job's name, that
    spec, the job's labels and the job as its controller; None without the field."""
    if spec is None:
        return None
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": child_metadata(job, job.name, job_labels(job.kind, job.name)),
        # as the job's spec wrote it: a default it left out stays the TensorBoard's
        "spec": spec.model_dump(by_alias=True, exclude_unset=True, mode="json"),
    }
