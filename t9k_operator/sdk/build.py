"""A job from a few flags (``t9k create``): pure, checked by the kind's own model.

:func:`build_job` writes the manifest a user would write for the simplest
job of a kind (N workers of one image, G GPUs each, a command), then parses
it with the kind's pydantic model (``api/``), so a job the model refuses is
refused here with the model's message, before the API server sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic

from t9k_operator.sdk.errors import BadJob, Unsupported
from t9k_operator.sdk.kinds import Kind, by_name

GPU = "nvidia.com/gpu"
DEFAULT_TENSORBOARD_IMAGE = "tensorflow/tensorflow:2.14.0"


@dataclass(frozen=True)
class JobRequest:
    """What ``t9k create`` asks for."""

    kind: str
    name: str
    image: str
    command: Sequence[str]
    workers: int = 1
    gpus: int = 0
    namespace: str | None = None
    torchrun: bool = False
    queue: str | None = None
    priority: int | None = None
    tensorboard: str | None = None
    """``PVC/PATH`` (or ``PVC``): the claim and directory of the training logs."""
    tensorboard_image: str = DEFAULT_TENSORBOARD_IMAGE
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    """The pod template's annotations (on every replica's pods)."""


def _container(name: str, request: JobRequest, command: Sequence[str] | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": request.image}
    if command:
        container["command"] = list(command)
    if request.gpus:
        container["resources"] = {"limits": {GPU: request.gpus}}
    return container


def _template(container: dict[str, Any], request: JobRequest) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"containers": [container]}}
    if request.annotations:
        template["metadata"] = {"annotations": dict(request.annotations)}
    return template


def _script(command: Sequence[str]) -> list[str]:
    """A command without its leading python (the launchers run python themselves)."""
    argv = list(command)
    if argv and argv[0].rsplit("/", 1)[-1] in ("python", "python3"):
        return argv[1:]
    return argv


def _scheduler(request: JobRequest) -> dict[str, Any] | None:
    if request.priority is not None and not request.queue:
        raise BadJob("--priority needs --queue: a T9k job's priority orders its queue")
    if not request.queue:
        return None
    scheduler: dict[str, Any] = {"queue": request.queue}
    if request.priority is not None:
        scheduler["priority"] = request.priority
    return {"t9kScheduler": scheduler}


def _tensorboard(request: JobRequest) -> dict[str, Any] | None:
    if not request.tensorboard:
        return None
    claim, _, path = request.tensorboard.strip("/").partition("/")
    url = f"t9k://pvc/{claim}/{path}" if path else f"t9k://pvc/{claim}"
    return {"trainingLogFilesets": [url], "image": request.tensorboard_image}


def _spec(kind: Kind, request: JobRequest) -> dict[str, Any]:
    command = list(request.command)
    if not command:
        raise BadJob("a command is needed after --: t9k create KIND NAME ... -- COMMAND ARGS")
    if request.torchrun and kind.name != "pytorch":
        raise BadJob("--torchrun is for pytorch jobs")
    slots = max(request.gpus, 1)
    spec: dict[str, Any]
    if kind.name == "pytorch":
        if request.torchrun:
            container = _container("pytorch", request, None)
            container["args"] = _script(command)
            spec = {"torchrunConfig": {"enabled": True, "procPerNode": str(slots)}}
        else:
            container = _container("pytorch", request, command)
            spec = {}
        spec["replicaSpecs"] = [
            {
                "type": "worker",
                "replicas": request.workers,
                "restartPolicy": "OnFailure",
                "template": _template(container, request),
            }
        ]
    elif kind.name == "deepspeed":
        script = _script(command)
        run = {"python": script} if script != command else {"exec": command}
        spec = {
            "config": {"slotsPerWorker": slots, "run": run},
            "worker": {
                "replicas": request.workers,
                "template": _template(_container("worker", request, None), request),
            },
        }
    elif kind.name == "colossalai":
        spec = {
            "launcher": {"image": request.image},
            "worker": {
                "replicas": request.workers,
                "procPerWorker": slots,
                "command": _script(command),
                "template": _template(_container("worker", request, None), request),
            },
        }
    elif kind.name == "mindspore":
        if request.tensorboard:
            raise Unsupported("an MSJob has no tensorboardSpec: create a TensorBoard of its own")
        policy: dict[str, Any] = {}
        if request.queue:
            policy["queue"] = request.queue
        if request.priority is not None:
            policy["priorityClass"] = f"t9k-priority-{request.priority}"
        worker = _template(_container("mindspore", request, command), request)
        scheduler = _template(_container("mindspore", request, command), request)
        scheduler["spec"]["containers"][0].pop("resources", None)
        spec = {
            "msReplicaSpecs": {
                "Scheduler": {"replicas": 1, "restartPolicy": "Never", "template": scheduler},
                "Worker": {
                    "replicas": request.workers,
                    "restartPolicy": "OnFailure",
                    "template": worker,
                },
            }
        }
        if policy:
            spec["runPolicy"] = {"schedulingPolicy": policy}
        return spec
    else:
        raise Unsupported(f"t9k create makes jobs, not a {kind.kind}")
    scheduler_spec = _scheduler(request)
    if scheduler_spec:
        spec["scheduler"] = scheduler_spec
    tensorboard = _tensorboard(request)
    if tensorboard:
        spec["tensorboardSpec"] = tensorboard
    return spec


def build_job(request: JobRequest) -> dict[str, Any]:
    """The job's manifest, checked by its kind's model; :class:`BadJob` with the
    model's message when it does not fit."""
    try:
        kind = by_name(request.kind)
    except KeyError:
        raise BadJob(
            f"unknown kind {request.kind!r}: pytorch, deepspeed, colossalai or mindspore"
        ) from None
    if request.workers < 1:
        raise BadJob("--workers must be at least 1")
    if request.gpus < 0:
        raise BadJob("--gpus must not be negative")
    metadata: dict[str, Any] = {"name": request.name}
    if request.namespace:
        metadata["namespace"] = request.namespace
    if request.labels:
        metadata["labels"] = dict(request.labels)
    manifest = {
        "apiVersion": kind.crd.api_version,
        "kind": kind.kind,
        "metadata": metadata,
        "spec": _spec(kind, request),
    }
    check(kind, manifest)
    return manifest


def check(kind: Kind, manifest: dict[str, Any]) -> None:
    """:class:`BadJob` with the model's messages when ``manifest`` does not fit its kind."""
    try:
        kind.model.from_dict(manifest)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'job'}: {e['msg']}" for e in exc.errors()
        )
        raise BadJob(
            f"invalid {kind.kind} {manifest['metadata'].get('name')}: {problems}"
        ) from None
