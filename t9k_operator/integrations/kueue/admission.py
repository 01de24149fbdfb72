"""A Kueue Workload's admission as a job reads it, and the quota given back
after an eviction (what Kueue's own job integrations do)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t9k_operator.objects import Obj


def _true(conditions: list[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    """The condition ``type_`` when it is True."""
    found = (c for c in conditions if c.get("type") == type_ and c.get("status") == "True")
    return next(found, None)


@dataclass(frozen=True)
class AdmissionState:
    """The job's Kueue Workload as last seen."""

    workload: str
    queue: str  # the LocalQueue it waits in
    admitted: bool = False
    evicted: str = ""  # Kueue took the admission back: its reason (Preempted, ...)
    message: str = ""  # Kueue's word on why it is not admitted (or was evicted)
    cluster_queue: str = ""  # where it was admitted


def admission_state(name: str, queue: str, workload: Mapping[str, Any] | None) -> AdmissionState:
    """A Workload (or its absence) as the job reads it."""
    status = (workload or {}).get("status") or {}
    conditions = list(status.get("conditions") or [])
    evicted = _true(conditions, "Evicted")
    admitted = _true(conditions, "Admitted") is not None and evicted is None
    pending = next((c for c in conditions if c.get("type") == "QuotaReserved"), None)
    if evicted is not None:
        message = str(evicted.get("message") or "")
    elif pending is not None and pending.get("status") != "True":
        message = str(pending.get("message") or pending.get("reason") or "")
    else:
        message = ""
    return AdmissionState(
        workload=name,
        queue=queue,
        admitted=admitted,
        evicted=str(evicted.get("reason") or "Evicted") if evicted is not None else "",
        message=message,
        cluster_queue=str((status.get("admission") or {}).get("clusterQueue") or ""),
    )


def holds_quota(workload: Mapping[str, Any]) -> bool:
    """Whether a Workload still holds a quota reservation."""
    status = workload.get("status") or {}
    return bool(status.get("admission")) or (
        _true(list(status.get("conditions") or []), "QuotaReserved") is not None
    )


def give_back(workload: Obj, admission: AdmissionState, now: str) -> Obj:
    """An evicted Workload without its quota reservation, so Kueue queues it again."""
    updated = copy.deepcopy(workload)
    status = updated.setdefault("status", {})
    status.pop("admission", None)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "QuotaReserved"]
    conditions.append(
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": admission.message or "evicted",
            "lastTransitionTime": now,
        }
    )
    for c in conditions:
        if c.get("type") == "Admitted" and c.get("status") == "True":
            c.update(status="False", reason="NoReservation", lastTransitionTime=now)
    status["conditions"] = conditions
    return updated
