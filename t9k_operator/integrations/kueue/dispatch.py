"""A job MultiKueue dispatches, seen from the manager cluster: which worker
holds it, and a worker that stops holding it.

Kueue writes the worker that admitted the job in its Workload's
``status.clusterName``, and empties it when it evicts the Workload: a worker
unreachable past MultiKueue's worker-lost timeout (or whose copy went away)
turns the MultiKueue admission check to ``Retry``, Kueue evicts the Workload
(reason ``AdmissionCheck``; an eviction for another reason, a
preemption, is Kueue's policy and no disruption), and once its quota is given back queues it and
dispatches it again, to whichever worker has room. So that the eviction can
still name the worker, the operator remembers it on the Workload (an
annotation: the Workload is the operator's); the eviction then counts one
disruption on the Workload before its quota is given back, and the count
reaches the worker that runs the job next, whose Workload MultiKueue copies
from this one, labels and annotations included: the job there starts with
that ``disruptionCount`` (counted against the disruption limit, never against
``backoffLimit``), which Kueue mirrors back to the manager's copy.

Pure functions, like every builder.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from t9k_operator.integrations.kueue.admission import holds_quota
from t9k_operator.objects import Obj

WORKER = "batch.tensorstack.dev/worker-cluster"
"""The annotation of a manager's Workload naming the worker cluster last seen
to hold the job."""
DISRUPTIONS = "batch.tensorstack.dev/dispatch-disruptions"
"""The annotation counting the workers that stopped holding the job."""
RETRY = "AdmissionCheck"
WORKER_LOST = "WorkerLost"
"""The reason of the manager's job's Event when its worker stops holding it."""
"""The reason of Kueue's eviction when an admission check asks to retry."""


def _annotations(workload: Mapping[str, Any]) -> Mapping[str, str]:
    return workload["metadata"].get("annotations") or {}


def holder(workload: Mapping[str, Any]) -> str:
    """The worker cluster Kueue says admitted the Workload ("" for none yet)."""
    return str((workload.get("status") or {}).get("clusterName") or "")


def remembered(workload: Mapping[str, Any]) -> str:
    """The worker cluster the operator last saw holding the Workload."""
    return str(_annotations(workload).get(WORKER) or "")


def disruptions(workload: Mapping[str, Any]) -> int:
    """The workers that stopped holding the job, as counted on its Workload
    (on a worker: on the manager's Workload it was copied from)."""
    try:
        return max(int(_annotations(workload).get(DISRUPTIONS) or 0), 0)
    except ValueError:
        return 0


def remember(workload: Obj, cluster: str) -> Obj:
    """The Workload naming ``cluster`` as its holder."""
    updated = copy.deepcopy(workload)
    meta = updated["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), WORKER: cluster}
    return updated


def lost(workload: Obj) -> Obj:
    """The Workload with its holder forgotten and one more disruption counted."""
    updated = copy.deepcopy(workload)
    meta = updated["metadata"]
    kept = {k: v for k, v in (meta.get("annotations") or {}).items() if k != WORKER}
    kept[DISRUPTIONS] = str(disruptions(workload) + 1)
    meta["annotations"] = kept
    return updated


def lost_message(cluster: str, count: int) -> str:
    """The Event of the manager's job when worker ``cluster`` stops holding it."""
    return (
        f"Worker cluster {cluster} no longer holds the job: MultiKueue's admission check "
        "asked to retry (the cluster was unreachable past MultiKueue's worker-lost timeout, "
        "or the job's copy there went away). Kueue dispatches it again to a worker with "
        f"room; counted as disruption {count}, not against backoffLimit"
    )


def due(
    workload: Obj, evicted: str, admitted: bool
) -> tuple[Obj, list[tuple[str, str, str]]] | None:
    """The manager's Workload as it should be now, with the Events that go
    with it; None when it is as it should be. Kueue's eviction after a retry
    (``evicted``) of the worker it remembers is counted before the quota goes
    back (so the next worker's copy carries the count); an admission names
    its worker."""
    held, now_held = remembered(workload), holder(workload)
    if evicted == RETRY and held and holds_quota(workload):
        updated = lost(workload)
        told = lost_message(held, disruptions(updated))
        return updated, [("Warning", WORKER_LOST, told)]
    if admitted and now_held and now_held != held:
        return remember(workload, now_held), []
    return None
