"""What ``t9k create`` asks for (:class:`JobRequest`), and the parts of a spec
every kind builds from it the same way.

Each kind's ``from_flags`` writes the spec a user would write for the simplest
job of that kind (N workers of one image, G GPUs each, a command) from these
parts: the container (:func:`container`), its pod template (:func:`template`),
the command with or without its leading python (:func:`command`,
:func:`script`), and for the T9k kinds ``spec.scheduler`` and
``spec.tensorboardSpec`` (:func:`t9k_extras`). A request a kind cannot make
raises :class:`FlagsRefused` (:class:`NotForThisKind` when the kind has no
such thing); the SDK turns them into its own errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from t9k_operator.kinds.gpus import GPU
from t9k_operator.objects import Obj

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

    @property
    def slots(self) -> int:
        """Processes per worker for the kinds that launch them: one per GPU, at least one."""
        return max(self.gpus, 1)


class FlagsRefused(ValueError):
    """The flags cannot make a job of this kind; the message says why."""


class NotForThisKind(FlagsRefused):
    """The flags ask for something this kind does not have."""


def command(request: JobRequest, *, torchrun: bool = False) -> list[str]:
    """The command after ``--``; refused when there is none, or when the request
    asks for torchrun of a kind that does not run it (``torchrun``)."""
    argv = list(request.command)
    if not argv:
        raise FlagsRefused("a command is needed after --: t9k create KIND NAME ... -- COMMAND ARGS")
    if request.torchrun and not torchrun:
        raise FlagsRefused("--torchrun is for pytorch jobs")
    return argv


def script(argv: Sequence[str]) -> list[str]:
    """A command without its leading python (the launchers run python themselves)."""
    out = list(argv)
    if out and out[0].rsplit("/", 1)[-1] in ("python", "python3"):
        return out[1:]
    return out


def container(
    name: str, request: JobRequest, argv: Sequence[str] | None, *, gpus: bool = True
) -> Obj:
    """The one container of a replica: the image, the command (if any) and,
    unless ``gpus`` is false, the requested GPUs as its limit."""
    out: Obj = {"name": name, "image": request.image}
    if argv:
        out["command"] = list(argv)
    if request.gpus and gpus:
        out["resources"] = {"limits": {GPU: request.gpus}}
    return out


def template(one: Obj, request: JobRequest) -> Obj:
    """A pod template of the one container, with the request's annotations."""
    out: Obj = {"spec": {"containers": [one]}}
    if request.annotations:
        out["metadata"] = {"annotations": dict(request.annotations)}
    return out


def workers(one: Obj, request: JobRequest, *, restart_policy: str | None = "OnFailure") -> Obj:
    """``spec.replicaSpecs`` of ``request.workers`` replicas of type worker, each
    a pod of the one container (restarted per ``restart_policy``; None: the kind's
    default)."""
    worker: Obj = {"type": "worker", "replicas": request.workers}
    if restart_policy is not None:
        worker["restartPolicy"] = restart_policy
    worker["template"] = template(one, request)
    return {"replicaSpecs": [worker]}


def _scheduler(request: JobRequest) -> Obj | None:
    if request.priority is not None and not request.queue:
        raise FlagsRefused("--priority needs --queue: a T9k job's priority orders its queue")
    if not request.queue:
        return None
    t9k: Obj = {"queue": request.queue}
    if request.priority is not None:
        t9k["priority"] = request.priority
    return {"t9kScheduler": t9k}


def _tensorboard(request: JobRequest) -> Obj | None:
    if not request.tensorboard:
        return None
    claim, _, path = request.tensorboard.strip("/").partition("/")
    url = f"t9k://pvc/{claim}/{path}" if path else f"t9k://pvc/{claim}"
    return {"trainingLogFilesets": [url], "image": request.tensorboard_image}


def t9k_extras(spec: Obj, request: JobRequest) -> Obj:
    """``spec`` with what a T9k job kind takes from ``--queue``/``--priority``
    (``spec.scheduler.t9kScheduler``) and ``--tensorboard`` (``spec.tensorboardSpec``)."""
    scheduler = _scheduler(request)
    if scheduler:
        spec["scheduler"] = scheduler
    tensorboard = _tensorboard(request)
    if tensorboard:
        spec["tensorboardSpec"] = tensorboard
    return spec
