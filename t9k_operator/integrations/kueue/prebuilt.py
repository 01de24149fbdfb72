"""A job MultiKueue dispatched to this cluster: its Workload is MultiKueue's.

On a worker cluster MultiKueue first creates the dispatched job's Workload
(a copy of the manager's), then the job, without ``spec.managedBy`` and
labelled with that Workload's name (``kueue.x-k8s.io/prebuilt-workload-name``)
and the manager it came from (``kueue.x-k8s.io/multikueue-origin``). The
operator adopts that Workload instead of creating one, as Kueue's own job
integrations do with a prebuilt Workload: it waits for it, makes the job its
controller owner (so the Workload's changes reach the job and it goes with
the job), never deletes or resizes it, and once the job has ended marks it
``Finished``, which MultiKueue reads to finish the manager's Workload.

Pure functions, like every builder.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from t9k_operator.objects import Obj, controller_ref, owner_reference

PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
"""The label naming the Workload MultiKueue made for the job."""
FINISHED = "Finished"


def multikueue_frameworks(kinds: Iterable[tuple[str, str, str]]) -> Obj:
    """The part of the manager's Kueue Configuration that lets MultiKueue's generic
    adapter dispatch the ``kinds`` (group, version, kind): ``multiKueue.externalFrameworks``,
    each named ``Kind.version.group``."""
    names = [f"{kind}.{version}.{group}" for group, version, kind in kinds]
    return {"multiKueue": {"externalFrameworks": [{"name": n} for n in names]}}


def prebuilt(job: Mapping[str, Any]) -> str | None:
    """The Workload a stored job's label names as MultiKueue's, if any."""
    labels = job["metadata"].get("labels") or {}
    return labels.get(PREBUILT_LABEL) or None


def adopted(workload: Obj, job: Mapping[str, Any]) -> Obj | None:
    """The Workload with the stored job as its controller owner; None when it
    already is, or another object controls it (then it is not the job's to take)."""
    meta = job["metadata"]
    ref = controller_ref(workload)
    if ref is not None:
        return None
    updated = copy.deepcopy(workload)
    owner = owner_reference(job["apiVersion"], job["kind"], meta["name"], meta["uid"])
    refs = updated["metadata"].get("ownerReferences") or []
    updated["metadata"]["ownerReferences"] = [*refs, owner]
    return updated


def finished(workload: Obj, succeeded: bool, message: str, now: str) -> Obj | None:
    """The Workload marked Finished (reason Succeeded or Failed, Kueue's own);
    None when it already is."""
    status = workload.get("status") or {}
    conditions = list(status.get("conditions") or [])
    if any(c.get("type") == FINISHED and c.get("status") == "True" for c in conditions):
        return None
    updated = copy.deepcopy(workload)
    updated_status = updated.setdefault("status", {})
    kept = [c for c in updated_status.get("conditions") or [] if c.get("type") != FINISHED]
    kept.append(
        {
            "type": FINISHED,
            "status": "True",
            "reason": "Succeeded" if succeeded else "Failed",
            "message": message,
            "lastTransitionTime": now,
        }
    )
    updated_status["conditions"] = kept
    return updated
