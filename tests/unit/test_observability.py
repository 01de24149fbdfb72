"""What a platform team watches: the leader gauge on a standby, the reconcile
id on every log line of a reconcile, and the series that exist before their
first increase (the jobs gauges: test_metrics_jobs.py)."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog

from t9k_operator.manager import Manager, ManagerOptions
from t9k_operator.objects import Obj
from t9k_operator.resources import LEASES, Resource
from t9k_operator.runtime.controller import Controller, Result
from t9k_operator.runtime.leaderelection import LeaderElectionOptions
from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue
from tests.fakes import FakeClock
from tests.unit.scrape import labels, samples

# -- leader_election_master_status on a standby ------------------------------------------


class HeldElsewhere:
    """A Lease API whose Lease another process holds, and keeps renewing."""

    def __init__(self) -> None:
        self.renewals = 0

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        assert resource == LEASES
        self.renewals += 1  # a fresh renewTime each read: the holder is alive
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
            "spec": {
                "holderIdentity": "the-other-replica",
                "leaseDurationSeconds": 15,
                "renewTime": f"2026-01-01T00:00:{self.renewals % 60:02d}.000000Z",
            },
        }

    def create(self, resource: Resource, body: Obj, namespace: str | None = None) -> Obj:
        raise AssertionError("the Lease exists: a standby never creates it")

    def replace(self, resource: Resource, body: Obj, subresource: str | None = None) -> Obj:
        raise AssertionError("a standby never writes a held Lease")


def test_a_standby_exports_leader_status_zero() -> None:
    """A replica that does not hold the Lease scrapes as
    ``leader_election_master_status{name=...} 0`` (as controller-runtime's
    standby does), not as no line at all."""
    lease = HeldElsewhere()
    options = ManagerOptions(
        leader_elect=True,
        leader_election=LeaderElectionOptions(
            lease_name="unit-standby", retry_period=0.05, renew_deadline=1.0, lease_duration=2.0
        ),
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="0",
    )
    manager = Manager(object(), options, election_client=lease)  # type: ignore[arg-type]
    code: list[int] = []
    runner = threading.Thread(target=lambda: code.append(manager.run()), daemon=True)
    runner.start()
    try:
        # Until the elector has read the held Lease twice: it campaigns, and loses.
        deadline = time.monotonic() + 10
        while (manager.metrics_port is None or lease.renewals < 2) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert manager.metrics_port is not None, "the metrics server never started"
        url = f"http://127.0.0.1:{manager.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
        assert not manager.is_leader()
        status = samples("leader_election_master_status", text)
        assert status.get(labels(name="unit-standby")) == 0.0, text
    finally:
        manager.stop()
        runner.join(10)
    assert code == [0]


def test_the_leader_gauge_follows_leadership() -> None:
    options = ManagerOptions(
        leader_elect=True, leader_election=LeaderElectionOptions(lease_name="unit-flip")
    )
    manager = Manager(object(), options)  # type: ignore[arg-type]
    manager.informers.wait_for_sync = lambda *a, **k: True  # type: ignore[method-assign]
    manager._on_started_leading()
    assert samples("leader_election_master_status")[(("name", "unit-flip"),)] == 1.0
    manager._on_stopped_leading()
    assert samples("leader_election_master_status")[(("name", "unit-flip"),)] == 0.0


# -- reconcile id on every log line; series that exist before their first increase ---


@pytest.fixture
def captured() -> Iterator[list[MutableMapping[str, Any]]]:
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as logs:
        yield logs


def make(reconcile: Any, name: str = "unit-obs") -> Controller:
    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue("", clock=clock, metrics=False)
    return Controller(name, reconcile, clock=clock, queue=queue)


def test_every_log_line_of_a_reconcile_carries_its_reconcile_id(
    captured: list[MutableMapping[str, Any]],
) -> None:
    reconcile_log = structlog.get_logger("unit")

    def reconcile(key: str) -> Result:
        reconcile_log.info("step one")
        reconcile_log.info("step two")
        if key == "ns/bad":
            raise RuntimeError("boom")
        return Result()

    controller = make(reconcile)
    controller.process("ns/a")
    controller.process("ns/a")
    controller.process("ns/bad")
    ids = [line.get("reconcile_id") for line in captured]
    assert all(ids), captured
    # Each reconcile: its two steps, then (a failure's log line and) "reconciled".
    first, second, third = ids[0:3], ids[3:6], ids[6:]
    assert len(set(first)) == 1 and len(set(second)) == 1 and len(set(third)) == 1
    assert len({first[0], second[0], third[0]}) == 3  # one id per reconcile
    done = [(line["key"], line["outcome"]) for line in captured if line["event"] == "reconciled"]
    assert done == [("ns/a", "success"), ("ns/a", "success"), ("ns/bad", "error")]
    failed = [line for line in captured if line["event"] == "reconcile failed"]
    assert failed and failed[0]["key"] == "ns/bad" and failed[0]["controller"] == "unit-obs"
    # The id does not leak into what the worker logs between reconciles.
    after = structlog.get_logger("unit")
    after.info("between")
    assert "reconcile_id" not in captured[-1]


def test_reconcile_series_exist_at_zero_once_a_controller_starts() -> None:
    """The first error must be an increase rate() sees: the error counter and
    every result's counter are exported at 0 from the controller's start."""
    controller = make(lambda key: Result(), name="unit-zero")
    controller.start()
    try:
        errors = samples("controller_runtime_reconcile_errors_total")
        assert errors[labels(controller="unit-zero")] == 0.0
        totals = samples("controller_runtime_reconcile_total")
        for result in ("success", "error", "requeue", "requeue_after"):
            assert totals[labels(controller="unit-zero", result=result)] == 0.0
    finally:
        controller.stop()


def test_a_failed_job_is_logged_with_its_reason(captured: list[MutableMapping[str, Any]]) -> None:
    from t9k_operator.kinds.view import Outcome
    from t9k_operator.reconcilers import engine
    from t9k_operator.reconcilers.pipeline.lifecycle import Lifecycle

    plan = engine.Plan()
    plan.finished = Outcome("Failed", "BackoffLimitExceeded", "replica worker-0 failed twice")
    plan.status = {"phase": "Failed"}
    job_obj: Obj = {"metadata": {"namespace": "ns", "name": "j1"}}
    Lifecycle("UnitJob").finished(job_obj, plan)
    line = next(entry for entry in captured if entry["event"] == "job failed")
    assert line["reason"] == "BackoffLimitExceeded"
    assert line["message"] == "replica worker-0 failed twice"
    assert (line["kind"], line["namespace"], line["name"]) == ("UnitJob", "ns", "j1")
    assert line["log_level"] == "warning"


def test_a_kinds_lifecycle_series_exist_at_zero_once_a_job_of_a_namespace_is_seen() -> None:
    """A job's success, restart and duration are increases rate() can see:
    their series exist at 0 from the first reconcile of a job in the namespace."""
    from t9k_operator.reconcilers.pipeline.lifecycle import Lifecycle

    Lifecycle("ZeroJob").series_at_zero("zero-ns")
    series = labels(kind="ZeroJob", namespace="zero-ns")
    assert samples("t9k_jobs_succeeded_total")[series] == 0.0
    assert samples("t9k_jobs_restarted_total")[series] == 0.0
    for phase in ("Succeeded", "Failed"):
        counts = samples("t9k_job_duration_seconds_count")
        assert counts[labels(kind="ZeroJob", namespace="zero-ns", phase=phase)] == 0.0
