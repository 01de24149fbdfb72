"""Volcano for a pod that is no job's (a TensorBoard's that names a queue):
the pod names a PodGroup of its own name and runs with Volcano's scheduler
(:func:`~t9k_operator.integrations.gang.build.queue_pod`); once it exists, it
gets that PodGroup, ``minMember`` 1 in its queue, owned by it, and Volcano
places it as the queue allows. While the group waits, the pod carries
Volcano's own Unschedulable condition, which its owner reads.

Pure: :func:`planner`.
"""

from __future__ import annotations

from collections.abc import Sequence

from t9k_operator.integrations.gang import build as gang
from t9k_operator.integrations.gang.build import Backend
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.queued_pods import Get, Plan, Write, queue_of
from t9k_operator.resources import Resource


def group_name(pod: Obj) -> str:
    return str(pod["metadata"]["name"])


def planner(be: Backend, groups: Resource) -> Plan:
    """The plan of ``be``'s queued pods: each gets its PodGroup when it has none."""

    def plan(pod: Obj, companion: Obj | None, get: Get) -> Sequence[Write]:
        queue = queue_of(pod)
        if not queue or companion is not None:
            return []
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return []
        return [Write("create", groups, gang.lone_group(pod, be, queue), "its PodGroup")]

    return plan
