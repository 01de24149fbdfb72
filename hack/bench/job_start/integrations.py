"""The operator's integrations a run may use, ``--kueue`` and ``--gang``,
and the job as they shape it.

--kueue: every job waits in the LocalQueue :data:`LOCAL_QUEUE` (of a
ClusterQueue of its own, open to the bench's namespace only) at the priority
:data:`PRIORITY`, the WorkloadPriorityClass ``t9k-priority-50``; its one
ResourceFlavor has node labels every KWOK node carries, so the admitted pods'
node selector gets them and they stay placeable. Each replica asks for a
little CPU: Kueue assigns a flavor to the resources a pod set requests, and
to none when it requests nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from t9k_operator.integrations.gang.build import DEFAULT_SCHEDULER_NAMES
from t9k_operator.integrations.kueue import build as kueue_objects

from ..common import jobs
from ..common.jobs import SCHEDULER

LOCAL_QUEUE = "bench"
CLUSTER_QUEUE = "t9k-bench"
FLAVOR = "t9k-bench"
FLAVOR_LABELS = {"type": "kwok"}
PRIORITY = 50
CPU_MILLIS = 100  # per replica, with --kueue


@dataclass(frozen=True)
class Integrations:
    """What this tree's operator runs with besides a scenario's own flags:
    ``--kueue`` and ``--gang BACKEND`` (one of the operator's gang schedulers)."""

    kueue: bool = False
    gang: str | None = None

    @property
    def on(self) -> bool:
        return self.kueue or self.gang is not None

    def cluster_flags(self) -> tuple[str, ...]:
        """``hack.cluster up``'s flags that start what the operator needs."""
        gang = ("--gang", self.gang) if self.gang else ()
        return (*gang, *(("--kueue",) if self.kueue else ()))

    def operator_flags(self) -> tuple[str, ...]:
        gang = (f"--gang-scheduler={self.gang}",) if self.gang else ()
        return (*(("--kueue",) if self.kueue else ()), *gang)

    def scheduler(self) -> str:
        """The schedulerName the operator's pods end up with."""
        return DEFAULT_SCHEDULER_NAMES[self.gang] if self.gang else SCHEDULER

    def __str__(self) -> str:
        return " ".join(self.operator_flags()) or "none"


def job_body(name: str, replicas: int, using: Integrations | None = None) -> dict[str, Any]:
    """A job of ``replicas`` workers; with ``--kueue`` it names the LocalQueue
    (Kueue's label and its ``t9kScheduler.queue``), the priority
    :data:`PRIORITY` and asks :data:`CPU_MILLIS` of CPU a replica."""
    job = jobs.job_body(name, replicas)
    if using is not None and using.kueue:
        job["metadata"]["labels"] = {kueue_objects.QUEUE_LABEL: LOCAL_QUEUE}
        job["spec"]["scheduler"] = {"t9kScheduler": {"queue": LOCAL_QUEUE, "priority": PRIORITY}}
        (container,) = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"]
        container["resources"] = {"requests": {"cpu": f"{CPU_MILLIS}m"}}
    return job
