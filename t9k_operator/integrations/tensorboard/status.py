"""A TensorBoard's state, read purely: its pod as :class:`Readiness`, the
TensorBoard's status from that, and a TensorBoard read back as a job's
dependent (:class:`TensorBoardState`).

No I/O, no clock (``now`` is a parameter): the reconciler in
``integrations/tensorboard/controller.py`` observes and acts, this module decides what
the observation means. The Ready condition's reasons (``api/tensorboard.py``
lists which mean "on its way"):

* ``Ready``: the pod's Ready condition is True (its readiness probe answers);
* ``Creating``, ``Pending``, ``Starting``, ``Replacing``: on its way;
* ``Suspended``: ``spec.suspend`` holds, its pod is deleted (not trouble);
* ``Unschedulable`` (the scheduler's message: a missing or unbound claim, no
  node with the resources), the container's waiting reason
  (``ImagePullBackOff``, ``ErrImagePull``, ``CrashLoopBackOff``,
  ``CreateContainerConfigError``, ...), ``PodFailed`` (evicted, its node lost;
  it is replaced), ``FailedCreate``, ``NameConflict``, ``InvalidSpec``: trouble.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from t9k_operator.api.tensorboard import (
    PROGRESS_REASONS,
    READY,
    SUSPENDED,
    TensorBoardObject,
)
from t9k_operator.integrations.tensorboard import build
from t9k_operator.kinds.pods import same_cause
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.engine import parse_time, set_condition

STARTING_WAITS = ("ContainerCreating", "PodInitializing")
"""Container waiting reasons that mean the container is on its way."""
REPLACE_FAILED_AFTER = 10.0
"""Seconds after its pod failed (evicted, its node lost) that a TensorBoard's pod
is replaced: a pod that fails at once is not recreated in a tight loop."""


@dataclass(frozen=True)
class Readiness:
    """Whether a TensorBoard serves, and why not: its Ready condition."""

    ready: bool
    reason: str
    message: str

    @property
    def trouble(self) -> bool:
        return not self.ready and self.reason not in PROGRESS_REASONS


def pod_readiness(pod: Mapping[str, Any] | None) -> Readiness:
    """A TensorBoard's pod (None: not created yet) read as its readiness."""
    if pod is None:
        return Readiness(False, "Creating", "its pod is being created")
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    name = str(meta.get("name", ""))
    if meta.get("deletionTimestamp"):
        return Readiness(False, "Replacing", f"pod {name} is being deleted; a new one follows")
    phase = str(status.get("phase") or "Pending")
    if phase in ("Failed", "Succeeded"):
        why = ": ".join(str(s) for s in (status.get("reason"), status.get("message")) if s)
        return Readiness(
            False, "PodFailed", f"pod {name} ended ({phase}{', ' + why if why else ''})"
        )
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    if (conditions.get("Ready") or {}).get("status") == "True":
        return Readiness(True, "Ready", f"pod {name} serves TensorBoard")
    scheduled = conditions.get("PodScheduled") or {}
    if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        why = str(scheduled.get("message") or "no node fits")
        return Readiness(False, "Unschedulable", f"pod {name} cannot be scheduled: {why}")
    for c in status.get("containerStatuses") or []:
        state = c.get("state") or {}
        waiting = state.get("waiting")
        if waiting and waiting.get("reason") and waiting["reason"] not in STARTING_WAITS:
            detail = f": {waiting['message']}" if waiting.get("message") else ""
            return Readiness(
                False, str(waiting["reason"]), f"container {c.get('name')} of pod {name}{detail}"
            )
        if "running" in state:
            return Readiness(False, "Starting", f"pod {name} runs; TensorBoard is not serving yet")
    return Readiness(False, "Pending", f"pod {name} is {phase.lower()}")


def failed_at(pod: Mapping[str, Any]) -> datetime | None:
    """When a pod ended, as it says (its latest condition or container finish time)."""
    status = pod.get("status") or {}
    times = [str(c.get("lastTransitionTime") or "") for c in status.get("conditions") or []]
    for c in status.get("containerStatuses") or []:
        times.append(str(((c.get("state") or {}).get("terminated") or {}).get("finishedAt") or ""))
    parsed = [t for t in (parse_time(v) for v in times if v) if t is not None]
    return max(parsed) if parsed else None


