"""Reading a pod the way the engine needs it: one :class:`ReplicaState`.

Pure: a pod dict in, a small frozen value out. A replica is its training
container: the container the builders launched the training in, found by name
in the pod's spec with the rule the builders use
(:func:`~t9k_operator.builders.common.training_container_index`: the kind's
conventional name, else the first container), then by that name in the status.
Kubelet lists ``containerStatuses`` sorted by name, not in the spec's order
(pkg/kubelet/kubelet_pods.go, ``convertToAPIContainerStatuses``), so a
position in that list says nothing.

The training container's exit code decides restarts (``ExitCode`` policy) and
failure messages. Once it has terminated the replica has ended, whatever else
runs in the pod: kubelet keeps a pod ``Running`` while any regular container
runs (``getPhase`` in the same file), so a log shipper or mesh proxy beside
the training would otherwise hold the replica, and the job, open for ever.
Native sidecars (init containers with ``restartPolicy: Always``) are never the
training container. A pod that is Failed without a training exit code
(evicted, node lost) still counts as failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from t9k_operator.builders.common import training_container_index
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
    # The pod's own phase, when it differs from the replica's: a training
    # container that has ended in a pod that other containers keep Running.
    pod_phase: str = ""

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


def training_container(pod: Obj, names: Sequence[str]) -> str | None:
    """The name of the pod's training container: ``names`` (the kind's
    conventional ones) in that order, else the pod's first container, as the
    builders chose it. None for a pod without containers."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    name = containers[training_container_index(pod, names)].get("name")
    return None if name is None else str(name)


def replica_state(pod: Obj, training_names: Sequence[str] = ()) -> ReplicaState:
    """Summarize ``pod``, whose training container is found with
    ``training_names`` (:func:`training_container`)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    views = tuple(_container_view(s) for s in statuses)
    wanted = training_container(pod, training_names)
    chosen = next((s for s in statuses if s.get("name") == wanted), None)
    phase = str(status.get("phase") or "Pending")
    pod_phase = ""
    exit_code = None
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    if chosen is not None:
        term = (chosen.get("state") or {}).get("terminated")
        if term:
            exit_code = term.get("exitCode")
            reason = reason or str(term.get("reason") or "")
            message = message or str(term.get("message") or "")
            ended = "Succeeded" if exit_code == 0 else "Failed"
            # Ended, though sidecars may keep the pod going (the pod has
            # restartPolicy Never, so the container never runs again); or a
            # sidecar's failure failed a pod whose training succeeded. A pod
            # the node failed (a reason of its own: Evicted) stays failed.
            if phase not in ("Succeeded", "Failed") or (
                phase == "Failed" and ended == "Succeeded" and not status.get("reason")
            ):
                pod_phase, phase = phase, ended
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
        phase=phase,
        terminating=bool(meta.get("deletionTimestamp")),
        exit_code=exit_code,
        reason=reason,
        message=message,
        containers=views,
        pod_phase=pod_phase,
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
