"""The shared engine, rule by rule (pure: jobs, pod states and a time in, a plan out)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from t9k_operator.integrations.gang.integration import (
    WAITING_FOR_GANG,
    GangScheduling,
    GangState,
    GroupState,
)
from t9k_operator.integrations.kueue.admission import AdmissionState
from t9k_operator.integrations.kueue.integration import Kueue, KueueState
from t9k_operator.integrations.tensorboard.integration import (
    JobTensorBoard,
    JobTensorBoardState,
)
from t9k_operator.integrations.tensorboard.status import TensorBoardState
from t9k_operator.kinds.asks import SchedulingRequest
from t9k_operator.kinds.contract import PodMode
from t9k_operator.kinds.pods import ReplicaState, Waiting
from t9k_operator.kinds.view import Gate, Hold, JobView, Outcome, Override, Role, asks_of
from t9k_operator.reconcilers.engine import Plan, Reason, fmt_time, get_condition, plan
from t9k_operator.reconcilers.pipeline import plan as planning

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
Pods = dict[tuple[str, int], ReplicaState]


class MasterKind:
    """PyTorch-like: the master's success is the job's success."""

    debug_command = ("sleep", "inf")

    def __init__(self, scope: frozenset[str] | None = None) -> None:
        self.scope = scope

    def outcome(
        self, job: JobView, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> Outcome | None:
        master = replicas.get(("master", 0))
        if master is not None and master.phase == "Succeeded":
            return Outcome("Succeeded", "Succeeded", "The job has finished successfully.")
        return None

    def cleanup_types(self, job: JobView) -> frozenset[str] | None:
        return self.scope

    def may_create(
        self, job: JobView, replica_type: str, replicas: Mapping[tuple[str, int], ReplicaState]
    ) -> bool:
        return replica_type != "gated" or ("master", 0) in replicas


KIND = MasterKind()


@dataclass(frozen=True)
class Observed(JobView):
    """A job with what its integrations observed of it (the tests' shorthand):
    :func:`step` plans it behind their gates, with their parts of the status."""

    group: GroupState | None = None
    admission: AdmissionState | None = None
    tensorboard: TensorBoardState | None = None
    waiting: str | None = None  # a child the apply step could not create yet
    waiting_reason: str = "FailedCreate"


def job(**kw: Any) -> Observed:
    base = Observed(
        kind="PyTorchTrainingJob",
        namespace="ns",
        name="j",
        uid="u",
        generation=1,
        roles=(Role("master", 1, "OnFailure"), Role("worker", 2, "OnFailure")),
    )
    return replace(base, **kw)


_INCARNATIONS = itertools.count(1)


def pod(
    type_: str, i: int, phase: str = "Running", code: int | None = None, **kw: Any
) -> ReplicaState:
    """A new incarnation of replica ``(type_, i)``: a uid of its own, as the
    API server gives each pod it creates, even under a name used before. The
    same pod seen again is the same object (or ``replace`` of it)."""
    uid = f"uid-{type_}-{i}-{next(_INCARNATIONS)}"
    return ReplicaState(name=f"j-{type_}-{i}", uid=uid, phase=phase, exit_code=code, **kw)


def running(j: JobView) -> Pods:
    return {(r.type, i): pod(r.type, i) for r in j.roles for i in range(r.replicas)}


def step(j: JobView, pods: Pods, now: datetime = T0) -> Plan:
    seen: list[planning.Seen] = []
    blocked: tuple[Gate, ...] = ()
    if isinstance(j, Observed):
        if j.admission is not None:
            seen.append(planning.Seen(Kueue(), KueueState(admission=j.admission)))
        if j.group is not None:
            seen.append(planning.Seen(GangScheduling(), GangState(group=j.group)))
        if j.tensorboard is not None:
            seen.append(planning.Seen(JobTensorBoard(), JobTensorBoardState(tb=j.tensorboard)))
        if j.waiting:
            blocked = (Gate(j.waiting_reason, j.waiting, Hold.NEW),)
    return planning.plan(KIND, j, seen, pods, now, blocked=blocked)  # type: ignore[arg-type]


def cond(p: Plan, type_: str) -> str | None:
    c = get_condition(p.status, type_)
    return None if c is None else c["status"]


def deleted(p: Plan) -> list[str]:
    return sorted(s.name for s in p.delete)


def test_new_job_creates_every_replica_and_is_pending() -> None:
    p = step(job(), {})
    assert [(t, i) for t, i, _ in p.create] == [("master", 0), ("worker", 0), ("worker", 1)]
    assert all(m == PodMode() for _, _, m in p.create)
    assert p.status["phase"] == "Pending"
    assert p.status["startTime"] == "2026-03-01T12:00:00Z"
    assert p.status["aggregate"]["creating"] == 3
    assert cond(p, "Initialized") is None
    assert p.requeue_after is None


def test_all_running_is_running_and_initialized() -> None:
    j = job()
    p = step(j, running(j))
    assert (p.create, p.delete) == ([], [])
    assert p.status["phase"] == "Running"
    assert cond(p, "Initialized") == "True" and cond(p, "Running") == "True"
    assert cond(p, "Completed") == "False" and cond(p, "Failed") == "False"
    assert p.status["aggregate"]["running"] == 3
    assert p.status["readyReplicas"] == 3 and p.status["replicas"] == 3
    assert [t["type"] for t in p.status["tasks"]] == ["master", "worker"]


@pytest.mark.parametrize(
    ("policy", "phase", "code", "restarts"),
    [
        ("Never", "Failed", 1, False),
        ("Never", "Succeeded", 0, False),
        ("OnFailure", "Failed", 1, True),
        ("OnFailure", "Failed", None, True),  # evicted: no exit code, still failed
        ("OnFailure", "Succeeded", 0, False),
        ("Always", "Failed", 2, True),
        ("Always", "Succeeded", 0, True),
        ("ExitCode", "Failed", 130, True),
        ("ExitCode", "Failed", 137, True),
        ("ExitCode", "Failed", 138, True),
        ("ExitCode", "Failed", 143, True),
        ("ExitCode", "Failed", 1, False),
        ("ExitCode", "Failed", 139, False),
        ("ExitCode", "Succeeded", 0, False),
    ],
)
def test_restart_policies(policy: str, phase: str, code: int | None, restarts: bool) -> None:
    j = job(roles=(Role("master", 1, "Never"), Role("worker", 2, policy)))
    j = replace(j, status=step(j, running(j)).status)  # it was running
    pods = running(j)
    pods[("worker", 1)] = pod("worker", 1, phase, code)
    p = step(j, pods)
    if restarts:
        assert deleted(p) == ["j-worker-1"]
        assert p.status["restartCount"] == 1
        assert p.status["countedFailures"] == [pods[("worker", 1)].uid]
        assert p.status["tasks"][1]["restartCount"] == 1
        assert any(e[1] == "Restarting" for e in p.events)
        assert p.status["phase"] == "Running"
    elif phase == "Failed":
        assert p.status["phase"] == "Failed"
        assert get_condition(p.status, "Failed")["reason"] == "ReplicaFailed"  # type: ignore[index]
        assert f"exit code {code}" in get_condition(p.status, "Failed")["message"]  # type: ignore[index]
        assert p.create == []
    else:
        assert p.status["phase"] == "Running" and p.delete == []


def test_backoff_limit_is_shared_across_replica_types() -> None:
    j = job(backoff_limit=2)
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    p1 = step(j, pods)
    assert p1.status["restartCount"] == 1
    # The worker came back; now the master fails.
    j = replace(j, status=p1.status)
    pods = running(j)
    pods[("master", 0)] = pod("master", 0, "Failed", 1)
    p2 = step(j, pods)
    assert p2.status["restartCount"] == 2
    assert [t["restartCount"] for t in p2.status["tasks"]] == [1, 1]
    # Limit reached: the next failure of either type fails the job.
    j = replace(j, status=p2.status)
    pods = running(j)
    pods[("worker", 1)] = pod("worker", 1, "Failed", 143)
    p3 = step(j, pods)
    assert p3.status["restartCount"] == 2
    assert p3.status["phase"] == "Failed"
    assert get_condition(p3.status, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert p3.create == [] and "j-worker-1" not in deleted(p3)
    # One Event says it, naming the replica and the limit (it was posted twice).
    said = [e for e in p3.events if e[1] == "BackoffLimitExceeded"]
    assert len(said) == 1 and said[0][0] == "Warning"
    assert "j-worker-1" in said[0][2] and "backoffLimit 2 reached" in said[0][2]


def test_a_counted_failure_is_not_counted_twice_after_a_crash() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    p1 = step(j, pods)
    # The operator died after writing status, before deleting the pod.
    p2 = step(replace(j, status=p1.status), pods)
    assert p2.status["restartCount"] == 1
    assert deleted(p2) == ["j-worker-0"]
    # Once the pod is gone its uid is forgotten and a new pod is created.
    del pods[("worker", 0)]
    p3 = step(replace(j, status=p2.status), pods)
    assert p3.status["countedFailures"] == []
    assert [(t, i) for t, i, _ in p3.create] == [("worker", 0)]
    assert p3.status["restartCount"] == 1


def test_a_terminating_pod_is_waited_for_not_recreated() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1, terminating=True)
    p = step(j, pods)
    assert p.create == [] and p.delete == []
    assert p.status["tasks"][1]["replicas"][0]["phase"] == "Deleted"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("None", []),
        ("All", ["j-master-0", "j-worker-0", "j-worker-1"]),
        ("Unfinished", ["j-worker-1"]),
    ],
)
def test_cleanup_after_success(policy: str, expected: list[str]) -> None:
    j = job(cleanup_policy=policy)
    pods = running(j)
    pods[("master", 0)] = pod("master", 0, "Succeeded", 0)
    pods[("worker", 0)] = pod("worker", 0, "Succeeded", 0)
    p = step(j, pods)
    assert p.status["phase"] == "Succeeded"
    assert cond(p, "Completed") == "True" and cond(p, "Failed") == "False"
    assert cond(p, "Running") == "False"
    assert p.status["completionTime"] == "2026-03-01T12:00:00Z"
    assert p.finished is not None and p.finished.phase == "Succeeded"
    assert deleted(p) == expected
    # A later reconcile of the finished job applies the same policy, changes nothing else.
    again = step(replace(j, status=p.status), pods, T0 + timedelta(minutes=5))
    assert deleted(again) == expected
    assert again.status["completionTime"] == "2026-03-01T12:00:00Z"
    assert again.finished is None and again.create == []


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("None", []),
        ("All", ["j-master-0", "j-worker-0", "j-worker-1"]),
        ("Unfinished", ["j-master-0", "j-worker-1"]),
    ],
)
def test_cleanup_after_failure(policy: str, expected: list[str]) -> None:
    j = job(cleanup_policy=policy, roles=(Role("master", 1, "Never"), Role("worker", 2, "Never")))
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 3)
    p = step(j, pods)
    assert p.status["phase"] == "Failed"
    assert deleted(p) == expected


def test_kind_can_narrow_cleanup_scope() -> None:
    j = job(cleanup_policy="All")
    pods = running(j)
    pods[("master", 0)] = pod("master", 0, "Succeeded", 0)
    p = plan(MasterKind(frozenset({"worker"})), j, pods, T0)
    assert deleted(p) == ["j-worker-0", "j-worker-1"]


def test_deadline_requeues_exactly_then_fails() -> None:
    j = job(active_deadline_seconds=600, cleanup_policy="Unfinished")
    first = step(j, {})
    assert first.requeue_after == 600
    j = replace(j, status=first.status)
    mid = step(j, running(j), T0 + timedelta(seconds=599))
    assert mid.requeue_after == pytest.approx(1)
    assert mid.status["phase"] == "Running"
    end = step(j, running(j), T0 + timedelta(seconds=600))
    assert end.status["phase"] == "Failed"
    assert get_condition(end.status, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    assert deleted(end) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert end.events[-1][:2] == ("Warning", "DeadlineExceeded")


def test_pause_deletes_pods_and_resume_uses_resume_specs() -> None:
    resume = (
        Override("worker", command=("python",), args=("resume.py",), skip_init_container=True),
    )
    j = job(paused=True, resume_overrides=resume)
    p = step(j, running(j))
    assert deleted(p) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert p.status["phase"] == "Paused" and cond(p, "Paused") == "True"
    assert p.create == []
    j = replace(j, status=p.status)
    still = step(j, {})
    assert still.create == [] and still.status["phase"] == "Paused"
    assert not any(e[1] == "Paused" for e in still.events)  # the Event was sent once
    # Unpause.
    j = replace(j, paused=False, status=still.status)
    r = step(j, {})
    assert r.status["phase"] == "Resuming"
    assert cond(r, "Paused") == "False"
    modes = {(t, i): m for t, i, m in r.create}
    assert modes[("worker", 0)] == PodMode(
        command=("python",), args=("resume.py",), skip_init_containers=True
    )
    assert modes[("master", 0)] == PodMode()
    j = replace(j, status=r.status)
    back = step(j, running(j))
    assert back.status["phase"] == "Running"


def test_deadline_counts_while_paused() -> None:
    j = job(paused=True, active_deadline_seconds=60)
    p = step(j, {})
    j = replace(j, status=p.status)
    late = step(j, {}, T0 + timedelta(seconds=61))
    assert late.status["phase"] == "Failed"
    assert get_condition(late.status, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]


def test_pause_during_restart_counts_nothing() -> None:
    j = job(paused=True)
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    p = step(j, pods)
    assert p.status["restartCount"] == 0
    assert p.status["phase"] == "Paused"
    assert "j-worker-0" in deleted(p)


def test_debug_mode_uses_debug_command_and_never_ends() -> None:
    overrides = (Override("worker", command=("/usr/bin/sshd",), skip_init_container=True),)
    j = job(debug=True, debug_overrides=overrides)
    p = step(j, {})
    modes = {(t, i): m for t, i, m in p.create}
    assert modes[("master", 0)] == PodMode(command=("sleep", "inf"), debug=True)
    assert modes[("worker", 1)] == PodMode(
        command=("/usr/bin/sshd",), skip_init_containers=True, debug=True
    )
    pods = running(j)
    pods[("master", 0)] = pod("master", 0, "Succeeded", 0)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    p2 = step(replace(j, status=p.status), pods)
    assert p2.status["phase"] not in ("Succeeded", "Failed")
    assert p2.delete == [] and p2.create == []
    assert p2.status["restartCount"] == 0


def test_success_waits_while_a_replica_restarts() -> None:
    j = job(roles=(Role("master", 1, "Always"), Role("worker", 2, "Always")))
    pods = running(j)
    pods[("master", 0)] = pod("master", 0, "Succeeded", 0)
    p = step(j, pods)
    # Always restarts even a succeeded pod, so the job is not done yet.
    assert p.status["phase"] == "Running"
    assert deleted(p) == ["j-master-0"]


def test_elastic_scale_down_deletes_the_highest_indexes() -> None:
    j = job(roles=(Role("master", 1, "OnFailure"), Role("worker", 4, "OnFailure")))
    pods = running(j)
    smaller = replace(j, roles=(Role("master", 1, "OnFailure"), Role("worker", 2, "OnFailure")))
    p = step(smaller, pods)
    assert deleted(p) == ["j-worker-2", "j-worker-3"]
    assert p.status["replicas"] == 3


def test_transition_time_moves_only_on_transition() -> None:
    j = job()
    pods = running(j)
    p1 = step(j, pods)
    t1 = get_condition(p1.status, "Running")["lastTransitionTime"]  # type: ignore[index]
    p2 = step(replace(j, status=p1.status), pods, T0 + timedelta(minutes=3))
    assert get_condition(p2.status, "Running")["lastTransitionTime"] == t1  # type: ignore[index]
    assert p2.status == p1.status  # nothing moved: no status write needed


def test_replica_failure_condition_while_restarting() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 1)] = pod("worker", 1, "Failed", 137)
    p = step(j, pods)
    assert cond(p, "ReplicaFailure") == "True"
    assert "j-worker-1" in get_condition(p.status, "ReplicaFailure")["message"]  # type: ignore[index]


def test_invalid_spec_fails_with_the_message() -> None:
    j = job(spec_error="spec.replicaSpecs[0].template: no containers; add one")
    p = step(j, {})
    assert p.status["phase"] == "Failed"
    c = get_condition(p.status, "Failed")
    assert c is not None and c["reason"] == "InvalidSpec" and "replicaSpecs[0]" in c["message"]
    assert p.create == []


def test_kind_gates_creation_order() -> None:
    j = job(roles=(Role("master", 1, "Never"), Role("gated", 2, "Never")))
    first = step(j, {})
    assert [(t, i) for t, i, _ in first.create] == [("master", 0)]
    assert first.status["aggregate"]["creating"] == 3  # the gated two wait to be created
    second = step(replace(j, status=first.status), {("master", 0): pod("master", 0)})
    assert [(t, i) for t, i, _ in second.create] == [("gated", 0), ("gated", 1)]


# -- bounded work: never in proportion to a count nobody has created pods for --------


def test_a_huge_replica_count_plans_one_batch_in_bounded_memory() -> None:
    import tracemalloc

    from t9k_operator.reconcilers.engine import CREATE_BATCH

    j = job(roles=(Role("worker", 2**63 - 1, "OnFailure"),))
    tracemalloc.start()
    p = step(j, {})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(p.create) == CREATE_BATCH
    assert [i for _, i, _ in p.create] == list(range(CREATE_BATCH))
    assert p.requeue_after == 1.0  # the next batch follows
    assert peak < 5_000_000, peak
    assert p.status["aggregate"]["creating"] == 2**63 - 1
    assert len(p.status["tasks"][0]["replicas"]) == CREATE_BATCH


def test_the_next_batch_starts_after_the_pods_that_exist() -> None:
    from t9k_operator.reconcilers.engine import CREATE_BATCH

    j = job(roles=(Role("worker", 1000, "OnFailure"),))
    pods = {("worker", i): pod("worker", i, "Pending") for i in range(CREATE_BATCH)}
    p = step(j, pods)
    assert [i for _, i, _ in p.create] == list(range(CREATE_BATCH, 2 * CREATE_BATCH))


def test_a_huge_deadline_does_not_overflow() -> None:
    p = step(job(active_deadline_seconds=2**63 - 1), {})
    assert p.status["phase"] == "Pending" and p.finished is None


def test_an_unschedulable_pod_is_named_in_the_running_condition_and_an_event() -> None:
    j = job()
    pods = running(j)
    why = "0/4 nodes are available: 4 Insufficient cpu."
    pods[("worker", 1)] = pod("worker", 1, "Pending", unschedulable=why)
    p = step(j, pods)
    running_cond = get_condition(p.status, "Running")
    assert running_cond is not None and running_cond["reason"] == "Unschedulable"
    assert running_cond["message"] == (
        "Pod j-worker-1 cannot be scheduled: 0/4 nodes are available: 4 Insufficient cpu."
    )
    assert ("Warning", "Unschedulable", running_cond["message"]) in p.events
    again = step(replace(j, status=p.status), pods)
    assert not [e for e in again.events if e[1] == "Unschedulable"]  # said once


def test_the_plan_counts_its_restarts_and_reasons_are_typed() -> None:
    """What a pass decided is in the plan's fields (the reconciler's metrics read
    ``restarts``); no caller parses Event reasons to find it."""
    j = job(backoff_limit=5)
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    pods[("worker", 1)] = pod("worker", 1, "Failed", 137)
    p = step(j, pods)
    assert p.restarts == 2 and p.status["restartCount"] == 2
    assert [e[1] for e in p.events] == [Reason.RESTARTING, Reason.RESTARTING]
    assert Reason.RESTARTING == "Restarting"  # the wire value users see is unchanged
    calm = step(j, running(j))
    assert calm.restarts == 0


# -- gang scheduling -----------------------------------------------------------------------


def gang_job(**kw: Any) -> JobView:
    return job(
        asks=asks_of(
            SchedulingRequest(3, queue="research", asked_by="spec.scheduler.t9kScheduler")
        ),
        group=GroupState("volcano", "j", "Pending", "3/3 tasks in gang unschedulable"),
        **kw,
    )


def pending(j: JobView) -> Pods:
    why = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    return {
        (r.type, i): pod(r.type, i, "Pending", unschedulable=why)
        for r in j.roles
        for i in range(r.replicas)
    }


def test_a_waiting_gang_is_pending_saying_for_what_and_in_which_queue() -> None:
    j = gang_job()
    first = step(j, {})
    assert first.status["podGroup"] == {
        "name": "j",
        "scheduler": "volcano",
        "minMember": 3,
        "queue": "research",
        "phase": "Pending",
        "message": "3/3 tasks in gang unschedulable",
    }
    j = replace(j, status=first.status)
    pods = pending(j)
    waiting = step(j, pods)
    assert waiting.status["phase"] == "Pending"
    running_cond = get_condition(waiting.status, "Running")
    assert running_cond is not None and running_cond["reason"] == WAITING_FOR_GANG
    assert "gang scheduler (volcano)" in running_cond["message"]
    assert "queue research" in running_cond["message"]
    assert "3/3 tasks in gang unschedulable" in running_cond["message"]
    assert waiting.events == [
        (
            "Normal",
            "WaitingForGangScheduler",
            "Waiting for the gang scheduler (volcano) to place PodGroup j in queue research",
        )
    ]
    j = replace(j, status=waiting.status)
    assert step(j, pods).events == [], "the Event is told once, not every pass"
    placed = replace(j, group=GroupState("volcano", "j", "Running"))
    done = step(placed, running(placed))
    assert done.status["phase"] == "Running"
    assert done.status["podGroup"]["phase"] == "Running"
    assert "message" not in done.status["podGroup"]


def test_without_a_gang_scheduler_the_status_has_no_pod_group() -> None:
    j = job()
    assert "podGroup" not in step(j, {}).status
    assert get_condition(step(j, pending(j)).status, "Running")["reason"] == "Unschedulable"  # type: ignore[index]


def test_a_finished_or_paused_job_keeps_its_last_seen_group_in_the_status() -> None:
    j = gang_job()
    j = replace(j, status=step(j, {}).status)
    paused = step(replace(j, paused=True, group=GroupState("volcano", "j")), running(j))
    assert paused.status["podGroup"]["phase"] == "Pending"


def test_schedule_timeout_fails_a_job_whose_pods_were_never_all_placed() -> None:
    j = job(asks=asks_of(SchedulingRequest(3, timeout_seconds=120)))
    first = step(j, {})
    assert first.requeue_after == 120
    j = replace(j, status=first.status)
    mid = step(j, pending(j), T0 + timedelta(seconds=60))
    assert mid.status["phase"] == "Pending" and mid.requeue_after == pytest.approx(60)
    end = step(j, pending(j), T0 + timedelta(seconds=120))
    assert end.status["phase"] == "Failed"
    assert get_condition(end.status, "Failed")["reason"] == "ScheduleTimeout"  # type: ignore[index]
    # A job that once ran is past scheduling: the timeout no longer applies.
    ran = step(j, running(j), T0 + timedelta(seconds=60))
    later = step(replace(j, status=ran.status), pending(j), T0 + timedelta(seconds=600))
    assert later.status["phase"] == "Running"


def test_a_held_job_creates_no_pods_and_says_why() -> None:
    j = job(waiting="held: no gang scheduler", waiting_reason="GangSchedulerUnavailable")
    held = step(j, {})
    assert held.create == []
    init = get_condition(held.status, "Initialized")
    assert init is not None and init["reason"] == "GangSchedulerUnavailable"
    assert held.status["phase"] == "Pending"


# -- pods that cannot start ---------------------------------------------------------------


def stuck(
    type_: str, i: int, reason: str, message: str = "", placed: datetime = T0
) -> ReplicaState:
    """A pod placed on node-1 at ``placed`` whose container kubelet cannot start."""
    return pod(
        type_,
        i,
        "Pending",
        node="node-1",
        placed_at=fmt_time(placed),
        waiting=Waiting("pytorch", reason, message),
    )


def test_a_pod_that_cannot_start_is_named_in_the_running_condition_with_one_event() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 1)] = stuck("worker", 1, "ImagePullBackOff", 'Back-off pulling image "x:nope"')
    p = step(j, pods)
    running_cond = get_condition(p.status, "Running")
    assert running_cond is not None
    assert (p.status["phase"], running_cond["status"], running_cond["reason"]) == (
        "Pending",
        "False",
        "ImagePullBackOff",
    )
    message = (
        "Pod j-worker-1 cannot start: container pytorch: ImagePullBackOff: "
        'Back-off pulling image "x:nope"'
    )
    assert running_cond["message"] == message
    assert p.events == [("Warning", "ImagePullBackOff", message)]
    assert p.finished is None
    assert p.requeue_after == pytest.approx(600.0)  # the start timeout, from the placement
    # Kubelet alternates ErrImagePull and ImagePullBackOff for one cause: no second Event.
    pods[("worker", 1)] = replace(
        pods[("worker", 1)], waiting=Waiting("pytorch", "ErrImagePull", "manifest unknown")
    )
    again = step(replace(j, status=p.status), pods, T0 + timedelta(seconds=20))
    assert again.events == []
    assert get_condition(again.status, "Running")["reason"] == "ErrImagePull"  # type: ignore[index]


def test_a_failing_pull_is_named_by_its_error_through_kubelets_back_off() -> None:
    """Kubelet alternates ErrImagePull (the pull's error) and ImagePullBackOff
    (only "Back-off pulling image"): the condition keeps naming the error,
    with no Event but the first, and so does the start timeout's failure."""
    j = job(start_timeout=120.0)
    pods = running(j)
    pods[("worker", 1)] = stuck("worker", 1, "ErrImagePull", "pull access denied")
    first = step(j, pods)
    named = "Pod j-worker-1 cannot start: container pytorch: ErrImagePull: pull access denied"
    assert first.events == [("Warning", "ErrImagePull", named)]
    back_off = replace(
        pods[("worker", 1)],
        waiting=Waiting("pytorch", "ImagePullBackOff", 'Back-off pulling image "x:nope"'),
    )
    for at, waiting in ((10, back_off), (20, pods[("worker", 1)]), (40, back_off)):
        again = step(
            replace(j, status=first.status),
            {**pods, ("worker", 1): waiting},
            T0 + timedelta(seconds=at),
        )
        c = get_condition(again.status, "Running")
        assert c is not None and (c["reason"], c["message"]) == ("ErrImagePull", named)
        assert again.events == []
        first = again
    ended = step(
        replace(j, status=first.status),
        {**pods, ("worker", 1): back_off},
        T0 + timedelta(seconds=120),
    )
    assert ended.finished is not None and ended.finished.message == (
        "Pod j-worker-1 did not start within 120s of its placement on node node-1: "
        "container pytorch: ErrImagePull: pull access denied"
    )


def test_a_back_off_of_another_pod_or_with_no_error_seen_says_what_kubelet_says() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 0)] = stuck("worker", 0, "ErrImagePull", "pull access denied")
    first = step(j, pods)
    pods[("worker", 0)] = pod("worker", 0, "Running")
    pods[("worker", 1)] = stuck("worker", 1, "ImagePullBackOff", 'Back-off pulling image "y"')
    p = step(replace(j, status=first.status), pods, T0 + timedelta(seconds=10))
    c = get_condition(p.status, "Running")
    assert c is not None and (c["reason"], c["message"]) == (
        "ImagePullBackOff",
        "Pod j-worker-1 cannot start: container pytorch: ImagePullBackOff: "
        'Back-off pulling image "y"',
    )


