"""Checkpoint before a stop, the engine's stop gate (:class:`CheckpointStop`,
a :class:`~t9k_operator.reconcilers.engine.planning.StopGate`): a job that
asks for it (:class:`~t9k_operator.kinds.asks.CheckpointOnStop`) is stopped
in two steps when the operator stops its replicas for a reason that is not
the job's own (pause, a gate that holds everything, such as a queue's
preemption, a restart of the whole job).

1. The first pass that would delete them writes the request instead
   (``status.checkpoint.requestedAt`` and ``reason``, one status write) and
   deletes nothing; the progress endpoint's answers then carry
   ``checkpoint: true`` to every reporter of the job.
2. The replicas are deleted once every replica running at that pass has
   reported a checkpoint received at or after the request (the job's
   :class:`~t9k_operator.kinds.view.Checkpointed`), or once ``grace_seconds``
   have passed since the request (the pass asks to be requeued then, never
   sooner); ``stoppedAt`` and ``waited`` (whether they all had) record it.

Until a pass without a stop behind it, the stop stays made: a pass whose
cache is behind the deletes deletes the pods again, and asks nothing anew. A
stop called off while it waits (the job resumed, admitted again, finished)
drops the request; a stop made keeps ``reason``, ``stoppedAt`` and ``waited``.

A drain the operator can see coming (a running replica's node cordoned:
``ReplicaState.draining``) writes the same request, reason ``NodeCordoned``
(:meth:`CheckpointStop.drain_coming`), and deletes nothing: the drain's eviction stops the
pods, and they are recreated as disrupted. The request stands while such a
replica runs (its eviction's termination included) and is dropped once none
does; a stop of the operator's own during it asks anew, with its reason.

``lastStep`` is the step of the newest checkpoint the job's pods reported;
new pods get it as ``T9K_RESUME_STEP``. A job that does not ask stops at
once, and its status has no ``checkpoint``."""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum

from t9k_operator.kinds.asks import CheckpointOnStop
from t9k_operator.objects import Obj, parse_time
from t9k_operator.reconcilers.engine import fmt_time
from t9k_operator.reconcilers.engine.planning import Pass

KEY = "checkpoint"
"""Its part of the job's status."""


class Reason(StrEnum):
    """The reasons of its Events (and of a drain's request)."""

    CHECKPOINTING = "Checkpointing"
    CHECKPOINTED = "Checkpointed"
    CHECKPOINT_GRACE_PASSED = "CheckpointGracePassed"
    NODE_CORDONED = "NodeCordoned"  # a checkpoint asked before a drain's eviction


class CheckpointStop:
    """The stop gate of one pass of one job (the engine asks every job's:
    one that does not ask to checkpoint lets every stop go at once)."""

    def __init__(self) -> None:
        self.stopping = False  # a stop this pass waits on the replicas' checkpoints for

    def begin(self, p: Pass) -> None:
        """The status keeps the last pass's ``checkpoint``; ``lastStep`` follows
        the newest checkpoint reported (first: new pods resume from it)."""
        if p.prev.get(KEY):
            p.status[KEY] = dict(p.prev[KEY])
        note_checkpoints(p)

    def may_stop(self, p: Pass, reason: str) -> bool:
        """Whether the job's replicas may be deleted now for a stop of ``reason``;
        when not, the request is written (or stands) and the pass wakes at the
        grace's end."""
        asked = p.job.ask(CheckpointOnStop)
        if asked is None or p.job.debug:
            return True
        self.stopping = True
        return _may_stop(p, reason, asked)

    def drain_coming(self, p: Pass) -> None:
        """The request before a drain (:func:`before_drain`)."""
        if p.job.ask(CheckpointOnStop) is None or p.job.debug or self.stopping:
            return
        self.stopping = before_drain(p)

    def end(self, p: Pass) -> None:
        """A pass with no stop behind it calls the last one off (:func:`called_off`)."""
        if not self.stopping:
            called_off(p)

    def resume_step(self, p: Pass) -> int | None:
        """The step new pods resume from (``T9K_RESUME_STEP``), for a job that asks."""
        if p.job.ask(CheckpointOnStop) is None:
            return None
        step = (p.status.get(KEY) or {}).get("lastStep")
        return step if isinstance(step, int) else None


