"""Checkpoint before a stop (runPolicy.checkpoint), the checkpoint
integration's stop gate in the engine's passes: a pause, a gate that holds
everything (a queue's preemption) and a whole-job restart
first write the request and delete nothing; the replicas go once every
running one has reported a checkpoint received after the request, or once
graceSeconds have passed; a stop called off drops the request; new pods
resume from the newest checkpoint. Statuses are written by hand here."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from t9k_operator.integrations.checkpoint.integration import Checkpoint
from t9k_operator.kinds.asks import CheckpointOnStop
from t9k_operator.kinds.view import Checkpointed, Gate, Hold, JobView, asks_of
from t9k_operator.reconcilers.engine import Plan, plan
from tests.unit.reconcilers.test_engine import KIND, T0, Pods, deleted, job, pod, running

GRACE = 120
RUNNING: dict[str, Any] = {
    "phase": "Running",
    "startTime": "2026-03-01T11:00:00Z",
    "conditions": [{"type": "Running", "status": "True", "reason": "-", "message": ""}],
}
ASKED = asks_of(CheckpointOnStop(GRACE))
PODS = running(job())


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def saved(
    pods: Pods, step: int, when: datetime, *keys: tuple[str, int]
) -> tuple[Checkpointed, ...]:
    """Checkpoints of ``step`` from the pods of ``keys``, received at ``when``."""
    return tuple(Checkpointed(pods[k].uid, pods[k].name, step, when) for k in keys)


def requested(reason: str = "Paused", **more: Any) -> dict[str, Any]:
    return {
        **RUNNING,
        "checkpoint": {"requestedAt": "2026-03-01T12:00:00Z", "reason": reason, **more},
    }


def run(j: JobView, pods: Pods, now: datetime = T0) -> Plan:
    """A pass with the checkpoint integration's stop gate, made for it."""
    return plan(KIND, j, pods, now, [Checkpoint().stop_gate(None, j)])


ALL = (("master", 0), ("worker", 0), ("worker", 1))


def test_a_job_without_the_field_stops_at_once_and_has_no_checkpoint_status() -> None:
    j = job(paused=True, status=RUNNING)
    p = run(j, dict(PODS))
    assert deleted(p) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert "checkpoint" not in p.status


def test_a_pause_first_asks_the_running_replicas_and_deletes_nothing() -> None:
    j = job(paused=True, status=RUNNING, asks=ASKED)
    p = run(j, dict(PODS))
    assert deleted(p) == []
    assert p.status["checkpoint"] == {"requestedAt": "2026-03-01T12:00:00Z", "reason": "Paused"}
    assert p.status["phase"] == "Running"  # until its pods are deleted
    assert p.requeue_after == GRACE
    assert [r for _, r, _ in p.events] == ["Checkpointing"]


def test_the_replicas_go_once_every_running_one_has_checkpointed_after_the_request() -> None:
    pods = dict(PODS)
    some = saved(pods, 420, at(5), ("master", 0), ("worker", 0))
    waiting = run(job(paused=True, status=requested(), asks=ASKED, checkpoints=some), pods, at(6))
    assert deleted(waiting) == []
    assert waiting.requeue_after == GRACE - 6  # the grace's end, not sooner
    assert waiting.status["checkpoint"]["lastStep"] == 420
    every = saved(pods, 420, at(5), *ALL)
    p = run(job(paused=True, status=requested(), asks=ASKED, checkpoints=every), pods, at(7))
    assert deleted(p) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert p.status["phase"] == "Paused"
    assert p.status["checkpoint"] == {
        "requestedAt": "2026-03-01T12:00:00Z",
        "reason": "Paused",
        "lastStep": 420,
        "lastStepTime": "2026-03-01T12:00:05Z",
        "replica": "j-master-0",
        "stoppedAt": "2026-03-01T12:00:07Z",
        "waited": True,
    }
    assert [r for _, r, _ in p.events] == ["Checkpointed", "Paused"]


def test_a_checkpoint_from_before_the_request_does_not_answer_it() -> None:
    pods = dict(PODS)
    old = saved(pods, 300, at(-30), *ALL)
    p = run(job(paused=True, status=requested(), asks=ASKED, checkpoints=old), pods, at(10))
    assert deleted(p) == []


def test_past_the_grace_the_replicas_go_without_their_checkpoints() -> None:
    pods = dict(PODS)
    some = saved(pods, 420, at(5), ("master", 0))
    j = job(paused=True, status=requested(), asks=ASKED, checkpoints=some)
    assert deleted(run(j, pods, at(GRACE - 1))) == []
    p = run(j, pods, at(GRACE))
    assert deleted(p) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert p.status["checkpoint"]["waited"] is False
    (warning,) = [m for t, r, m in p.events if r == "CheckpointGracePassed"]
    assert "j-worker-0, j-worker-1" in warning and "j-master-0" not in warning


def test_replicas_not_running_are_not_waited_for() -> None:
    pods = {**PODS, ("worker", 1): pod("worker", 1, "Pending")}
    every = saved(pods, 420, at(5), ("master", 0), ("worker", 0))
    p = run(job(paused=True, status=requested(), asks=ASKED, checkpoints=every), pods, at(6))
    assert deleted(p) == ["j-master-0", "j-worker-0", "j-worker-1"]
    # And with nothing running there is nothing to ask: stopped at once, no request.
    pending = {k: replace(v, phase="Pending") for k, v in PODS.items()}
    q = run(job(paused=True, status=RUNNING, asks=ASKED), pending)
    assert len(q.delete) == 3 and "checkpoint" not in q.status