def test_a_running_jobs_replacement_that_cannot_start_is_named_too() -> None:
    j = job()
    first = step(j, running(j))
    assert first.status["phase"] == "Running"
    pods = running(j)
    pods[("worker", 0)] = stuck("worker", 0, "CreateContainerConfigError", 'secret "s" not found')
    p = step(replace(j, status=first.status), pods)
    c = get_condition(p.status, "Running")
    assert p.status["phase"] == "Running"
    assert c is not None and (c["status"], c["reason"]) == ("False", "CreateContainerConfigError")
    assert "j-worker-0" in c["message"] and 'secret "s" not found' in c["message"]


@pytest.mark.parametrize(
    ("reason", "message", "fix"),
    [
        ("InvalidImageName", 'Failed to apply default image tag "Bad Image"', "fix the image of"),
        ("ErrImageNeverPull", "image not present", "fix the image or imagePullPolicy of"),
        (
            "CreateContainerConfigError",
            "couldn't find key TOKEN in Secret ns/creds",
            "fix the env or envFrom (or add the key) of",
        ),
    ],
)
def test_a_cause_no_wait_cures_fails_the_job_at_once(reason: str, message: str, fix: str) -> None:
    j = job()
    pods = running(j)
    pods[("worker", 1)] = stuck("worker", 1, reason, message)
    p = step(j, pods)
    assert p.status["phase"] == "Failed"
    assert p.finished is not None and p.finished.reason == "PodCannotStart"
    assert p.finished.message == (
        f"Pod j-worker-1 cannot start: container pytorch: {reason}: {message}; "
        f"{fix} container pytorch in the worker replicas' template"
    )


