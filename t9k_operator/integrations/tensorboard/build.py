"""TensorBoard builders: a TensorBoard's pod and Service, and the TensorBoard a
T9k job with ``spec.tensorboardSpec`` owns.

Pure functions, like the replicas' builders. The pod runs one container,
``tensorboard``, with the spec's image and resources and the command
:func:`command` renders::

    tensorboard --logdir_spec <name>:<path>,<name>:<path>,... --host 0.0.0.0 --port 6006

Every claim the filesets name is mounted once, read-only, at
``/t9k/pvc/<claim>`` (:data:`MOUNT_ROOT`); a fileset ``t9k://pvc/<claim>/<path>``
is the directory ``/t9k/pvc/<claim>/<path>``, served as the run group
``<claim>/<path>`` (``<claim>`` for a whole claim). TensorBoard splits each
``--logdir_spec`` entry at its first colon, so a colon in a group's name
becomes ``_`` (one in a path is kept). Two filesets that name the same
directory (``.../x`` and ``.../x/``) are one run group.

The pod restarts its container itself (``restartPolicy: Always``): TensorBoard
is a server, not a task that ends. It carries a hash of its spec, so the
reconciler can tell a pod built from an older spec and replace it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from t9k_operator.api.tensorboard import (
    API_VERSION,
    FILESET_SCHEME,
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
from t9k_operator.objects import Obj

MOUNT_ROOT = "/t9k/pvc"
"""Where the claims are mounted, each at ``<MOUNT_ROOT>/<claim>``."""
PORT = 6006
PORT_NAME = "http"
CONTAINER = "tensorboard"
TENSORBOARD = "t9k.dev/tensorboard"
"""Label of a TensorBoard's pod and Service: the TensorBoard's name."""
SPEC_HASH = "t9k.dev/spec-hash"
"""Annotation of a TensorBoard's pod: a hash of the pod spec it was built with."""


@dataclass(frozen=True)
class Run:
    """One fileset as TensorBoard serves it."""

    name: str  # the run group's name: <claim>/<path>
    fileset: str  # as the user wrote it
    claim: str
    path: str  # the directory in the container


def split_fileset(url: str) -> tuple[str, str]:
    """``t9k://pvc/<claim>/<path>`` -> (claim, path in the claim, without empty or
    ``.`` segments; "" for the whole claim). The model has checked the form."""
    claim, _, rest = url.removeprefix(FILESET_SCHEME).partition("/")
    return claim, "/".join(part for part in rest.split("/") if part not in ("", "."))


def runs(spec: TensorBoardSpec, mount_root: str = MOUNT_ROOT) -> list[Run]:
    """The run groups, one per distinct directory, in the spec's order."""
    out: list[Run] = []
    seen: set[tuple[str, str]] = set()
    for url in spec.training_log_filesets:
        claim, sub = split_fileset(url)
        if (claim, sub) in seen:
            continue
        seen.add((claim, sub))
        name = f"{claim}/{sub}" if sub else claim
        path = "/".join(p for p in (mount_root, claim, sub) if p)
        out.append(Run(name.replace(":", "_"), url, claim, path))
    return out


def claims(spec: TensorBoardSpec) -> list[str]:
    """The claims the filesets name, each once, in the spec's order."""
    return list(dict.fromkeys(split_fileset(url)[0] for url in spec.training_log_filesets))


def command(spec: TensorBoardSpec, mount_root: str = MOUNT_ROOT) -> list[str]:
    """The TensorBoard container's command (``mount_root`` is where the claims are)."""
    logdir_spec = ",".join(f"{run.name}:{run.path}" for run in runs(spec, mount_root))
    return ["tensorboard", "--logdir_spec", logdir_spec, "--host", "0.0.0.0", "--port", str(PORT)]


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


def build_pod(tb: TensorBoardObject) -> Obj:
    """The TensorBoard's pod: its claims mounted read-only, TensorBoard on port 6006."""
    spec = tb.spec
    volumes, mounts = [], []
    for i, claim in enumerate(claims(spec)):
        volume = f"pvc-{i}"
        volumes.append(
            {"name": volume, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}
        )
        mounts.append({"name": volume, "mountPath": f"{MOUNT_ROOT}/{claim}", "readOnly": True})
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
    if spec.resources:
        container["resources"] = json.loads(json.dumps(spec.resources))
    pod_spec: Obj = {"restartPolicy": "Always", "containers": [container], "volumes": volumes}
    meta = child_metadata(tb, service_name(tb.name), labels(tb.name))
    meta["annotations"] = {SPEC_HASH: spec_hash(pod_spec)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


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
        "spec": spec.model_dump(by_alias=True, exclude_defaults=True, mode="json"),
    }
