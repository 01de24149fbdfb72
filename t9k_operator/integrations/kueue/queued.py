"""Kueue for a pod that is no job's (a TensorBoard's that names a queue):
the pod is created behind the scheduling gate
:data:`~t9k_operator.integrations.kueue.build.GATE`, gets a Workload of
one pod in its LocalQueue (owned by the pod), and is let go when Kueue admits
the Workload: the gate taken off, the admitted flavors' node labels and
tolerations added (what a gated pod's spec may still take), as Kueue does for
plain pods. While it waits, the pod's annotation
:data:`~t9k_operator.reconcilers.pipeline.queued_pods.WAITING` carries Kueue's
words. An eviction deletes the pod (its Workload goes with it, and the quota
with that); its owner creates the next one, which queues afresh.

Pure: :func:`plan` (the pod is gated by :func:`~.build.queue_pod`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from t9k_operator.integrations.kueue import build as kueue
from t9k_operator.integrations.kueue.admission import admission_state
from t9k_operator.integrations.kueue.build import GATE
from t9k_operator.integrations.kueue.integration import RESOURCE_FLAVORS
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.queued_pods import WAITING, Get, Write, owned_by, queue_of
from t9k_operator.resources import PODS, WORKLOADS

POD_SET = "main"


def workload_name(pod: Obj) -> str:
    """The Workload of a queued pod: the pod's name and the start of its uid
    (a successor of the same name waits in a Workload of its own)."""
    meta = pod["metadata"]
    return f"{meta['name']}-{str(meta.get('uid', ''))[:8]}"


def workload(pod: Obj, queue: str) -> Obj:
    """The Workload of one pod, in LocalQueue ``queue``, owned by the pod."""
    return {
        "apiVersion": kueue.API_VERSION,
        "kind": "Workload",
        "metadata": owned_by(pod, workload_name(pod)),
        "spec": {
            "queueName": queue,
            "podSets": [kueue.pod_set(kueue.PodSet(POD_SET, 1, pod))],
            "priority": 0,
        },
    }


def gated(pod: Obj) -> bool:
    return {"name": GATE} in ((pod.get("spec") or {}).get("schedulingGates") or [])


def _patch(pod: Obj, spec: Obj | None, annotations: Obj) -> Obj:
    meta = pod["metadata"]
    body: Obj = {
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "resourceVersion": meta.get("resourceVersion"),
            "annotations": annotations,
        }
    }
    if spec is not None:
        body["spec"] = spec
    return body


def let_go(pod: Obj, placement: kueue.Placement) -> Obj:
    """The patch that lets an admitted pod go: its gate off, its flavors' node
    labels and tolerations on, the waiting annotation gone."""
    placed = kueue.place(copy.deepcopy({"spec": pod["spec"]}), placement)["spec"]
    gates = [g for g in pod["spec"]["schedulingGates"] if g != {"name": GATE}]
    spec: Obj = {"schedulingGates": gates}
    for key in ("nodeSelector", "tolerations"):
        if placed.get(key) != pod["spec"].get(key):
            spec[key] = placed[key]
    return _patch(pod, spec, {WAITING: None})


def _placement(get: Get, admitted: Obj) -> kueue.Placement:
    labels: dict[str, str] = {}
    tolerations: list[Obj] = []
    for name in sorted(kueue.assigned_flavors(admitted).get(POD_SET, set())):
        flavor = get(RESOURCE_FLAVORS, None, name)
        spec = (flavor or {}).get("spec") or {}
        labels.update(spec.get("nodeLabels") or {})
        tolerations.extend(spec.get("tolerations") or [])
    return kueue.Placement(labels, tuple(tolerations))


def plan(pod: Obj, companion: Obj | None, get: Get) -> Sequence[Write]:
    """What a queued pod needs: its Workload, then (admitted) to be let go, or
    (evicted) to be deleted; while it waits, Kueue's words on it."""
    queue = queue_of(pod)
    if not queue or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return []
    if companion is None:
        if not gated(pod):
            return []  # let go before its Workload went: nothing holds it now
        return [Write("create", WORKLOADS, workload(pod, queue), "its Workload")]
    admission = admission_state(companion["metadata"]["name"], queue, companion)
    if admission.evicted:
        meta = pod["metadata"]
        doomed = {"metadata": {k: meta[k] for k in ("name", "namespace", "uid")}}
        return [Write("delete", PODS, doomed, f"Kueue evicted it: {admission.message}")]
    if not gated(pod):
        return []
    if admission.admitted:
        return [Write("patch", PODS, let_go(pod, _placement(get, companion)), "admitted")]
    said = (pod["metadata"].get("annotations") or {}).get(WAITING)
    why = admission.message or "not evaluated yet"
    if said == why:
        return []
    return [Write("patch", PODS, _patch(pod, None, {WAITING: why}), "waits")]