def test_a_pod_that_has_not_started_by_its_start_timeout_fails_the_job() -> None:
    j = job(start_timeout=120.0)
    pods = running(j)
    pods[("worker", 1)] = stuck("worker", 1, "ImagePullBackOff", "pull access denied")
    early = step(j, pods, T0 + timedelta(seconds=100))
    assert early.finished is None and early.requeue_after == pytest.approx(20.0)
    p = step(j, pods, T0 + timedelta(seconds=120))
    assert p.finished is not None and p.finished.reason == "PodCannotStart"
    assert p.finished.message == (
        "Pod j-worker-1 did not start within 120s of its placement on node node-1: "
        "container pytorch: ImagePullBackOff: pull access denied"
    )


def test_a_pod_still_being_created_at_its_timeout_says_where_to_look() -> None:
    j = job(start_timeout=60.0)
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Pending", node="node-2", placed_at=fmt_time(T0))
    p = step(j, pods, T0 + timedelta(seconds=61))
    assert p.finished is not None
    assert p.finished.message == (
        "Pod j-worker-0 did not start within 60s of its placement on node node-2: "
        "its containers are still being created (kubectl describe pod j-worker-0)"
    )


def test_no_start_timeout_for_a_pod_not_yet_placed_or_with_the_limit_off() -> None:
    pods = running(job())
    pods[("worker", 0)] = pod("worker", 0, "Pending", unschedulable="0/4 nodes are available")
    late = T0 + timedelta(days=1)
    assert step(job(start_timeout=60.0), pods, late).finished is None
    pods[("worker", 0)] = stuck("worker", 0, "ImagePullBackOff")
    off = step(job(start_timeout=0.0), pods, late)
    assert off.finished is None and off.requeue_after is None