def _may_stop(p: Pass, reason: str, asked: CheckpointOnStop) -> bool:
    """:meth:`CheckpointStop.may_stop` for a job that asks."""
    saved: Obj = p.status.setdefault(KEY, {})
    if saved.get("stoppedAt") and saved.get("requestedAt") and saved.get("reason") == reason:
        return True  # made: its pods go (again, to a pass whose cache is behind the deletes)
    if pending(saved) and saved.get("reason") == Reason.NODE_CORDONED != reason:
        for key in ("requestedAt", "reason"):  # a drain's request: this stop asks anew
            saved.pop(key)
    running = [
        s
        for key, s in sorted(p.pods.items())
        if key in p.desired and s.phase == "Running" and not (s.terminating or s.ended)
    ]
    requested = parse_time(saved.get("requestedAt")) if pending(saved) else None
    if requested is None:
        if not running:
            if not saved:
                p.status.pop(KEY)
            return True  # nothing running to checkpoint
        for key in ("stoppedAt", "waited"):
            saved.pop(key, None)
        saved.update(requestedAt=fmt_time(p.now), reason=str(reason))
        p.event(
            "Normal",
            Reason.CHECKPOINTING,
            f"Asking the {len(running)} running replicas to checkpoint before they are "
            f"stopped ({reason}); waiting up to {asked.grace_seconds}s",
        )
        p.out.wake_in(asked.grace_seconds)
        return False
    answered = {c.uid for c in p.job.checkpoints if c.at >= requested}
    missing = [s.name for s in running if s.uid not in answered]
    deadline = requested + timedelta(seconds=asked.grace_seconds)
    if missing and p.now < deadline:
        p.out.wake_in((deadline - p.now).total_seconds())
        return False
    saved.update(stoppedAt=fmt_time(p.now), waited=not missing)
    if missing:
        p.event(
            "Warning",
            Reason.CHECKPOINT_GRACE_PASSED,
            f"Stopping the replicas ({saved.get('reason')}) after graceSeconds "
            f"({asked.grace_seconds}s) without a checkpoint from {', '.join(missing)}",
        )
    else:
        p.event(
            "Normal",
            Reason.CHECKPOINTED,
            f"The replicas have checkpointed (step {saved.get('lastStep')}): stopping them "
            f"({saved.get('reason')})",
        )
    return True


def before_drain(p: Pass) -> bool:
    """The request before a drain (``reason`` ``NodeCordoned``), for a job
    that asks: written once a wanted replica runs on a cordoned node, kept
    while one does (an evicted pod too, while it runs its termination grace),
    deleting nothing. Last in a pass, after a stop the pass made or waits on
    (which it leaves alone), it leaves alone another stop's pending request
    too. Whether a drain's request stands."""
    saved: Obj = p.status.get(KEY) or {}
    if pending(saved) and saved.get("reason") != Reason.NODE_CORDONED:
        return False
    deleting = {s.uid for s in p.out.delete}
    draining = [
        s
        for key, s in sorted(p.pods.items())
        if key in p.desired
        and s.draining
        and s.phase == "Running"
        and s.uid not in deleting
        and (s.disruption or not s.terminating)
    ]
    if not draining:
        return False  # none (any more): called_off drops the request
    if pending(saved):
        return True
    for key in ("stoppedAt", "waited"):
        saved.pop(key, None)
    p.status[KEY] = {
        **saved,
        "requestedAt": fmt_time(p.now),
        "reason": str(Reason.NODE_CORDONED),
    }
    where = ", ".join(f"{s.name} ({s.draining})" for s in draining)
    p.event(
        "Normal",
        Reason.CHECKPOINTING,
        f"Asking the replicas to checkpoint before the drain evicts them: {where}",
    )
    return True


def pending(saved: Obj) -> bool:
    """Whether ``status.checkpoint`` holds a request for a stop not made yet."""
    return bool(saved.get("requestedAt")) and not saved.get("stoppedAt")


def note_checkpoints(p: Pass) -> None:
    """``lastStep``: the newest checkpoint the job's pods reported, when newer
    than the one the status has (first in a pass: new pods resume from it)."""
    if p.job.ask(CheckpointOnStop) is None or not p.job.checkpoints:
        return
    newest = max(p.job.checkpoints, key=lambda c: (c.at, c.step))
    saved: Obj = p.status.get(KEY) or {}
    before = parse_time(saved.get("lastStepTime"))
    if before is not None and newest.at <= before:
        return
    p.status[KEY] = {
        **saved,
        "lastStep": newest.step,
        "lastStepTime": fmt_time(newest.at),
        "replica": newest.name,
    }


def called_off(p: Pass) -> None:
    """A pass with no stop behind it (the job resumed, restarted, was admitted
    again, finished) ends the last one: a request not carried out is dropped
    (the replicas are no longer asked); a stop made keeps its record, but for
    ``requestedAt``, so the next stop asks anew."""
    saved = p.status.get(KEY)
    if not saved or not saved.get("requestedAt"):
        return
    for key in ("requestedAt", "reason") if pending(saved) else ("requestedAt",):
        saved.pop(key, None)
    if not saved:
        p.status.pop(KEY)