def test_a_stop_called_off_drops_the_request_and_keeps_the_last_step() -> None:
    status = requested(lastStep=7, lastStepTime="2026-03-01T11:50:00Z", replica="j-master-0")
    p = run(job(status=status, asks=ASKED), dict(PODS), at(3))  # unpaused meanwhile
    assert deleted(p) == []
    assert p.status["checkpoint"] == {
        "lastStep": 7,
        "lastStepTime": "2026-03-01T11:50:00Z",
        "replica": "j-master-0",
    }


def test_a_gate_that_holds_everything_waits_for_the_checkpoints_too() -> None:
    gate = Gate("EvictedByKueue", "Kueue evicted Workload w (Preempted)", Hold.ALL)
    j = job(gates=(gate,), status=RUNNING, asks=ASKED)
    p = run(j, dict(PODS))
    assert deleted(p) == []
    assert p.status["checkpoint"]["reason"] == "EvictedByKueue"
    assert p.status["phase"] == "Running" and p.status["startTime"] == RUNNING["startTime"]
    every = saved(PODS, 64, at(2), *ALL)
    q = run(replace(j, status=p.status, checkpoints=every), dict(PODS), at(3))
    assert len(q.delete) == 3 and q.status["phase"] == "Pending"
    assert q.status["checkpoint"]["waited"] is True


def test_a_whole_job_restart_counts_at_once_and_recreates_after_the_checkpoints() -> None:
    j = job(restart_scope="Job", status=RUNNING, asks=ASKED)
    pods = running(j)
    pods[("worker", 1)] = pod("worker", 1, "Failed", 1)
    first = run(j, pods)
    assert deleted(first) == []  # not even the failed one: nothing is recreated meanwhile
    assert first.create == []
    assert first.status["restartCount"] == 1
    # The failed one counted; the others part of the attempt (as restartScope Job has it).
    assert sorted(first.status["countedFailures"]) == sorted(s.uid for s in pods.values())
    assert first.status["checkpoint"]["reason"] == "Restarting"
    # The two running replicas checkpoint; the failed one is not waited for.
    every = saved(pods, 88, at(4), ("master", 0), ("worker", 0))
    second = run(replace(j, status=first.status, checkpoints=every), pods, at(5))
    assert deleted(second) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert second.status["restartCount"] == 1  # one attempt, counted once
    assert second.status["checkpoint"]["waited"] is True
    # The new pods resume from the checkpoint.
    third = run(replace(j, status=second.status, checkpoints=every), {}, at(9))
    assert {(t, i, m.resume_step) for t, i, m in third.create} == {
        ("master", 0, 88),
        ("worker", 0, 88),
        ("worker", 1, 88),
    }


def test_new_pods_resume_from_the_newest_checkpoint_only_when_the_job_asks() -> None:
    status = {**RUNNING, "checkpoint": {"lastStep": 5, "lastStepTime": "2026-03-01T11:00:00Z"}}
    newer = (Checkpointed("gone-uid", "j-master-0", 9, at(-10)),)
    p = run(job(status=status, asks=ASKED, checkpoints=newer), {})
    assert {m.resume_step for _, _, m in p.create} == {9}
    older = (Checkpointed("gone-uid", "j-master-0", 2, at(-7200)),)
    q = run(job(status=status, asks=ASKED, checkpoints=older), {})
    assert {m.resume_step for _, _, m in q.create} == {5}
    assert q.status["checkpoint"]["lastStep"] == 5
    r = run(job(status=status, checkpoints=newer), {})
    assert {m.resume_step for _, _, m in r.create} == {None}


def test_a_pass_whose_cache_is_behind_the_deletes_asks_nothing_anew() -> None:
    """Right after the stop, a pass may still see the pods running: it deletes
    them again and leaves the record as it was."""
    pods = dict(PODS)
    j = job(paused=True, status=requested(), asks=ASKED)
    stop = run(j, pods, at(GRACE))
    assert len(stop.delete) == 3 and stop.status["checkpoint"]["waited"] is False
    stale = run(replace(j, status=stop.status), pods, at(GRACE + 1))
    assert len(stale.delete) == 3
    assert stale.status["checkpoint"] == stop.status["checkpoint"]
    assert [r for _, r, _ in stale.events] == []
    # Resumed: the stop is over; its record stays, and the next stop asks anew.
    going = {k: replace(v, terminating=True) for k, v in pods.items()}
    resumed = run(replace(j, paused=False, status=stale.status), going, at(GRACE + 5))
    assert resumed.status["checkpoint"] == {
        "reason": "Paused",
        "stoppedAt": "2026-03-01T12:02:00Z",
        "waited": False,
    }
    again = run(replace(j, status=resumed.status), running(job()), at(GRACE + 60))
    assert deleted(again) == []
    assert again.status["checkpoint"]["requestedAt"] == "2026-03-01T12:03:00Z"
    assert "stoppedAt" not in again.status["checkpoint"]


def test_a_replica_that_fails_while_the_others_checkpoint_is_part_of_the_same_attempt() -> None:
    j = job(restart_scope="Job", status=RUNNING, asks=ASKED)
    pods = running(j)
    pods[("worker", 1)] = pod("worker", 1, "Failed", 1)
    first = run(j, pods)
    assert sorted(first.status["countedFailures"]) == sorted(s.uid for s in pods.values())
    pods[("master", 0)] = replace(pods[("master", 0)], phase="Failed", exit_code=1)
    second = run(replace(j, status=first.status), pods, at(3))
    assert second.status["restartCount"] == 1 and second.events == []
    assert deleted(second) == []  # worker-0 still runs: its checkpoint is waited for