# -- disruptions ---------------------------------------------------------------------------


def evicted(type_: str, i: int, terminating: bool = False) -> ReplicaState:
    return pod(
        type_,
        i,
        "Running" if terminating else "Failed",
        code=None if terminating else 137,
        terminating=terminating,
        node="node-3",
        disruption="TerminationByKubelet",
        disruption_message="The node was low on resource: memory.",
    )


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "ExitCode", "Always"])
def test_a_disrupted_replica_is_recreated_uncounted_whatever_its_policy(policy: str) -> None:
    j = job(roles=(Role("master", 1, policy), Role("worker", 2, policy)))
    pods = running(j)
    pods[("worker", 1)] = replace(evicted("worker", 1), uid="uid-evicted")
    p = step(j, pods)
    assert p.finished is None
    assert deleted(p) == ["j-worker-1"]
    assert (p.status["restartCount"], p.status["disruptionCount"]) == (0, 1)
    assert p.status["countedFailures"] == ["uid-evicted"]
    assert p.events == [
        (
            "Warning",
            "Disrupted",
            "Pod j-worker-1 was disrupted on node node-3 (TerminationByKubelet: The node was "
            "low on resource: memory.): it is recreated, not counted against backoffLimit "
            "(disruption 1 of 10)",
        )
    ]
    # After a crash between the status write and the delete: deleted, not counted again.
    again = step(replace(j, status=p.status), pods)
    assert deleted(again) == ["j-worker-1"] and again.status["disruptionCount"] == 1
    assert again.events == []


