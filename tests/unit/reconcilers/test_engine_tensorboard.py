"""``status.tensorboard``, rendered by the engine from the job's TensorBoard as
the reconciler saw it (pure): the seed's shape and values, every phase, and a
TensorBoard in trouble told in one Warning without touching the job."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from t9k_operator.integrations.tensorboard.integration import (
    TENSORBOARD_NOT_READY,
    TENSORBOARD_READY,
)
from t9k_operator.integrations.tensorboard.status import TensorBoardState
from tests.unit.reconcilers.test_engine import job, pod, running, step

NAME = "torch-mnist-trainingjob-5b373"
READY = TensorBoardState(
    NAME,
    "demo",
    "b09378f3-2164-4f14-a425-a1340fa32d7d",
    "NOP",
    ready=True,
    reason="Ready",
    message="pod serves TensorBoard",
)


def test_a_ready_tensorboard_reads_as_the_seed_shows() -> None:
    j = job(tensorboard=READY)
    status = step(j, running(j)).status["tensorboard"]
    assert status == {
        "action": "NOP",
        "dependent": {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "name": NAME,
            "namespace": "demo",
            "uid": "b09378f3-2164-4f14-a425-a1340fa32d7d",
        },
        "note": f"TensorBoard [{NAME}] is ready",
        "ready": True,
        "reason": "DependentReady",
        "type": "Normal",
    }


def test_a_job_without_a_tensorboard_has_no_status_for_one() -> None:
    j = job()
    assert "tensorboard" not in step(j, running(j)).status
    # Nor does a stale one stay once the spec no longer asks for it.
    was = job(status={"tensorboard": {"ready": True}})
    assert "tensorboard" not in step(was, running(was)).status


CASES: list[tuple[TensorBoardState, dict[str, Any]]] = [
    (
        TensorBoardState(NAME, "demo", action="Create"),
        {
            "action": "Create",
            "reason": "DependentCreating",
            "ready": False,
            "type": "Normal",
            "note": f"TensorBoard [{NAME}] is being created",
        },
    ),
    (
        replace(READY, ready=False, reason="Starting", message="pod runs"),
        {
            "reason": "DependentNotReady",
            "ready": False,
            "type": "Normal",
            "note": f"TensorBoard [{NAME}] is not ready: Starting: pod runs",
        },
    ),
    (
        replace(READY, ready=False, reason="Unschedulable", message='"logs" not found'),
        {
            "reason": "DependentNotReady",
            "ready": False,
            "type": "Warning",
            "note": f'TensorBoard [{NAME}] is not ready: Unschedulable: "logs" not found',
        },
    ),
    (
        replace(READY, ready=False, reason="ImagePullBackOff", message="no such image"),
        {"reason": "DependentNotReady", "type": "Warning"},
    ),
    (
        TensorBoardState(NAME, "demo", action="Create", message="refused", failed=True),
        {
            "reason": "DependentFailed",
            "ready": False,
            "type": "Warning",
            "note": f"TensorBoard [{NAME}] cannot be had: refused",
        },
    ),
]


@pytest.mark.parametrize(
    ("state", "want"),
    CASES,
    ids=["creating", "starting", "unschedulable", "image-pull-back-off", "refused"],
)
def test_a_tensorboard_not_ready_says_why(state: TensorBoardState, want: dict[str, Any]) -> None:
    j = job(tensorboard=state)
    p = step(j, running(j))
    got = p.status["tensorboard"]
    assert {k: got[k] for k in want} == want
    assert ("uid" in got["dependent"]) == bool(state.uid)
    warned = [e for e in p.events if e[1] == TENSORBOARD_NOT_READY]
    assert len(warned) == (1 if want.get("type") == "Warning" else 0)
    if warned:
        assert warned[0][0] == "Warning" and warned[0][2] == got["note"]
    assert p.status["phase"] == "Running", "a TensorBoard never moves the job"


def test_trouble_is_told_once_and_readiness_once() -> None:
    bad = replace(READY, ready=False, reason="CrashLoopBackOff", message="back-off")
    pods = running(job())  # the same pods throughout
    first = step(job(tensorboard=bad), pods)
    again = job(tensorboard=bad, status=first.status)
    second = step(again, pods)
    assert TENSORBOARD_NOT_READY in [e[1] for e in first.events]
    assert TENSORBOARD_NOT_READY not in [e[1] for e in second.events]
    healed = job(tensorboard=READY, status=second.status)
    third = step(healed, pods)
    assert [e for e in third.events if e[1] == TENSORBOARD_READY] == [
        ("Normal", TENSORBOARD_READY, f"TensorBoard [{NAME}] is ready")
    ]
    steady = job(tensorboard=READY, status=third.status)
    assert not step(steady, pods).events


def test_it_is_reported_while_paused_and_after_the_job_has_finished() -> None:
    paused = job(tensorboard=READY, paused=True)
    p = step(paused, running(paused))
    assert p.status["phase"] == "Paused" and p.status["tensorboard"]["ready"]
    done = job(tensorboard=READY)
    pods = {**running(done), ("master", 0): pod("master", 0, "Succeeded", 0)}
    finished = step(done, pods)
    assert finished.status["phase"] == "Succeeded"
    assert finished.status["tensorboard"]["reason"] == "DependentReady"
    later = job(tensorboard=replace(READY, ready=False, reason="PodFailed", message="evicted"))
    later = replace(later, status=finished.status)
    after = step(later, pods)
    assert after.status["phase"] == "Succeeded"
    assert after.status["tensorboard"]["type"] == "Warning"


def test_a_failed_tensorboard_never_fails_the_job() -> None:
    j = job(tensorboard=TensorBoardState(NAME, "demo", message="quota", failed=True))
    p = step(j, running(j))
    assert p.status["phase"] == "Running"
    assert p.finished is None
    failed = next(c for c in p.status["conditions"] if c["type"] == "Failed")
    assert failed["status"] == "False"
