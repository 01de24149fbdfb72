"""Checkpoint before a drain, the checkpoint integration's stop gate in the
engine's passes: a running replica on a cordoned
node (``ReplicaState.draining``, which the apply step reads from the Node)
makes a job that asks for checkpoints write the request (reason
``NodeCordoned``) once, deleting nothing; the request stands while such a
replica runs (its eviction's termination included) and goes, keeping
``lastStep``, once none does. A stop of the operator's own is asked for
anew. Statuses are written by hand here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from t9k_operator.integrations.progress.endpoint import checkpoint_asked
from tests.unit.reconcilers.test_checkpoint_stops import (
    ALL,
    ASKED,
    GRACE,
    RUNNING,
    at,
    requested,
    run,
    saved,
)
from tests.unit.reconcilers.test_engine import deleted, job, running

CORDONED = "node n1 is cordoned"
LAST = {"lastStep": 7, "lastStepTime": "2026-03-01T11:50:00Z", "replica": "j-master-0"}


def on_cordoned_node(*keys: tuple[str, int]) -> Any:
    """The job's pods running, those of ``keys`` on cordoned node n1."""
    pods = running(job())
    for key in keys:
        pods[key] = replace(pods[key], node="n1", draining=CORDONED)
    return pods


def test_a_replica_on_a_cordoned_node_asks_once_and_deletes_nothing() -> None:
    pods = on_cordoned_node(("worker", 1))
    j = job(status={**RUNNING, "checkpoint": dict(LAST)}, asks=ASKED)
    first = run(j, pods)
    assert deleted(first) == [] and first.create == []
    assert first.status["checkpoint"] == {
        **LAST,
        "requestedAt": "2026-03-01T12:00:00Z",
        "reason": "NodeCordoned",
    }
    ((type_, reason, message),) = first.events
    assert (type_, reason) == ("Normal", "Checkpointing")
    assert "j-worker-1 (node n1 is cordoned)" in message and "j-worker-0" not in message
    assert first.requeue_after is None  # the drain's eviction stops the pods, not a grace
    # The endpoint's answers then ask every reporter of the job.
    assert checkpoint_asked({"status": first.status})
    # Later passes keep it as it is, and say nothing again.
    later = run(replace(j, status=first.status), pods, at(GRACE * 3))
    assert later.status["checkpoint"] == first.status["checkpoint"]
    assert later.events == [] and deleted(later) == []
    assert checkpoint_asked({"status": later.status})


def test_the_replicas_checkpoint_becomes_the_last_step_while_the_request_stands() -> None:
    pods = on_cordoned_node(("worker", 1))
    j = job(status=requested("NodeCordoned"), asks=ASKED, checkpoints=saved(pods, 420, at(3), *ALL))
    p = run(j, pods, at(4))
    assert p.status["checkpoint"]["lastStep"] == 420
    assert p.status["checkpoint"]["reason"] == "NodeCordoned"
    assert "stoppedAt" not in p.status["checkpoint"] and deleted(p) == []


def test_uncordoned_the_request_goes_and_the_last_step_stays() -> None:
    j = job(status=requested("NodeCordoned", **LAST), asks=ASKED)
    p = run(j, running(j), at(30))
    assert p.status["checkpoint"] == LAST
    assert not checkpoint_asked({"status": p.status})
    assert p.events == [] and deleted(p) == []


def test_the_request_stands_while_the_evicted_pod_terminates_and_goes_with_it() -> None:
    pods = on_cordoned_node(("worker", 1))
    evicted = replace(pods[("worker", 1)], terminating=True, disruption="EvictionByEvictionAPI")
    pods[("worker", 1)] = evicted
    j = job(status=requested("NodeCordoned", **LAST), asks=ASKED)
    terminating = run(j, pods, at(5))
    assert terminating.status["checkpoint"]["requestedAt"] == "2026-03-01T12:00:00Z"
    assert deleted(terminating) == []
    # Gone: recreated as a disruption, from the last step; the request dropped.
    del pods[("worker", 1)]
    gone = run(replace(j, status=terminating.status), pods, at(40))
    assert gone.status["checkpoint"] == LAST
    assert [(t, i, m.resume_step) for t, i, m in gone.create] == [("worker", 1, 7)]


def test_a_pod_the_operator_deletes_on_a_cordoned_node_is_not_asked() -> None:
    pods = on_cordoned_node(("worker", 1))
    pods[("worker", 1)] = replace(pods[("worker", 1)], terminating=True)  # no disruption
    p = run(job(status={**RUNNING, "checkpoint": dict(LAST)}, asks=ASKED), pods)
    assert p.status["checkpoint"] == LAST and p.events == []


def test_a_job_that_does_not_ask_is_not_asked() -> None:
    pods = on_cordoned_node(*ALL)
    p = run(job(status=RUNNING), pods)
    assert "checkpoint" not in p.status and p.events == [] and deleted(p) == []
    q = run(job(status=RUNNING, asks=ASKED, debug=True), pods)
    assert "checkpoint" not in q.status and q.events == []


def test_a_pending_request_for_a_pause_is_left_alone() -> None:
    pods = on_cordoned_node(*ALL)
    p = run(job(paused=True, status=requested("Paused"), asks=ASKED), pods, at(3))
    assert p.status["checkpoint"] == {"requestedAt": "2026-03-01T12:00:00Z", "reason": "Paused"}
    assert p.events == [] and deleted(p) == []
    # Nor is a whole-job restart's, written by the same pass.
    pods[("worker", 0)] = replace(pods[("worker", 0)], phase="Failed", exit_code=1)
    r = run(job(restart_scope="Job", status=RUNNING, asks=ASKED), pods)
    assert r.status["checkpoint"]["reason"] == "Restarting"
    (asking,) = [m for _, reason, m in r.events if reason == "Checkpointing"]
    assert "Restarting" in asking and "drain" not in asking


def test_a_pause_during_the_drains_request_asks_anew_and_waits_for_its_own() -> None:
    pods = on_cordoned_node(("worker", 1))
    drained = requested("NodeCordoned", **LAST)
    early = saved(pods, 420, at(5), *ALL)  # the replicas answered the drain's request
    j = job(paused=True, status=drained, asks=ASKED, checkpoints=early)
    first = run(j, pods, at(60))
    assert deleted(first) == []
    checkpoint = first.status["checkpoint"]
    assert (checkpoint["requestedAt"], checkpoint["reason"]) == ("2026-03-01T12:01:00Z", "Paused")
    assert checkpoint["lastStep"] == 420
    assert [e[1] for e in first.events] == ["Checkpointing"]
    assert first.requeue_after == GRACE
    # Answered after the pause's request: the pods go, the stop recorded as the pause's.
    every = saved(pods, 500, at(62), *ALL)
    second = run(replace(j, status=first.status, checkpoints=early + every), pods, at(63))
    assert deleted(second) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert second.status["checkpoint"]["reason"] == "Paused"
    assert second.status["checkpoint"]["waited"] is True
    assert second.status["phase"] == "Paused"


def test_a_pause_during_the_drains_request_with_nothing_running_drops_it() -> None:
    gone = {k: replace(v, phase="Pending", node="", draining="") for k, v in running(job()).items()}
    j = job(paused=True, status=requested("NodeCordoned", **LAST), asks=ASKED)
    p = run(j, gone, at(10))
    assert len(p.delete) == 3
    assert p.status["checkpoint"] == LAST
    q = run(replace(j, status=p.status), {}, at(11))
    assert q.status["checkpoint"] == LAST and q.status["phase"] == "Paused"