def test_a_pod_being_evicted_is_counted_once_and_left_to_go() -> None:
    j = job()
    pods = running(j)
    pods[("master", 0)] = evicted("master", 0, terminating=True)
    p = step(j, pods)
    assert deleted(p) == [] and p.status["disruptionCount"] == 1
    assert [e[1] for e in p.events] == ["Disrupted"]
    gone = {k: v for k, v in pods.items() if k != ("master", 0)}
    after = step(replace(j, status=p.status), gone)
    assert [(t, i) for t, i, _ in after.create] == [("master", 0)]
    assert after.status["disruptionCount"] == 1 and after.status["restartCount"] == 0


def test_past_the_disruption_limit_the_job_fails() -> None:
    j = job(disruption_limit=2, status={"phase": "Running", "disruptionCount": 2})
    pods = running(j)
    pods[("worker", 0)] = evicted("worker", 0)
    p = step(j, pods)
    assert p.finished is not None and p.finished.reason == "TooManyDisruptions"
    assert p.finished.message == (
        "Pod j-worker-0 was disrupted on node node-3 (TerminationByKubelet: The node was low "
        "on resource: memory.); the job's replicas have been disrupted 2 times, its limit"
    )


def test_an_ordinary_failure_still_counts_against_backoff_limit() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 137)
    p = step(j, pods)
    assert (p.status["restartCount"], p.status.get("disruptionCount")) == (1, None)


