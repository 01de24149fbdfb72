"""The engine's hang rule (runPolicy.progress): a replica that reported and
then went silent past hangTimeoutSeconds makes the job hung; the job fails
with reason Hung, or restarts as one counted attempt; a pod that never
reported is never judged."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from t9k_operator.integrations.progress.integration import heartbeats
from t9k_operator.kinds.asks import HangPolicy
from t9k_operator.kinds.pods import ReplicaState
from t9k_operator.kinds.view import Heartbeat, JobView, Role
from t9k_operator.reconcilers.engine import Plan, Reason, get_condition, plan
from tests.unit.reconcilers.test_engine import KIND, T0, job, pod, running

TIMEOUT = 600
RUNNING_STATUS: dict[str, Any] = {
    "phase": "Running",
    "startTime": "2026-03-01T11:00:00Z",
    "conditions": [{"type": "Running", "status": "True", "reason": "-", "message": ""}],
}


def hung_job(on_hang: str = "Fail", heard: dict[str, datetime] | None = None, **kw: Any) -> JobView:
    return job(
        heartbeats=beats(HangPolicy(TIMEOUT, on_hang), heard or {}),
        status=RUNNING_STATUS,
        **kw,
    )


def beats(policy: HangPolicy | None, heard: dict[str, datetime]) -> tuple[Heartbeat, ...]:
    """The pods heard from (by uid, when) as the engine sees them under ``policy``."""
    return heartbeats(policy, heard.items())


def run(j: JobView, pods: dict[tuple[str, int], ReplicaState], now: datetime) -> Plan:
    return plan(KIND, j, pods, now)


def ago(seconds: float) -> datetime:
    return T0 - timedelta(seconds=seconds)


PODS = running(job())
"""The job's running pods, the same incarnations in every test: the reports
below are theirs."""
MASTER = PODS[("master", 0)].uid
WORKER0 = PODS[("worker", 0)].uid
WORKER1 = PODS[("worker", 1)].uid


def running_pods() -> dict[tuple[str, int], ReplicaState]:
    return dict(PODS)


@pytest.mark.parametrize(
    ("case", "hang", "heard", "hung", "wake"),
    [
        ("no policy: never judged", None, {MASTER: ago(10_000)}, None, None),
        ("never reported: never judged", HangPolicy(TIMEOUT), {}, None, None),
        ("a replaced pod's report", HangPolicy(TIMEOUT), {"old-uid": ago(9_999)}, None, None),
        ("reported within the timeout", HangPolicy(TIMEOUT), {MASTER: ago(100)}, None, 500.0),
        ("exactly at the timeout", HangPolicy(TIMEOUT), {MASTER: ago(TIMEOUT)}, "j-master-0", None),
        (
            "the replica silent first is named",
            HangPolicy(TIMEOUT),
            {MASTER: ago(700), WORKER1: ago(900), WORKER0: ago(50)},
            "j-worker-1",
            None,
        ),
        (
            "the earliest deadline is when to look again",
            HangPolicy(TIMEOUT),
            {MASTER: ago(100), WORKER0: ago(300)},
            None,
            300.0,
        ),
    ],
)  # fmt: skip
def test_when_a_job_is_hung(
    case: str,
    hang: HangPolicy | None,
    heard: dict[str, datetime],
    hung: str | None,
    wake: float | None,
) -> None:
    j = job(
        heartbeats=beats(hang, heard),
        status=RUNNING_STATUS,
    )
    p = run(j, running_pods(), T0)
    condition = get_condition(p.status, "Hung")
    if hung is None:
        assert condition is None, case
        assert p.status["phase"] == "Running", case
        assert p.requeue_after == wake, case
    else:
        assert condition is not None and condition["status"] == "True", case
        assert condition["message"].startswith(f"Replica {hung} has not reported"), case
        assert p.status["phase"] == "Failed", case


def test_on_hang_fail_fails_the_job_with_reason_hung() -> None:
    j = hung_job("Fail", {MASTER: ago(930)})
    p = run(j, running_pods(), T0)
    assert p.finished is not None and p.finished.reason == Reason.HUNG
    failed = get_condition(p.status, "Failed")
    assert failed is not None and failed["reason"] == "Hung"
    assert failed["message"] == (
        "Replica j-master-0 has not reported its progress for 930s (since "
        "2026-03-01T11:44:30Z), past the job's hangTimeoutSeconds (600s)"
    )
    assert p.status["restartCount"] == 0
    assert ("Warning", "Hung", failed["message"]) in p.events


def test_on_hang_restart_recreates_every_replica_as_one_counted_attempt() -> None:
    j = hung_job("Restart", {WORKER0: ago(700)}, backoff_limit=3)
    pods = running_pods()
    p = run(j, pods, T0)
    assert p.finished is None
    assert p.status["phase"] == "Running"
    assert sorted(s.name for s in p.delete) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert (p.status["restartCount"], p.restarts) == (1, 1)
    assert sorted(p.status["countedFailures"]) == sorted(s.uid for s in pods.values())
    (record,) = p.status["restarts"]
    assert (record["replica"], record["reason"], record["counted"]) == ("j-worker-0", "Hung", True)
    hung = get_condition(p.status, "Hung")
    assert hung is not None and hung["status"] == "True"
    assert hung["message"].endswith("every replica restarted (restart 1 of 3)")
    assert [e[1] for e in p.events] == ["Hung"]


def test_a_hang_restart_counted_before_a_crash_is_not_counted_again() -> None:
    j = hung_job("Restart", {WORKER0: ago(700)}, backoff_limit=3)
    pods = running_pods()
    first = run(j, pods, T0)
    # The status was written, the operator died before deleting a pod.
    after = job(heartbeats=j.heartbeats, backoff_limit=3, status=first.status)
    again = run(after, pods, T0 + timedelta(seconds=1))
    assert again.status["restartCount"] == 1
    assert sorted(s.name for s in again.delete) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert again.events == []


def test_after_the_restart_the_deleted_pods_are_not_judged_again() -> None:
    j = hung_job("Restart", {WORKER0: ago(700)}, backoff_limit=3)
    pods = {k: ReplicaState(name=s.name, uid=s.uid, phase=s.phase, terminating=True)
            for k, s in running_pods().items()}  # fmt: skip
    first = run(j, running_pods(), T0)
    p = run(job(heartbeats=j.heartbeats, status=first.status), pods, T0 + timedelta(seconds=2))
    assert p.status["restartCount"] == 1
    assert p.delete == []


def test_a_new_attempt_that_has_not_reported_is_not_hung_and_the_condition_stays() -> None:
    j = hung_job("Restart", {WORKER0: ago(700)}, backoff_limit=3)
    first = run(j, running_pods(), T0)
    fresh = {k: ReplicaState(name=s.name, uid=s.uid + "-new", phase="Running")
             for k, s in running_pods().items()}  # fmt: skip
    later = T0 + timedelta(hours=5)
    p = run(job(heartbeats=j.heartbeats, status=first.status), fresh, later)
    hung = get_condition(p.status, "Hung")
    assert hung is not None and hung["status"] == "True"
    assert p.status["restartCount"] == 1 and p.finished is None
    # One report of the new attempt: the job reports again.
    reported = beats(HangPolicy(TIMEOUT, "Restart"), {WORKER0 + "-new": later})
    back = job(heartbeats=reported, status=p.status)
    p2 = run(back, fresh, later + timedelta(seconds=1))
    hung = get_condition(p2.status, "Hung")
    assert hung is not None and (hung["status"], hung["reason"]) == ("False", "Reporting")


def test_on_hang_restart_at_the_backoff_limit_fails_with_reason_hung() -> None:
    status = {**RUNNING_STATUS, "restartCount": 2}
    j = job(
        heartbeats=beats(HangPolicy(TIMEOUT, "Restart"), {MASTER: ago(601)}),
        backoff_limit=2,
        status=status,
    )
    p = run(j, running_pods(), T0)
    assert p.finished is not None and p.finished.reason == Reason.HUNG
    assert p.finished.message.endswith("; backoffLimit 2 reached, not restarting")
    assert p.status["restartCount"] == 2


@pytest.mark.parametrize(
    ("case", "pods"),
    [
        ("pending pod", {("master", 0): pod("master", 0, phase="Pending")}),
        ("ended pod", {("master", 0): pod("master", 0, phase="Succeeded")}),
    ],
)
def test_only_running_pods_are_judged(case: str, pods: dict[Any, ReplicaState]) -> None:
    state = pods[("master", 0)]
    j = job(
        roles=(Role("master", 1, "Never"),),
        heartbeats=beats(HangPolicy(TIMEOUT), {state.uid: ago(10_000)}),
        status=RUNNING_STATUS,
    )
    p = run(j, pods, T0)
    assert get_condition(p.status, "Hung") is None, case


def test_a_debug_job_is_never_hung() -> None:
    j = hung_job("Fail", {MASTER: ago(10_000)}, debug=True)
    p = run(j, running_pods(), T0)
    assert get_condition(p.status, "Hung") is None
    assert p.finished is None
