"""Builders shared by every kind: names, labels, owner references, the
headless Service, and turning a pod template into a replica's pod.

Pure functions from a job parsed by its API model (a :class:`JobObject`) and
the pod templates it holds (plain dicts, as the Pod API has them) to the
children's manifests: no I/O, no clock, no randomness. A child's name
is deterministic (``<job>-<type>-<index>``), so creating it twice is harmless
(the second create answers AlreadyExists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from t9k_operator import objects
from t9k_operator.api.crd import JobObject
from t9k_operator.objects import Obj, copy_tree, training_container, training_container_index

Job = JobObject[Any, Any]
"""Any job, parsed by its kind's API model."""

MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "t9k-operator"
JOB_NAME = "t9k.dev/job-name"
JOB_KIND = "t9k.dev/job-kind"
REPLICA_TYPE = "t9k.dev/replica-type"
REPLICA_INDEX = "t9k.dev/replica-index"
ROLE = "t9k.dev/role"
CHILD_SELECTOR = f"{MANAGED_BY}={OPERATOR}"
DEFAULT_CONTAINER = "kubectl.kubernetes.io/default-container"
"""The pod annotation naming the container ``kubectl logs``/``exec``/``attach``
pick without ``-c``: the operator sets it to the training container."""


def pod_name(job_name: str, replica_type: str, index: int) -> str:
    return f"{job_name}-{replica_type.lower()}-{index}"


def ssh_secret_name(job_name: str) -> str:
    return f"{job_name}-ssh"


@dataclass(frozen=True)
class KindFacts:
    """What a kind's pods are, stated once in its builders and read by its kind
    module: the container that trains (in order of preference, else the
    first), and what debug pods run unless the job says otherwise."""

    training_containers: tuple[str, ...]
    debug_command: tuple[str, ...]


@dataclass(frozen=True)
class PodMode:
    """How a pod is to be built: normally, for debugging, or after a pause."""

    command: tuple[str, ...] | None = None  # replaces the training container's command
    args: tuple[str, ...] | None = None  # replaces its args (resume only)
    skip_init_containers: bool = False
    debug: bool = False
    resume_step: int | None = None  # the checkpointed step: T9K_RESUME_STEP


RESUME_STEP_ENV = "T9K_RESUME_STEP"
"""The step a new replica resumes from: the newest checkpoint its job's replicas
reported (docs/checkpoint.md)."""

NORMAL = PodMode()
"""A pod built as its template and the kind say, with no debug or resume setting."""


def job_labels(kind: str, job_name: str) -> dict[str, str]:
    return {MANAGED_BY: OPERATOR, JOB_NAME: job_name, JOB_KIND: kind}


def job_selector(kind: str, job_name: str) -> str:
    """The label selector of a job's children, as a string (``status.selector``)."""
    return ",".join(f"{k}={v}" for k, v in sorted(job_labels(kind, job_name).items()))


def replica_labels(
    kind: str, job_name: str, replica_type: str, index: int, role: str | None = None
) -> dict[str, str]:
    labels = job_labels(kind, job_name)
    labels[REPLICA_TYPE] = replica_type
    labels[REPLICA_INDEX] = str(index)
    if role:
        labels[ROLE] = role
    return labels


def owner_reference(job: Job) -> Obj:
    """The ownerReference of the job's children."""
    return objects.owner_reference(job.api_version, job.kind, job.name, job.uid)


def child_metadata(job: Job, name: str, labels: Mapping[str, str]) -> Obj:
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": dict(labels),
        "ownerReferences": [owner_reference(job)],
    }


def headless_service(job: Job, ports: Iterable[tuple[str, int]] = ()) -> Obj:
    """One Service per job: ``<replica>.<job>`` resolves before pods are Ready."""
    name = job.name
    labels = job_labels(job.kind, name)
    port_list = [{"name": n, "port": p, "targetPort": p} for n, p in ports] or [
        {"name": "placeholder", "port": 9, "targetPort": 9}
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(job, name, labels),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": labels,
            "ports": port_list,
        },
    }


def training_port(
    template: Mapping[str, Any], names: Sequence[str], port_name: str, default: int
) -> int:
    """The ``containerPort`` of the port named ``port_name`` of the template's
    training container (``names``: the kind's conventional ones), else ``default``."""
    container = training_container(template, names) or {}
    for port in container.get("ports") or []:
        if port.get("name") == port_name and port.get("containerPort"):
            return int(port["containerPort"])
    return default


def set_env(container: Obj, env: Mapping[str, str]) -> None:
    """Put ``env`` into the container; the operator's values replace same-named ones."""
    kept = [e for e in container.get("env") or [] if e.get("name") not in env]
    container["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]


def replica_pod(
    job: Job,
    template: Mapping[str, Any],
    replica_type: str,
    index: int,
    *,
    training_names: Sequence[str],
    mode: PodMode = NORMAL,
    env: Mapping[str, str] | None = None,
    role: str | None = None,
) -> Obj:
    """The pod of one replica, from the user's template.

    The template is kept whole (user labels, annotations, volumes, security
    context, resources); the operator adds its labels, the owner reference,
    ``hostname``/``subdomain`` for DNS, and ``restartPolicy: Never`` (it
    decides restarts itself), and names the training container the pod's
    default one (:data:`DEFAULT_CONTAINER`) unless the template names another.
    The mode's ``command``/``args`` replace the
    training container's (``args`` is cleared when only ``command`` is given);
    ``skip_init_containers`` drops the template's init containers; ``resume_step``
    becomes the training container's ``T9K_RESUME_STEP``.
    """
    command, args, skip_init_containers = mode.command, mode.args, mode.skip_init_containers
    name = job.name
    tpl: Obj = copy_tree(dict(template))
    meta = tpl.get("metadata") or {}
    spec: Obj = tpl.get("spec") or {}
    labels = {
        **(meta.get("labels") or {}),
        **replica_labels(job.kind, name, replica_type, index, role),
    }
    pod_meta = child_metadata(job, pod_name(name, replica_type, index), labels)
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    spec["hostname"] = pod_meta["name"]
    spec["subdomain"] = name
    spec["restartPolicy"] = "Never"
    containers = spec.get("containers") or []
    if containers:
        target = containers[training_container_index(tpl, training_names)]
        if target.get("name"):
            pod_meta.setdefault("annotations", {}).setdefault(DEFAULT_CONTAINER, target["name"])
        if command is not None:
            target["command"] = list(command)
            if args is None:
                target.pop("args", None)
        if args is not None:
            target["args"] = list(args)
        if env:
            set_env(target, env)
        if mode.resume_step is not None:
            set_env(target, {RESUME_STEP_ENV: str(mode.resume_step)})
    if skip_init_containers:
        spec.pop("initContainers", None)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}