def test_the_last_ten_recreations_are_kept_in_the_status_counted_or_not() -> None:
    j = job(backoff_limit=100)
    status: dict[str, Any] = {}
    pods = running(j)
    for n in range(12):
        failed = pod("worker", 0, "Failed", 1, node="node-1", reason="Error")
        pods[("worker", 0)] = replace(failed, uid=f"u{n}")
        if n == 11:
            pods[("worker", 0)] = replace(evicted("worker", 0), uid=f"u{n}")
        p = step(replace(j, status=status), pods, T0 + timedelta(minutes=n))
        status = p.status
    kept = status["restarts"]
    assert len(kept) == 10
    assert kept[0] == {
        "time": "2026-03-01T12:02:00Z",
        "replica": "j-worker-0",
        "exitCode": 1,
        "reason": "Error",
        "node": "node-1",
        "counted": True,
    }
    assert kept[-1] == {
        "time": "2026-03-01T12:11:00Z",
        "replica": "j-worker-0",
        "exitCode": 137,
        "reason": "TerminationByKubelet",
        "node": "node-3",
        "counted": False,
    }
    # A finished job keeps them.
    pods[("worker", 0)] = pod("worker", 0)  # recreated
    done = step(replace(j, status={**status, "phase": "Succeeded"}), pods)
    assert done.status["restarts"] == kept


