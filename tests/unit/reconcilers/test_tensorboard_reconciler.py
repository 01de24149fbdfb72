"""The TensorBoard controller, with the fake at the kube/ boundary: its Service and
pod are created, its status says whether it serves and how to reach it, a pod in
trouble is reported with one Warning, a changed spec or an ended pod is
replaced, and names held by others or refusals never loop."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.integrations.tensorboard.controller import (
    CACHE_CATCH_UP,
    TensorBoardReconciler,
)
from t9k_operator.integrations.tensorboard.integration import TENSORBOARDS
from t9k_operator.integrations.tensorboard.served import ServedTensorBoard
from t9k_operator.integrations.tensorboard.status import REPLACE_FAILED_AFTER
from t9k_operator.kube import AlreadyExists, Conflict, Invalid, ServerError
from t9k_operator.reconcilers.controllers import CONTROLLERS, build_controllers
from t9k_operator.reconcilers.engine import fmt_time
from t9k_operator.reconcilers.pipeline.contract import Action
from t9k_operator.resources import PODS, SERVICES
from t9k_operator.runtime.controller import ControllerContext, Result
from tests.fakes import FakeClock, FakeRecorder
from tests.unit.reconcilers.fake_kube import FakeKube

NS = "demo"
POD = SVC = "tb-tensorboard"
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class Harness:
    def __init__(self, spec: dict[str, Any] | None = None) -> None:
        self.fake = FakeKube()
        self.recorder = FakeRecorder()
        self.clock = FakeClock(T0)
        self.informers = InformerFactory(self.fake)  # type: ignore[arg-type]
        ctx = ControllerContext(
            client=self.fake,  # type: ignore[arg-type]
            informers=self.informers,
            recorder=self.recorder,  # type: ignore[arg-type]
            workers=1,
            clock=self.clock,
        )
        self.reconciler = TensorBoardReconciler(ctx)
        body = {
            "apiVersion": "tensorstack.dev/v1beta1",
            "kind": "TensorBoard",
            "metadata": {"name": "tb", "namespace": NS, "generation": 1},
            "spec": spec
            or {"image": "tensorflow/tensorflow:2.14.0", "trainingLogFilesets": ["t9k://pvc/logs"]},
        }
        self.fake.put(TENSORBOARDS, body)
        self.sync()

    def sync(self) -> None:
        self.fake.sync(
            self.informers, (TENSORBOARDS, None), (PODS, CHILD_SELECTOR), (SERVICES, CHILD_SELECTOR)
        )

    def reconcile(self) -> Result:
        return self.reconciler.reconcile(f"{NS}/tb")

    def run(self, passes: int = 3) -> Result:
        result = Result()
        for _ in range(passes):
            result = self.reconcile()
            self.sync()
        return result

    def tb(self) -> dict[str, Any]:
        return self.fake.get(TENSORBOARDS, "tb", NS)

    def ready(self) -> dict[str, Any]:
        (cond,) = self.tb()["status"]["conditions"]
        return dict(cond)

    def pod(self) -> dict[str, Any]:
        return self.fake.objects[("Pod", NS, POD)]

    def set_pod_status(self, status: dict[str, Any]) -> None:
        self.pod()["status"] = copy.deepcopy(status)
        self.sync()

    def warnings(self) -> list[str]:
        return [e.reason for e in self.recorder.events if e.type == "Warning"]


RUNNING_READY = {
    "phase": "Running",
    "conditions": [{"type": "Ready", "status": "True"}],
    "containerStatuses": [{"name": "tensorboard", "state": {"running": {}}}],
}


def test_it_creates_its_service_and_pod_and_says_how_to_reach_it() -> None:
    h = Harness()
    h.run()
    creates = [(k, n) for verb, k, n in h.fake.writes if verb == "create"]
    assert creates == [("Service", SVC), ("Pod", POD)]
    pod, svc = h.fake.get(PODS, POD, NS), h.fake.get(SERVICES, SVC, NS)
    tb_uid = h.tb()["metadata"]["uid"]
    for child in (pod, svc):
        assert child["metadata"]["ownerReferences"][0]["uid"] == tb_uid
    assert pod["spec"]["containers"][0]["command"][:3] == [
        "tensorboard",
        "--logdir_spec",
        "logs:/t9k/pvc/logs",
    ]
    status = h.tb()["status"]
    assert status["portForward"] == "kubectl -n demo port-forward service/tb-tensorboard 6006:6006"
    assert status["observedGeneration"] == 1
    assert h.ready()["status"] == "False" and h.ready()["reason"] == "Pending"
    h.set_pod_status(RUNNING_READY)
    h.run()
    assert (h.ready()["status"], h.ready()["reason"]) == ("True", "Ready")
    assert h.recorder.reasons() == ["Ready"]
    writes = len(h.fake.writes)
    h.run()
    assert len(h.fake.writes) == writes, "nothing changed: nothing is written"


TROUBLE = [
    (
        "missing claim",
        {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": 'persistentvolumeclaim "logs" not found',
                }
            ],
        },
        "Unschedulable",
        'persistentvolumeclaim "logs" not found',
    ),
    (
        "bad image",
        {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "tensorboard",
                    "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}},
                }
            ],
        },
        "ImagePullBackOff",
        "not found",
    ),
    (
        "crash loop",
        {
            "phase": "Running",
            "containerStatuses": [
                {"name": "tensorboard", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ],
        },
        "CrashLoopBackOff",
        "container tensorboard",
    ),
]


@pytest.mark.parametrize(
    ("status", "reason", "quoted"), [c[1:] for c in TROUBLE], ids=[c[0] for c in TROUBLE]
)
def test_a_pod_that_cannot_start_is_reported_with_one_warning(
    status: dict[str, Any], reason: str, quoted: str
) -> None:
    h = Harness()
    h.run()
    h.set_pod_status(status)
    h.run()
    cond = h.ready()
    assert (cond["status"], cond["reason"]) == ("False", reason)
    assert quoted in cond["message"]
    assert h.warnings() == [reason]
    assert [n for verb, k, n in h.fake.writes if verb == "delete"] == [], "it waits, never loops"


def test_a_changed_spec_replaces_the_pod() -> None:
    h = Harness()
    h.run()
    old = h.fake.get(PODS, POD, NS)
    tb = h.fake.objects[("TensorBoard", NS, "tb")]
    tb["spec"]["image"] = "tensorflow/tensorflow:2.15.0"
    tb["metadata"]["generation"] = 2
    h.sync()
    h.reconcile()
    assert ("delete", "Pod", POD) in h.fake.writes
    assert h.ready()["reason"] == "Replacing"
    h.sync()
    h.run()
    new = h.fake.get(PODS, POD, NS)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["containers"][0]["image"] == "tensorflow/tensorflow:2.15.0"
    assert h.tb()["status"]["observedGeneration"] == 2


def test_an_ended_pod_is_replaced_after_a_pause() -> None:
    h = Harness()
    h.run()
    old_uid = h.pod()["metadata"]["uid"]
    h.set_pod_status(
        {
            "phase": "Failed",
            "reason": "Evicted",
            "message": "The node was low on resource: memory.",
            "conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": fmt_time(T0)}
            ],
        }
    )
    assert h.reconcile() == Result(requeue_after=REPLACE_FAILED_AFTER)
    assert h.ready()["reason"] == "PodFailed" and "Evicted" in h.ready()["message"]
    assert h.warnings() == ["PodFailed"]
    h.sync()
    h.clock.step(REPLACE_FAILED_AFTER)
    h.run()
    assert h.pod()["metadata"]["uid"] != old_uid


def test_a_name_held_by_another_is_a_conflict_never_a_delete() -> None:
    h = Harness()
    other = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD,
            "namespace": NS,
            "labels": {"app.kubernetes.io/managed-by": "t9k-operator"},
        },
    }
    h.fake.put(PODS, other)
    h.run()
    assert (h.ready()["reason"], h.warnings()) == ("NameConflict", ["NameConflict"])
    assert "Pod tb-tensorboard already exists" in h.ready()["message"]
    assert [w for w in h.fake.writes if w[0] == "delete"] == []


def test_a_refused_pod_is_reported_and_retried_only_when_that_may_cure_it() -> None:
    h = Harness()
    h.fake.fail_next("create", "Pod", Invalid("spec.containers[0].resources: invalid"))
    assert h.run(1) == Result()
    assert h.ready()["reason"] == "FailedCreate" and "invalid" in h.ready()["message"]
    h2 = Harness()
    h2.fake.fail_next("create", "Pod", ServerError("etcd is slow"))
    assert h2.run(1) == Result(requeue=True)
    assert "retrying" in h2.ready()["message"]
    h2.run()
    assert h2.ready()["reason"] == "Pending"


def test_a_spec_stored_before_the_rules_is_invalid_naming_the_field() -> None:
    h = Harness({"image": "tb", "trainingLogFilesets": ["s3://bucket/logs"]})
    h.run()
    cond = h.ready()
    assert cond["reason"] == "InvalidSpec"
    assert "spec.trainingLogFilesets[0]" in cond["message"]
    assert [w for w in h.fake.writes if w[0] == "create"] == []


def test_a_deleted_tensorboard_is_left_to_the_garbage_collector() -> None:
    h = Harness()
    del h.fake.objects[("TensorBoard", NS, "tb")]
    h.sync()
    assert h.reconcile() == Result()
    assert h.fake.writes == []


def test_the_operator_runs_a_controller_for_it_beside_the_job_kinds() -> None:
    fake = FakeKube()
    ctx = ControllerContext(
        client=fake,  # type: ignore[arg-type]
        informers=InformerFactory(fake),  # type: ignore[arg-type]
        recorder=FakeRecorder(),  # type: ignore[arg-type]
        workers=1,
    )
    names = [c.name for c in build_controllers(ctx, [ServedTensorBoard()])]
    assert names[-1] == "tensorboard" and len(names) == CONTROLLERS


def test_every_write_is_a_planned_action_through_the_pipelines_writer() -> None:
    """The children's writes go through the pipeline's Writer and the status
    through its StatusWriter, as actions: the fake sees no write but theirs."""
    h = Harness()
    through: list[tuple[str, str, str]] = []
    actions: list[Action] = []

    def recording(write: Callable[..., Any]) -> Callable[..., Any]:
        def record(action: Action, *rest: Any) -> Any:
            actions.append(action)
            through.append((action.verb, action.resource.kind, action.body["metadata"]["name"]))
            return write(action, *rest)

        return record

    writer, status = h.reconciler.writer, h.reconciler.status
    writer.act = recording(writer.act)  # type: ignore[method-assign]
    status.write = recording(status.write)  # type: ignore[method-assign]
    h.run()
    h.set_pod_status(RUNNING_READY)
    h.run()
    h.fake.objects[("TensorBoard", NS, "tb")]["spec"]["image"] = "tensorflow/tensorflow:2.15.0"
    h.sync()
    h.run()
    assert h.fake.writes == through
    assert [w[:2] for w in through if w[0] != "replace_status"] == [
        ("create", "Service"),
        ("create", "Pod"),
        ("delete", "Pod"),
        ("create", "Pod"),
    ]
    assert all(a.strict and a.soft for a in actions if a.verb == "create")


def test_a_pod_gone_between_its_create_and_the_look_is_created_next_pass() -> None:
    h = Harness()
    h.fake.fail_next("create", "Pod", AlreadyExists("pods 'tb-tensorboard' already exists"))
    assert h.run(1) == Result(requeue=True)
    assert h.ready()["reason"] == "Creating"
    h.run()
    assert ("create", "Pod", POD) in h.fake.writes


def test_a_pod_changed_under_its_delete_is_looked_at_again_without_a_status() -> None:
    h = Harness()
    h.run()
    h.fake.objects[("TensorBoard", NS, "tb")]["spec"]["image"] = "tensorflow/tensorflow:2.15.0"
    h.sync()
    h.fake.fail_next("delete", "Pod", Conflict("Precondition failed: UID in precondition"))
    writes = len(h.fake.writes)
    assert h.reconcile() == Result(requeue=True)
    assert len(h.fake.writes) == writes, "no status from a pass that met a change"
    h.run()
    assert ("delete", "Pod", POD) in h.fake.writes
    assert h.pod()["spec"]["containers"][0]["image"] == "tensorflow/tensorflow:2.15.0"


def test_a_pass_before_the_cache_shows_its_status_write_waits_for_it() -> None:
    h = Harness()
    h.reconcile()
    writes = list(h.fake.writes)
    assert h.reconcile() == Result(requeue_after=CACHE_CATCH_UP)
    assert h.fake.writes == writes, "nothing planned from the status before it"
    h.sync()
    assert h.reconcile() == Result()
