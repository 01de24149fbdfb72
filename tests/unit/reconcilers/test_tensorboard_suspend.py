"""spec.suspend and spec.scheduler of a TensorBoard, with the fake at the kube/
boundary: suspended, its pod is deleted and its Service and status kept, and
resumed it gets the same pod back; a queue it names is not used, and its Ready
condition says so."""

from __future__ import annotations

from typing import Any

from t9k_operator.resources import PODS, SERVICES
from tests.unit.reconcilers.test_tensorboard_reconciler import (
    NS,
    POD,
    RUNNING_READY,
    SVC,
    Harness,
)

SPEC = {"logDir": {"pvc": [{"name": "logs", "subPath": ["train"]}]}}


def set_spec(h: Harness, **fields: Any) -> None:
    tb = h.fake.objects[("TensorBoard", NS, "tb")]
    tb["spec"].update(fields)
    tb["metadata"]["generation"] += 1
    h.sync()


def test_suspended_its_pod_goes_its_service_stays_and_resumed_it_comes_back() -> None:
    h = Harness(dict(SPEC))
    h.run()
    h.set_pod_status(RUNNING_READY)
    h.run()
    before = h.fake.get(PODS, POD, NS)
    assert h.ready()["status"] == "True"

    set_spec(h, suspend=True)
    h.run()
    assert ("delete", "Pod", POD) in h.fake.writes
    assert ("Pod", NS, POD) not in h.fake.objects
    assert ("Service", NS, SVC) in h.fake.objects, "its Service is kept"
    cond = h.ready()
    assert (cond["status"], cond["reason"]) == ("False", "Suspended")
    assert "spec.suspend" in cond["message"]
    status = h.tb()["status"]
    assert "pod" not in status and status["service"] == SVC
    assert status["runs"] == [
        {"name": "logs/train", "fileset": "t9k://pvc/logs/train", "path": "/t9k/pvc/logs/train"}
    ]
    assert h.warnings() == [], "suspended on request: no trouble"
    assert [e.reason for e in h.recorder.events if e.type == "Normal"][-1] == "Suspended"
    writes = len(h.fake.writes)
    h.run()
    assert len(h.fake.writes) == writes, "suspended, nothing more is done"

    set_spec(h, suspend=False)
    h.run()
    after = h.fake.get(PODS, POD, NS)
    assert after["spec"] == before["spec"], "resumed as it was"
    assert after["metadata"]["annotations"] == before["metadata"]["annotations"]
    assert [w for w in h.fake.writes if w[:2] == ("create", "Service")] == [
        ("create", "Service", SVC)
    ]
    assert h.fake.get(SERVICES, SVC, NS)["metadata"]["uid"]


def test_created_suspended_it_has_a_service_and_no_pod() -> None:
    h = Harness({**SPEC, "suspend": True})
    h.run()
    assert [(verb, kind) for verb, kind, _ in h.fake.writes if verb == "create"] == [
        ("create", "Service")
    ]
    assert h.ready()["reason"] == "Suspended"


def test_a_queue_is_not_used_and_the_ready_condition_says_so() -> None:
    h = Harness({**SPEC, "scheduler": {"t9kScheduler": {"queue": "gpu-a"}}})
    h.run()
    pod = h.fake.get(PODS, POD, NS)
    assert "schedulerName" not in pod["spec"]
    h.set_pod_status(RUNNING_READY)
    h.run()
    cond = h.ready()
    assert (cond["status"], cond["reason"]) == ("True", "Ready")
    assert "spec.scheduler.t9kScheduler.queue gpu-a is not used" in cond["message"]
