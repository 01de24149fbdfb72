"""Gang scheduling: the PodGroup a job gets from the cluster's gang scheduler,
and what its pods carry to join it.

Two backends, chosen by the operator's ``--gang-scheduler`` flag:

* ``volcano``: a ``scheduling.volcano.sh/v1beta1`` PodGroup (``minMember``,
  ``queue``, ``priorityClassName``); each pod names it in the annotation
  ``scheduling.k8s.io/group-name`` and runs with ``schedulerName: volcano``.
  Volcano admits a group into its queue only when ``minMember`` pods fit, and
  orders the waiting groups of a queue by their priority class.
* ``coscheduling``: a ``scheduling.x-k8s.io/v1alpha1`` PodGroup of
  scheduler-plugins (``minMember``, ``scheduleTimeoutSeconds``); each pod
  names it in the label ``scheduling.x-k8s.io/pod-group`` and runs with the
  scheduler-plugins scheduler's name. It has no queues; waiting groups are
  ordered by their pods' priority.

The group is named after the job and owned by it. A T9k job's integer
``priority`` becomes the PriorityClass ``t9k-priority-<n>`` (installed with
the operator, one per level 0..100, ``preemptionPolicy:
PreemptLowerPriority``: as the T9k docs say, a job of higher priority may
evict pods of lower priority to get room, and waiting jobs are ordered by it;
the Helm value ``priorityClasses.preemptionPolicy: Never`` keeps the order
and drops the eviction).

Pure functions, like every builder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.parts import DEFAULT_SCHEDULER, SCHEDULING, StatusPart
from t9k_operator.builders.common import Job, child_metadata, job_labels
from t9k_operator.builders.scheduling import group_name
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.queued_pods import labelled, owned_by


@dataclass(frozen=True)
class Backend:
    """One gang scheduler: its PodGroup API, what its PodGroup carries, and how
    a pod joins a group. A new gang scheduler whose PodGroup has this shape is
    one more entry in :data:`KNOWN`."""

    name: str
    group: str
    version: str
    scheduler_name: str
    queues: bool  # whether PodGroups name a queue
    member_key: str  # the annotation (volcano) or label (coscheduling) naming the group
    member_in_labels: bool
    priority_in_group: bool = False  # the PodGroup names the job's priority class
    timeout_in_group: bool = False  # the PodGroup carries scheduleTimeoutSeconds

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


DEFAULT_QUEUE = "default"
"""Volcano's queue for a group that names none (its admission webhook's default,
set here so the scheduler alone needs no webhook)."""
VOLCANO = "volcano"
COSCHEDULING = "coscheduling"
KNOWN: dict[str, Backend] = {
    VOLCANO: Backend(
        VOLCANO,
        "scheduling.volcano.sh",
        "v1beta1",
        "volcano",
        queues=True,
        member_key="scheduling.k8s.io/group-name",
        member_in_labels=False,
        priority_in_group=True,
    ),
    COSCHEDULING: Backend(
        COSCHEDULING,
        "scheduling.x-k8s.io",
        "v1alpha1",
        "scheduler-plugins-scheduler",
        queues=False,
        member_key="scheduling.x-k8s.io/pod-group",
        member_in_labels=True,
        timeout_in_group=True,
    ),
}
"""Every gang scheduler the operator can use, by the name ``--gang-scheduler`` takes."""
BACKENDS = tuple(KNOWN)
DEFAULT_SCHEDULER_NAMES = {name: be.scheduler_name for name, be in KNOWN.items()}


def backend(name: str, scheduler_name: str | None = None) -> Backend:
    """The backend called ``name`` (one of :data:`BACKENDS`), its pods scheduled
    by ``scheduler_name`` (else the backend's usual name)."""
    if name not in KNOWN:
        raise ValueError(f"unknown gang scheduler {name!r}: one of {', '.join(BACKENDS)}")
    return replace(KNOWN[name], scheduler_name=scheduler_name or KNOWN[name].scheduler_name)


def pod_group(
    job: Job,
    be: Backend,
    min_member: int,
    *,
    queue: str | None = None,
    priority_class_name: str | None = None,
    timeout_seconds: int | None = None,
    min_resources: Mapping[str, Any] | None = None,
) -> Obj:
    """The job's PodGroup for ``be``: ``min_member`` pods placed at once, in
    ``queue``, at ``priority_class_name``, waiting at most ``timeout_seconds``."""
    spec: Obj = {"minMember": min_member}
    if be.queues:
        spec["queue"] = queue or DEFAULT_QUEUE
    if be.priority_in_group and priority_class_name:
        spec["priorityClassName"] = priority_class_name
    if min_resources:
        spec["minResources"] = dict(min_resources)
    if be.timeout_in_group and timeout_seconds:
        spec["scheduleTimeoutSeconds"] = timeout_seconds
    return {
        "apiVersion": be.api_version,
        "kind": "PodGroup",
        "metadata": child_metadata(
            job, group_name(job.name, job.uid), job_labels(job.kind, job.name)
        ),
        "spec": spec,
    }


def join(pod: Obj, be: Backend, group: str, priority_class_name: str | None) -> Obj:
    """``pod`` made a member of ``group``: the backend's scheduler, its group
    label or annotation, and the job's ``priority_class_name`` (unless the template
    set one)."""
    pod["spec"]["schedulerName"] = be.scheduler_name
    meta = pod["metadata"]
    if be.member_in_labels:
        meta.setdefault("labels", {})[be.member_key] = group
    else:
        meta.setdefault("annotations", {})[be.member_key] = group
    if priority_class_name and not pod["spec"].get("priorityClassName"):
        pod["spec"]["priorityClassName"] = priority_class_name
    return pod


def queue_pod(pod: Obj, be: Backend, queue: str) -> Obj:
    """``pod`` (no job's) made the one member of a group of its own name, in
    ``queue`` (``queued.py`` creates the group once the pod exists)."""
    return labelled(join(pod, be, pod["metadata"]["name"], None), queue)


def lone_group(pod: Obj, be: Backend, queue: str) -> Obj:
    """The PodGroup of one queued pod that is no job's: ``minMember`` 1 in
    ``queue``, named as the pod and owned by it."""
    return {
        "apiVersion": be.api_version,
        "kind": "PodGroup",
        "metadata": owned_by(pod, pod["metadata"]["name"]),
        "spec": {"minMember": 1, "queue": queue},
    }


# -- its part of the job's status ------------------------------------------------------


class PodGroupStatus(T9kModel):
    """The job's PodGroup, as the operator last saw it."""

    name: str = Field(
        description="Name of the PodGroup: the job's name and the first 8 characters of its uid."
    )
    scheduler: str = Field(description="The gang scheduler: volcano or coscheduling.")
    min_member: int = Field(description="Pods the scheduler places together, or none.")
    queue: str | None = Field(default=None, description="The queue the job waits in.")
    phase: str | None = Field(
        default=None,
        description=(
            "The PodGroup's phase as its scheduler reports it (Volcano: Pending, Inqueue, "
            "Running; scheduler-plugins: Pending, Scheduling, Scheduled, Running)."
        ),
    )
    message: str | None = Field(
        default=None, description="Why the group waits, from its conditions."
    )


def _pod_group_lines(group: Mapping[str, Any]) -> list[str]:
    text = (
        f"PodGroup {group.get('name', '')} ({group.get('scheduler', '')}): "
        f"phase {group.get('phase') or '<unknown>'}, minMember {group.get('minMember', '')}"
    )
    if group.get("queue"):
        text += f", queue {group['queue']}"
    if group.get("message"):
        text += f": {group['message']}"
    return [text]


POD_GROUP_PART = StatusPart(
    key="podGroup",
    model=PodGroupStatus,
    description=(
        "The job's PodGroup, when the operator runs with a gang scheduler "
        "(--gang-scheduler): its queue, phase and why it waits."
    ),
    section=SCHEDULING,
    lines=_pod_group_lines,
    absent=DEFAULT_SCHEDULER,
)