# -- restartScope Job -----------------------------------------------------------------------


def test_restart_scope_job_recreates_every_replica_as_one_attempt() -> None:
    j = job(restart_scope="Job")
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    pods[("worker", 1)] = pod("worker", 1, "Failed", 1)  # its peer died: one attempt
    p = step(j, pods)
    assert deleted(p) == ["j-master-0", "j-worker-0", "j-worker-1"]
    assert p.status["restartCount"] == 1
    assert sorted(p.status["countedFailures"]) == sorted(s.uid for s in pods.values())
    assert [m for _, r, m in p.events if r == "Restarting"] == [
        "Restarting j-worker-0 (exit code 1) with every other replica of the job "
        "(restartScope Job): restart 1 of 3"
    ]
    # The master fails before its deletion shows: part of the same attempt.
    pods[("master", 0)] = replace(pods[("master", 0)], phase="Failed", exit_code=1)
    again = step(replace(j, status=p.status), pods)
    assert again.status["restartCount"] == 1 and again.events == []
    # Once the old pods are going, nothing more is deleted; new pods come as names free.
    going = {k: replace(v, terminating=True) for k, v in pods.items()}
    going.pop(("worker", 0))
    later = step(replace(j, status=p.status), going)
    assert deleted(later) == [] and [(t, i) for t, i, _ in later.create] == [("worker", 0)]


def test_restart_scope_replica_is_what_t9k_documents() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    assert deleted(step(j, pods)) == ["j-worker-0"]


def test_restart_scope_job_recreates_every_replica_after_a_disruption_uncounted() -> None:
    j = job(restart_scope="Job")
    pods = running(j)
    pods[("worker", 1)] = evicted("worker", 1, terminating=True)
    p = step(j, pods)
    assert deleted(p) == ["j-master-0", "j-worker-0"]
    assert (p.status["restartCount"], p.status["disruptionCount"]) == (0, 1)
    # While the evicted pod is still going, the others' new pods are left alone.
    fresh = {k: pod(k[0], k[1]) for k in (("master", 0), ("worker", 0))}
    fresh = {k: replace(v, uid=f"new-{v.uid}") for k, v in fresh.items()}
    later = step(replace(j, status=p.status), {**fresh, ("worker", 1): pods[("worker", 1)]})
    assert deleted(later) == []


def test_a_pod_gone_without_the_operator_deleting_it_is_a_recorded_disruption() -> None:
    j = job()
    pods = running(j)
    first = step(j, pods)
    assert first.status["tasks"][1]["replicas"][0]["phase"] == "Running"
    gone = {k: v for k, v in pods.items() if k != ("worker", 0)}  # force-deleted
    p = step(replace(j, status=first.status), gone, T0 + timedelta(minutes=1))
    assert [(t, i) for t, i, _ in p.create] == [("worker", 0)]
    assert (p.status["restartCount"], p.status["disruptionCount"]) == (0, 1)
    assert p.status["restarts"] == [
        {
            "time": "2026-03-01T12:01:00Z",
            "replica": "j-worker-0",
            "reason": "Deleted",
            "node": "",
            "counted": False,
        }
    ]
    assert [r for _, r, _ in p.events] == ["Disrupted"]
    # Recorded once: the next pass lists the replica as being created, not as gone.
    again = step(replace(j, status=p.status), gone, T0 + timedelta(minutes=2))
    assert again.status["disruptionCount"] == 1 and again.events == []


def test_pods_the_operator_deleted_are_not_taken_for_gone_ones() -> None:
    j = job()
    pods = running(j)
    pods[("worker", 0)] = pod("worker", 0, "Failed", 1)
    restarting = step(j, pods)  # deletes worker-0: counted, listed as Deleted
    assert deleted(restarting) == ["j-worker-0"]
    gone = {k: v for k, v in pods.items() if k != ("worker", 0)}
    after = step(replace(j, status=restarting.status), gone)
    assert after.status.get("disruptionCount") is None and after.status["restartCount"] == 1
    paused = step(replace(j, paused=True), running(j))
    resumed = step(replace(j, status=paused.status), {})
    assert resumed.status.get("disruptionCount") is None


