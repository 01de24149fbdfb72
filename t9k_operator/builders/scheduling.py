"""A job's scheduling names, the same whichever integration schedules it: the
PriorityClass that stands for a T9k priority level (installed with the
operator, one per level 0..100, ``preemptionPolicy: PreemptLowerPriority``:
a job of higher priority may evict pods of lower priority to get room, and
waiting jobs are ordered by it; the Helm value
``priorityClasses.preemptionPolicy: Never`` keeps the order and drops the
eviction), and the name of the one object a scheduler or a queue keeps for
the job (a PodGroup, a Workload).

Pure functions, like every builder.
"""

from __future__ import annotations

from t9k_operator.api.specs import MAX_PRIORITY
from t9k_operator.builders.common import OPERATOR
from t9k_operator.objects import Obj

PRIORITY_CLASS_PREFIX = "t9k-priority-"


def priority_class(priority: int) -> str:
    """The PriorityClass that stands for a T9k priority level."""
    return f"{PRIORITY_CLASS_PREFIX}{priority}"


GROUP_NAME_MAX = 63
"""Coscheduling carries the group's name in a label value."""
UID_PART = 8


def group_name(name: str, uid: str) -> str:
    """The name of the group object (PodGroup, Workload) of the job ``name``
    with ``uid``: its name and the start of its uid, as Volcano names the groups
    of its own jobs. The uid keeps groups of same-named jobs apart:
    scheduler-plugins' PodGroup controller (v0.34.7) counts a group's pods by their group
    label in every namespace, so a group named ``train`` would count the
    finished pods of another namespace's ``train`` and be marked Finished before
    it ran; and a job recreated under its old name never adopts the group of its
    predecessor while that is still being deleted."""
    return f"{name[: GROUP_NAME_MAX - UID_PART - 1]}-{uid[:UID_PART]}"


def priority_classes() -> list[Obj]:
    """The PriorityClasses behind the T9k priority levels, installed with the operator."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {
                "name": priority_class(level),
                "labels": {"app.kubernetes.io/part-of": OPERATOR},
            },
            "value": level,
            "preemptionPolicy": "PreemptLowerPriority",
            # No `globalDefault: false`: the API server does not store a false
            # globalDefault, so a second field manager applying the same
            # manifest (Helm after kubectl, a test beside an install) would
            # meet a server-side apply conflict on it. Absent means false.
            "description": (
                f"T9k job priority {level} (spec.scheduler.t9kScheduler.priority): orders "
                "waiting jobs of a queue, higher first, and lets a job's pods preempt pods "
                "of lower priority to get room (see preemptionPolicy)."
            ),
        }
        for level in range(MAX_PRIORITY + 1)
    ]