def replace_in(pod: Mapping[str, Any], now: datetime) -> float:
    """Seconds until an ended pod is replaced (0: now)."""
    ended = failed_at(pod)
    if ended is None:
        return 0.0
    return max(0.0, REPLACE_FAILED_AFTER - (now - ended).total_seconds())


def render_status(
    tb: TensorBoardObject | None,
    stored: Mapping[str, Any],
    readiness: Readiness,
    now: datetime,
) -> Obj:
    """The TensorBoard's status: its Ready condition (whose lastTransitionTime moves
    only with its status), and where it serves (None ``tb``: its spec does not parse)."""
    prev = stored.get("status") or {}
    meta = stored.get("metadata") or {}
    conditions = [dict(c) for c in prev.get("conditions") or [] if c.get("type") == READY]
    status_value = "True" if readiness.ready else "False"
    set_condition(conditions, READY, status_value, readiness.reason, readiness.message, now)
    status: Obj = {"observedGeneration": int(meta.get("generation") or 0), "conditions": conditions}
    if tb is None:
        return status
    namespace, name = tb.namespace, tb.name
    if not tb.spec.suspend:
        status["pod"] = build.service_name(name)
    status.update(
        service=build.service_name(name),
        url=build.url(namespace, name),
        portForward=build.port_forward(namespace, name),
        runs=[
            {"name": run.name, "fileset": run.fileset, "path": run.path}
            for run in build.runs(tb.spec)
        ],
    )
    return status


@dataclass(frozen=True)
class TensorBoardState:
    """A job's TensorBoard (``spec.tensorboardSpec``) as last seen."""

    name: str
    namespace: str
    uid: str = ""  # "" while it does not exist
    action: str = "NOP"  # what this reconcile does to it: Create | Update | NOP
    ready: bool = False
    reason: str = ""  # its Ready condition's reason
    message: str = ""  # its Ready condition's message, or why it cannot be had
    failed: bool = False  # it cannot be had: the API server refused it, or its name is taken


def ready_condition(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == READY:
            return dict(cond)
    return None


def transition_event(prev: Mapping[str, Any], readiness: Readiness) -> tuple[str, str, str] | None:
    """The Event for a change of the Ready condition's reason: a Warning when the
    TensorBoard gets into trouble, Normal when it becomes ready or is suspended;
    else none."""
    before = ready_condition(prev) or {}
    if same_cause(str(before.get("reason") or ""), readiness.reason):
        return None  # the same reason, or kubelet's other word for the same cause
    if readiness.ready:
        return ("Normal", "Ready", f"TensorBoard is ready: {readiness.message}")
    if readiness.reason == SUSPENDED:
        return ("Normal", SUSPENDED, f"TensorBoard is suspended: {readiness.message}")
    if readiness.trouble:
        return ("Warning", readiness.reason, f"TensorBoard is not ready: {readiness.message}")
    return None


def dependent_state(
    name: str,
    namespace: str,
    seen: Mapping[str, Any] | None,
    action: str,
    refused: str = "",
) -> TensorBoardState:
    """A job's TensorBoard ``name`` as last seen (None: it does not exist), with what
    the reconciler does to it (``action``) and why it cannot be had (``refused``)."""
    meta = (seen or {}).get("metadata") or {}
    uid = str(meta.get("uid") or "")
    if seen is None or refused:
        return TensorBoardState(name, namespace, uid, action, message=refused, failed=bool(refused))
    cond = ready_condition(seen.get("status") or {})
    if cond is None:
        message = "the operator has not reported on it yet"
        return TensorBoardState(name, namespace, uid, action, reason="Creating", message=message)
    return TensorBoardState(
        name,
        namespace,
        uid,
        action,
        ready=cond.get("status") == "True",
        reason=str(cond.get("reason") or ""),
        message=str(cond.get("message") or ""),
    )
