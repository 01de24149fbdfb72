"""A TensorBoard's pod read as readiness, its status and Events, and a TensorBoard
read back as a job's dependent (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from t9k_operator.api.tensorboard import TensorBoardObject
from t9k_operator.integrations.tensorboard.status import (
    REPLACE_FAILED_AFTER,
    Readiness,
    dependent_state,
    pod_readiness,
    render_status,
    replace_in,
    transition_event,
)
from t9k_operator.reconcilers.engine import fmt_time

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": '0/4 nodes are available: persistentvolumeclaim "logs" not found.',
}


def pod(phase: str = "Pending", *conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "tb-tensorboard", "uid": "p1"},
        "status": {"phase": phase, "conditions": list(conditions), **status},
    }


def waiting(reason: str, message: str = "") -> dict[str, Any]:
    state = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
    return {"containerStatuses": [{"name": "tensorboard", "state": state}]}


RUNNING = {"containerStatuses": [{"name": "tensorboard", "state": {"running": {}}}]}
READY = {"type": "Ready", "status": "True"}

CASES = [
    ("none", None, False, "Creating", False),
    (
        "scheduled",
        pod("Pending", {"type": "PodScheduled", "status": "True"}),
        False,
        "Pending",
        False,
    ),
    ("creating", pod("Pending", **waiting("ContainerCreating")), False, "Pending", False),
    ("missing claim", pod("Pending", UNSCHEDULABLE), False, "Unschedulable", True),
    (
        "bad image",
        pod("Pending", **waiting("ImagePullBackOff", "not found")),
        False,
        "ImagePullBackOff",
        True,
    ),
    ("pull error", pod("Pending", **waiting("ErrImagePull")), False, "ErrImagePull", True),
    ("crash loop", pod("Running", **waiting("CrashLoopBackOff")), False, "CrashLoopBackOff", True),
    (
        "no tensorboard",
        pod("Running", **waiting("CreateContainerError")),
        False,
        "CreateContainerError",
        True,
    ),
    ("starting", pod("Running", **RUNNING), False, "Starting", False),
    ("ready", pod("Running", READY, **RUNNING), True, "Ready", False),
    ("evicted", pod("Failed", reason="Evicted", message="low on memory"), False, "PodFailed", True),
]


@pytest.mark.parametrize(
    ("pod_", "ready", "reason", "trouble"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_pod_reads_as_readiness(
    pod_: dict[str, Any] | None, ready: bool, reason: str, trouble: bool
) -> None:
    got = pod_readiness(pod_)
    assert (got.ready, got.reason, got.trouble) == (ready, reason, trouble)
    assert got.message


def test_the_scheduler_and_the_kubelet_are_quoted() -> None:
    assert (
        'persistentvolumeclaim "logs" not found'
        in pod_readiness(pod("Pending", UNSCHEDULABLE)).message
    )
    bad = pod_readiness(pod("Pending", **waiting("ImagePullBackOff", 'pull "x:1": not found')))
    assert 'pull "x:1": not found' in bad.message
    deleting = pod("Running", READY)
    deleting["metadata"]["deletionTimestamp"] = "2026-03-01T12:00:00Z"
    assert pod_readiness(deleting).reason == "Replacing"


def test_an_ended_pod_is_replaced_some_seconds_after_it_ended() -> None:
    ended = pod("Failed", {"type": "Ready", "status": "False", "lastTransitionTime": fmt_time(T0)})
    assert replace_in(ended, T0) == REPLACE_FAILED_AFTER
    assert replace_in(ended, T0 + timedelta(seconds=4)) == REPLACE_FAILED_AFTER - 4
    assert replace_in(ended, T0 + timedelta(seconds=60)) == 0
    assert replace_in(pod("Failed"), T0) == 0, "no time known: at once"


def tb(**meta: Any) -> TensorBoardObject:
    return TensorBoardObject.from_dict(
        {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "metadata": {"name": "tb", "namespace": "demo", "uid": "u", "generation": 2, **meta},
            "spec": {"image": "img", "trainingLogFilesets": ["t9k://pvc/logs/train"]},
        }
    )


def test_the_status_says_where_it_serves_and_how_to_reach_it() -> None:
    obj = tb()
    status = render_status(obj, obj.to_dict(), Readiness(True, "Ready", "serves"), T0)
    assert status == {
        "observedGeneration": 2,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Ready",
                "message": "serves",
                "lastTransitionTime": "2026-03-01T12:00:00Z",
            }
        ],
        "pod": "tb-tensorboard",
        "service": "tb-tensorboard",
        "url": "http://tb-tensorboard.demo.svc:6006/",
        "portForward": "kubectl -n demo port-forward service/tb-tensorboard 6006:6006",
        "runs": [
            {"name": "logs/train", "fileset": "t9k://pvc/logs/train", "path": "/t9k/pvc/logs/train"}
        ],
    }
    # The transition time moves only when the status does.
    stored = {**obj.to_dict(), "status": status}
    later = render_status(obj, stored, Readiness(True, "Ready", "still"), T0 + timedelta(hours=1))
    assert later["conditions"][0]["lastTransitionTime"] == "2026-03-01T12:00:00Z"
    down = render_status(obj, stored, Readiness(False, "PodFailed", "x"), T0 + timedelta(hours=1))
    assert down["conditions"][0]["lastTransitionTime"] == "2026-03-01T13:00:00Z"


def test_a_spec_that_does_not_parse_gets_the_condition_alone() -> None:
    stored = {"metadata": {"name": "tb", "generation": 1}}
    status = render_status(None, stored, Readiness(False, "InvalidSpec", "bad"), T0)
    assert set(status) == {"observedGeneration", "conditions"}
    assert status["conditions"][0]["reason"] == "InvalidSpec"


def test_events_on_a_change_of_reason_only() -> None:
    def prev(reason: str) -> dict[str, Any]:
        return {"conditions": [{"type": "Ready", "status": "False", "reason": reason}]}

    bad = Readiness(False, "ImagePullBackOff", "x")
    assert transition_event({}, bad) == (
        "Warning",
        "ImagePullBackOff",
        "TensorBoard is not ready: x",
    )
    assert transition_event(prev("ImagePullBackOff"), bad) is None
    # Kubelet alternates ErrImagePull and ImagePullBackOff while a pull fails: one Event.
    assert transition_event(prev("ErrImagePull"), bad) is None
    assert transition_event(prev("ImagePullBackOff"), Readiness(False, "ErrImagePull", "y")) is None
    assert transition_event(prev("Creating"), Readiness(False, "Starting", "x")) is None
    assert transition_event(prev("Starting"), Readiness(True, "Ready", "ok")) == (
        "Normal",
        "Ready",
        "TensorBoard is ready: ok",
    )


def test_a_tensorboard_reads_back_as_a_jobs_dependent() -> None:
    seen = {
        "metadata": {"name": "j", "uid": "tb-uid"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}]},
    }
    state = dependent_state("j", "ns", seen, "NOP")
    assert (state.uid, state.ready, state.reason, state.failed) == ("tb-uid", True, "Ready", False)
    fresh = dependent_state("j", "ns", {"metadata": {"uid": "tb-uid"}}, "NOP")
    assert (fresh.ready, fresh.reason) == (False, "Creating")
    missing = dependent_state("j", "ns", None, "Create")
    assert (missing.uid, missing.action, missing.failed) == ("", "Create", False)
    refused = dependent_state("j", "ns", None, "Create", "quota exceeded")
    assert refused.failed and refused.message == "quota exceeded"