# -- lost nodes ------------------------------------------------------------------------------

NOT_READY = "node node-2 is not ready (NodeStatusUnknown: Kubelet stopped posting node status.)"


def test_a_replica_on_a_lost_node_makes_the_job_unknown_and_named() -> None:
    j = job()
    seen = running(j)
    before = step(j, seen)
    assert before.status["phase"] == "Running"
    pods = dict(seen)
    for i in (0, 1):
        pods[("worker", i)] = replace(pods[("worker", i)], node="node-2", lost=NOT_READY)
    p = step(replace(j, status=before.status), pods)
    assert p.status["phase"] == "Unknown"
    message = (
        "Node node-2 is not ready (NodeStatusUnknown: Kubelet stopped posting node status.): "
        "pods j-worker-0, j-worker-1"
    )
    failure = get_condition(p.status, "ReplicaFailure")
    assert failure is not None
    assert (failure["status"], failure["reason"], failure["message"]) == (
        "True",
        "NodeNotReady",
        message,
    )
    assert p.events == [("Warning", "NodeNotReady", message)]
    assert cond(p, "Running") == "True", "what it last knew"
    assert p.delete == [] and p.create == [], "Kubernetes decides when such a pod is gone"
    assert p.status["aggregate"]["unknown"] == 2 and p.status["readyReplicas"] == 1
    assert [r["phase"] for r in p.status["tasks"][1]["replicas"]] == ["Unknown", "Unknown"]
    # Still lost: no second Event. Back: Running again, ReplicaFailure cleared, one Event.
    again = step(replace(j, status=p.status), pods)
    assert again.status["phase"] == "Unknown" and again.events == []
    back = step(replace(j, status=again.status), seen)
    assert back.status["phase"] == "Running" and cond(back, "ReplicaFailure") == "False"
    assert [(t, r) for t, r, _ in back.events] == [("Normal", "NodeReady")]


def test_a_pending_job_whose_node_is_lost_goes_back_to_pending() -> None:
    j = job()
    pods = {k: replace(v, phase="Pending") for k, v in running(j).items()}
    pending = step(j, pods)
    assert pending.status["phase"] == "Pending"
    pods[("master", 0)] = replace(pods[("master", 0)], node="node-2", lost=NOT_READY)
    lost = step(replace(j, status=pending.status), pods)
    assert lost.status["phase"] == "Unknown"
    pods[("master", 0)] = replace(pods[("master", 0)], lost="")
    assert step(replace(j, status=lost.status), pods).status["phase"] == "Pending"


def test_an_evicted_pod_stuck_on_a_lost_node_keeps_the_job_unknown_until_it_is_gone() -> None:
    j = job()
    pods = running(j)
    before = step(j, pods)
    pods = dict(pods)
    pods[("worker", 1)] = replace(
        pods[("worker", 1)],
        node="node-2",
        lost=NOT_READY,
        terminating=True,
        disruption="DeletionByTaintManager",
    )
    p = step(replace(j, status=before.status), pods)
    assert p.status["phase"] == "Unknown" and p.status["disruptionCount"] == 1
    assert p.create == [], "the replica's name is still held: never two copies"
    gone = {k: v for k, v in pods.items() if k != ("worker", 1)}  # PodGC, or the node is back
    after = step(replace(j, status=p.status), gone)
    assert [(t, i) for t, i, _ in after.create] == [("worker", 1)]
    assert after.status["phase"] == "Running" and after.status["disruptionCount"] == 1


def test_a_pod_whose_phase_is_unknown_makes_the_job_unknown() -> None:
    j = job()
    pods = running(j)
    pods[("master", 0)] = replace(
        pods[("master", 0)], phase="Unknown", lost="node node-1 has stopped reporting the pod"
    )
    p = step(replace(j, status=step(j, running(j)).status), pods)
    assert p.status["phase"] == "Unknown"
    assert "j-master-0" in get_condition(p.status, "ReplicaFailure")["message"]  # type: ignore[index]


# -- ttlSecondsAfterFinished -----------------------------------------------------------------


def test_a_finished_job_is_deleted_its_ttl_after_its_completion() -> None:
    j = job(ttl_seconds_after_finished=60)
    pods = running(j)
    pods[("master", 0)] = pod("master", 0, "Succeeded", 0)
    done = step(j, pods)
    assert done.status["phase"] == "Succeeded" and not done.delete_job
    assert done.requeue_after == 60, "woken when it is due"
    later = step(replace(j, status=done.status), pods, T0 + timedelta(seconds=30))
    assert not later.delete_job and later.requeue_after == 30
    due = step(replace(j, status=done.status), pods, T0 + timedelta(seconds=60))
    assert due.delete_job


def test_a_ttl_of_zero_deletes_the_job_as_it_finishes_and_none_never() -> None:
    pods = running(job())
    pods[("master", 0)] = pod("master", 0, "Failed", 1)
    pods[("master", 0)] = replace(pods[("master", 0)], phase="Failed")
    j = job(roles=(Role("master", 1, "Never"), Role("worker", 2, "Never")))
    assert step(replace(j, ttl_seconds_after_finished=0), pods).delete_job
    kept = step(j, pods)
    assert kept.status["phase"] == "Failed" and not kept.delete_job
    assert not step(replace(j, status=kept.status), pods, T0 + timedelta(days=365)).delete_job
