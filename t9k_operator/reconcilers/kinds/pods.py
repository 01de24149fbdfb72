"""Reading a pod the way the engine needs it: one :class:`ReplicaState`.

Pure: a pod dict in, a small frozen value out. The training container's exit
code decides restarts (``ExitCode`` policy) and failure messages; a pod that is
Failed without one (evicted, node lost) still counts as failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from t9k_operator.objects import Obj

# Exit codes that ``restartPolicy: ExitCode`` treats as transient (seed 001).
RESTARTABLE_EXIT_CODES = frozenset({130, 137, 138, 143})


@dataclass(frozen=True)
class ReplicaState:
    name: str
    uid: str
    phase: str  # Pending | Running | Succeeded | Failed | Unknown
    terminating: bool = False
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    containers: tuple[tuple[str, str, int | None, str], ...] = ()  # name, state, code, reason
    unschedulable: str = ""  # the scheduler's message while it cannot place the pod

    @property
    def ended(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def describe_failure(self) -> str:
        parts = [f"pod {self.name} failed"]
        if self.exit_code is not None:
            parts.append(f"with exit code {self.exit_code}")
        if self.reason:
            parts.append(f"({self.reason}{': ' + self.message if self.message else ''})")
        return " ".join(parts)


def _container_view(status: Obj) -> tuple[str, str, int | None, str]:
    state = status.get("state") or {}
    if "terminated" in state:
        term = state["terminated"] or {}
        return (
            status.get("name", ""),
            "Terminated",
            term.get("exitCode"),
            str(term.get("reason") or ""),
        )
    if "running" in state:
        return (status.get("name", ""), "Running", None, "")
    waiting = state.get("waiting") or {}
    return (status.get("name", ""), "Waiting", None, str(waiting.get("reason") or ""))


def replica_state(pod: Obj, training_container: str | None = None) -> ReplicaState:
    """Summarize ``pod``; ``training_container`` names the container whose exit
    code counts (default: the first container status)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    views = tuple(_container_view(s) for s in statuses)
    chosen = None
    for s in statuses:
        if training_container is not None and s.get("name") == training_container:
            chosen = s
            break
    if chosen is None and statuses:
        chosen = statuses[0]
    exit_code = None
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    if chosen is not None:
        term = (chosen.get("state") or {}).get("terminated")
        if term:
            exit_code = term.get("exitCode")
            reason = reason or str(term.get("reason") or "")
            message = message or str(term.get("message") or "")
    unschedulable = ""
    for cond in status.get("conditions") or []:
        if (cond.get("type"), cond.get("status"), cond.get("reason")) == (
            "PodScheduled",
            "False",
            "Unschedulable",
        ):
            unschedulable = str(cond.get("message") or "no node fits")
    return ReplicaState(
        unschedulable=unschedulable,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        phase=str(status.get("phase") or "Pending"),
        terminating=bool(meta.get("deletionTimestamp")),
        exit_code=exit_code,
        reason=reason,
        message=message,
        containers=views,
    )


def should_restart(policy: str, state: ReplicaState) -> bool:
    """Whether an ended replica is recreated under its restart policy."""
    if policy == "Always":
        return state.ended
    if state.phase != "Failed":
        return False
    if policy == "OnFailure":
        return True
    if policy == "ExitCode":
        return state.exit_code in RESTARTABLE_EXIT_CODES
    return False
