"""The one applier: a pass's planned actions carried out in order.

:func:`~t9k_operator.reconcilers.pipeline.plan.assemble` puts the actions
in their crash-safe order; here they are written, and nothing is planned:

* the job's status first (:class:`StatusWriter`: the status subresource,
  optimistic concurrency, a 409 a rate-limited retry), remembered until the
  cache shows it; then the Events and figures that go with it (the Created
  Event once, after the first status is stored: a write that conflicts is
  retried from a job still without status, and would tell it again);
* every other action through the
  :class:`~t9k_operator.reconcilers.pipeline.children.Writer` (deletes with uid
  preconditions, AlreadyExists of the job's own child being success, name
  clashes told, the pods in slow-start batches).

The first child the job cannot have ends the pass; a soft action's refusal
does not. Both are returned, for the reconciler to record for the next pass.

An integration's own controller (of objects that are not jobs) writes
through the same two: a :class:`StatusWriter` and a
:class:`~t9k_operator.reconcilers.pipeline.children.Writer` of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from t9k_operator.kinds.contract import JobKind
from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.objects import Obj
from t9k_operator.reconcilers.pipeline.children import Writer
from t9k_operator.reconcilers.pipeline.contract import Action, Event, Refusal
from t9k_operator.reconcilers.pipeline.lifecycle import Lifecycle
from t9k_operator.reconcilers.pipeline.plan import Problem, Recorded, Steps
from t9k_operator.reconcilers.pipeline.writes import WrittenStatuses
from t9k_operator.resources import Resource
from t9k_operator.runtime.events import EventRecorder


@dataclass
class Applied:
    """What became of a pass's actions."""

    gone: bool = False  # the job was deleted meanwhile (or by the pass)
    problem: Problem | None = None  # the child the job could not have: the pass ended there
    refused: list[tuple[Action, Refusal]] = field(default_factory=list)  # soft actions
    again: bool = False  # an update met a change: the next pass looks again

    def recorded(self) -> Recorded | None:
        """What the next pass must plan from, if anything."""
        if self.problem is None and not self.refused:
            return None
        return Recorded(self.problem, tuple(self.refused))


class StatusWriter:
    """Writes the status of one kind's objects, and remembers each write
    until the cache shows it (the next pass waits for it, rather than plan
    from the status before it)."""

    def __init__(self, client: KubeClient, written: WrittenStatuses) -> None:
        self.client, self.written = client, written

    def write(self, action: Action, key: str) -> bool:
        """Carry out a ``replace_status`` action (its body holds the new status,
        and the resourceVersion it was planned from: a 409 propagates, for a
        rate-limited retry); False when the object is gone meanwhile."""
        if action.verb != "replace_status":
            raise ValueError(f"not a status write: {action.verb!r}")
        try:
            written = self.client.replace_status(action.resource, action.body)
        except NotFound:
            return False
        self.written.remember(key, written)
        return True


class Applier:
    """Carries out the passes of one job kind."""

    def __init__(
        self,
        kind: JobKind[Any],
        resource: Resource,
        client: KubeClient,
        recorder: EventRecorder,
        writer: Writer,
        lifecycle: Lifecycle,
        written: WrittenStatuses,
    ) -> None:
        self.kind, self.resource = kind, resource
        self.client, self.recorder, self.writer = client, recorder, writer
        self.lifecycle, self.status = lifecycle, StatusWriter(client, written)

    def apply(self, key: str, job: Obj, steps: Steps, rlog: Any) -> Applied:
        """Carry out ``steps`` for ``job`` (as cached), in order."""
        out = Applied()
        actions = list(steps.actions)
        status = actions.pop(0) if actions and self._is_status(actions[0]) else None
        if status is not None:
            if not self.status.write(status, key):
                # Deleted after the cache last saw it: its children go with it, and
                # the informer's delete event ends this key's records.
                rlog.info("the job is gone; nothing to do")
                out.gone = True
                return out
            plan = steps.plan
            rlog.info(
                "status", phase=plan.status.get("phase"), restarts=plan.status.get("restartCount")
            )
        self._tell(job, steps)
        uid = job["metadata"]["uid"]
        for action in actions:
            result = self.writer.act(action, key, uid, rlog)
            if action.verb == "delete" and action.resource == self.resource:
                out.gone = True
            if isinstance(result, Problem):
                out.problem = result
                break
            if isinstance(result, Refusal):
                out.again = True
                if action.soft:
                    out.refused.append((action, result))
        return out

    def _is_status(self, action: Action) -> bool:
        return action.verb == "replace_status" and action.resource == self.resource

    def _tell(self, job: Obj, steps: Steps) -> None:
        """The pass's Events and figures, once its status is stored."""
        plan = steps.plan
        if not job.get("status") and not steps.quiet:
            self.lifecycle.accepted(job, self.kind, self.recorder)
            self._record(job, steps.told)
        self._record(job, plan.events)
        self.lifecycle.restarted(job["metadata"]["namespace"], plan.restarts)
        if plan.finished is not None:
            self.lifecycle.finished(job, plan)

    def _record(self, job: Obj, events: list[Event]) -> None:
        for type_, reason, message in events:
            self.recorder.record(
                job, "Warning" if type_ == "Warning" else "Normal", reason, message
            )
