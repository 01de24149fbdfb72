"""What a platform team watches: the leader gauge on a standby, the jobs gauges
counted from the cache, the reconcile id on every log line of a reconcile,
and the series that exist before their first increase."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime
from typing import Any

import pytest
import structlog
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from t9k_operator.foundation import metrics_jobs
from t9k_operator.foundation.metrics_jobs import JobsCollector
from t9k_operator.manager import Manager, ManagerOptions
from t9k_operator.objects import Obj
from t9k_operator.resources import LEASES, Resource
from t9k_operator.runtime.controller import Controller, Result
from t9k_operator.runtime.leaderelection import LeaderElectionOptions
from t9k_operator.runtime.ratelimitingqueue import RateLimitingQueue
from tests.fakes import FakeClock


def samples(name: str, text: str | None = None) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of metric ``name`` in ``text`` (default: the registry now), by labels."""
    text = text if text is not None else generate_latest(REGISTRY).decode()
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


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


# -- t9k_jobs and t9k_jobs_oldest_pending_seconds -------------------------------------


class Cache:
    def __init__(self, jobs: list[Obj], synced: bool = True) -> None:
        self.jobs, self.synced = jobs, synced

    def list(self) -> list[Obj]:
        return list(self.jobs)

    def has_synced(self) -> bool:
        return self.synced


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def job(namespace: str, phase: str | None, created: str, started: str | None = None) -> Obj:
    status: Obj = {}
    if phase is not None:
        status["phase"] = phase
    if started is not None:
        status["startTime"] = started
    out: Obj = {"metadata": {"namespace": namespace, "creationTimestamp": created}}
    if status:
        out["status"] = status
    return out


def scrape(collector: JobsCollector) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in collector.collect():
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def labels(**kw: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(kw.items()))


def test_jobs_are_counted_by_kind_namespace_and_phase_from_the_cache() -> None:
    collector = JobsCollector(now=lambda: NOW)
    collector.watch(
        "PyTorchTrainingJob",
        Cache(
            [
                job("a", "Running", "2026-01-01T11:00:00Z", "2026-01-01T11:00:01Z"),
                job("a", "Running", "2026-01-01T11:00:00Z", "2026-01-01T11:00:01Z"),
                job("a", "Succeeded", "2026-01-01T10:00:00Z", "2026-01-01T10:00:01Z"),
                # Pending since its start (11:50), not its creation.
                job("b", "Pending", "2026-01-01T11:00:00Z", "2026-01-01T11:50:00Z"),
                # No status yet: Pending since its creation (11:30), the oldest in b.
                job("b", None, "2026-01-01T11:30:00Z"),
            ]
        ),
    )
    collector.watch("MSJob", Cache([job("a", "Failed", "2026-01-01T09:00:00Z")]))
    collector.watch("DeepSpeedJob", Cache([job("c", "Running", "2026-01-01T11:00:00Z")], False))
    collector.export_while(lambda: True)
    got = scrape(collector)
    jobs = got["t9k_jobs"]
    pt = "PyTorchTrainingJob"
    assert jobs[labels(kind=pt, namespace="a", phase="Running")] == 2
    assert jobs[labels(kind=pt, namespace="a", phase="Succeeded")] == 1
    assert jobs[labels(kind=pt, namespace="a", phase="Failed")] == 0  # every phase, 0 when none
    assert jobs[labels(kind=pt, namespace="b", phase="Pending")] == 2
    assert jobs[labels(kind="MSJob", namespace="a", phase="Failed")] == 1
    assert not any(dict(k)["kind"] == "DeepSpeedJob" for k in jobs)  # a cold cache: nothing
    assert len(jobs) == 3 * len(metrics_jobs.PHASES)  # (pt, a), (pt, b), (MSJob, a)
    assert got["t9k_jobs_oldest_pending_seconds"] == {
        labels(kind=pt, namespace="b"): 30 * 60.0,
    }


def test_only_an_exporting_process_reports_jobs() -> None:
    """A standby's cache holds the same jobs: it exports none, so summing over
    every replica counts each job once."""
    leading = threading.Event()
    collector = JobsCollector(now=lambda: NOW)
    collector.watch("MSJob", Cache([job("a", "Running", "2026-01-01T11:00:00Z")]))
    collector.export_while(leading.is_set)
    assert scrape(collector) == {}
    leading.set()
    assert scrape(collector)["t9k_jobs"][labels(kind="MSJob", namespace="a", phase="Running")] == 1
    collector.export_while(None)
    assert scrape(collector) == {}


def test_the_registered_collector_exports_while_the_manager_leads() -> None:
    options = ManagerOptions(
        leader_elect=True, leader_election=LeaderElectionOptions(lease_name="unit-jobs")
    )
    manager = Manager(object(), options)  # type: ignore[arg-type]
    metrics_jobs.JOBS.watch("UnitKind", Cache([job("u", "Running", "2026-01-01T11:00:00Z")]))
    series = labels(kind="UnitKind", namespace="u", phase="Running")
    metrics_jobs.JOBS.export_while(manager.is_leader)
    try:
        assert series not in samples("t9k_jobs")
        manager._leading.set()
        assert samples("t9k_jobs")[series] == 1.0
    finally:
        metrics_jobs.JOBS.export_while(None)
        metrics_jobs.JOBS._caches.pop("UnitKind", None)


# -- the progress of jobs not finished ---------------------------------------------------


def reporting(name: str, phase: str | None, progress: Obj | None, namespace: str = "a") -> Obj:
    out = job(namespace, phase, "2026-01-01T11:00:00Z", "2026-01-01T11:00:01Z")
    out["metadata"]["name"] = name
    if progress is not None:
        out.setdefault("status", {})["progress"] = progress
    return out


def test_the_progress_of_each_job_not_finished_is_exported_by_name() -> None:
    at = "2026-01-01T11:58:30Z"  # 90 s before NOW
    collector = JobsCollector(now=lambda: NOW)
    collector.watch(
        "PyTorchTrainingJob",
        Cache(
            [
                reporting(
                    "mnist",
                    "Running",
                    {
                        "step": 420,
                        "totalSteps": 1000,
                        "replica": "mnist-worker-0",
                        "lastReportTime": at,
                        "summary": "420/1000 (42%)",
                    },
                ),
                # No total: a step and a silence, no ratio.
                reporting("open", "Paused", {"step": 7, "replica": "p", "lastReportTime": at}),
                # A step past the total counts as the total (as the summary's percent).
                reporting(
                    "over",
                    "Running",
                    {"step": 12, "totalSteps": 10, "replica": "o", "lastReportTime": at},
                ),
                # Never reported: no series at all.
                reporting("silent", "Running", None),
                # Finished: its progress stays in its status, not in the metrics.
                reporting(
                    "done",
                    "Succeeded",
                    {"step": 10, "totalSteps": 10, "replica": "d", "lastReportTime": at},
                ),
                reporting(
                    "broke",
                    "Failed",
                    {"step": 3, "totalSteps": 10, "replica": "b", "lastReportTime": at},
                ),
            ]
        ),
    )
    collector.watch(
        "MSJob",
        Cache(
            [
                # A report from the future (clock skew) reads 0, not negative.
                reporting(
                    "ms",
                    "Running",
                    {
                        "step": 5,
                        "totalSteps": 20,
                        "replica": "m",
                        "lastReportTime": "2026-01-01T12:00:05Z",
                    },
                    namespace="b",
                )
            ]
        ),
    )
    collector.export_while(lambda: True)
    got = scrape(collector)
    pt = "PyTorchTrainingJob"
    assert got["t9k_job_progress_ratio"] == {
        labels(kind=pt, namespace="a", name="mnist"): 0.42,
        labels(kind=pt, namespace="a", name="over"): 1.0,
        labels(kind="MSJob", namespace="b", name="ms"): 0.25,
    }
    assert got["t9k_job_progress_step"] == {
        labels(kind=pt, namespace="a", name="mnist"): 420,
        labels(kind=pt, namespace="a", name="open"): 7,
        labels(kind=pt, namespace="a", name="over"): 12,
        labels(kind="MSJob", namespace="b", name="ms"): 5,
    }
    assert got["t9k_job_seconds_since_progress_report"] == {
        labels(kind=pt, namespace="a", name="mnist", phase="Running"): 90.0,
        labels(kind=pt, namespace="a", name="open", phase="Paused"): 90.0,
        labels(kind=pt, namespace="a", name="over", phase="Running"): 90.0,
        labels(kind="MSJob", namespace="b", name="ms", phase="Running"): 0.0,
    }


def test_malformed_progress_exports_what_it_can() -> None:
    """The collector reads raw objects: a value of the wrong type is left out,
    never a failed scrape."""
    collector = JobsCollector(now=lambda: NOW)
    collector.watch(
        "DeepSpeedJob",
        Cache(
            [
                reporting("text", "Running", {"step": "5", "totalSteps": 10, "lastReportTime": 1}),
                reporting("zero", "Running", {"step": 5, "totalSteps": 0, "lastReportTime": "x"}),
                reporting("flag", "Running", {"step": True, "totalSteps": 10}),
                reporting("list", "Running", ["not", "a", "mapping"]),  # type: ignore[arg-type]
            ]
        ),
    )
    collector.export_while(lambda: True)
    got = scrape(collector)
    assert got["t9k_job_progress_step"] == {
        labels(kind="DeepSpeedJob", namespace="a", name="zero"): 5
    }
    assert "t9k_job_progress_ratio" not in got
    assert "t9k_job_seconds_since_progress_report" not in got


def test_a_standby_exports_no_progress() -> None:
    progress = {
        "step": 1,
        "totalSteps": 2,
        "replica": "r",
        "lastReportTime": "2026-01-01T11:59:00Z",
    }
    collector = JobsCollector(now=lambda: NOW)
    collector.watch("MSJob", Cache([reporting("ms", "Running", progress)]))
    collector.export_while(lambda: False)
    assert scrape(collector) == {}
    collector.export_while(lambda: True)
    collector.watch("MSJob", Cache([reporting("ms", "Running", progress)], synced=False))
    assert "t9k_job_progress_step" not in scrape(collector)


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
    from t9k_operator.reconcilers.apply.lifecycle import Lifecycle

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


def test_jobs_collector_is_registered_once() -> None:
    names = [c for c in REGISTRY._collector_to_names if isinstance(c, JobsCollector)]
    assert names == [metrics_jobs.JOBS]


def test_a_kinds_lifecycle_series_exist_at_zero_once_a_job_of_a_namespace_is_seen() -> None:
    """A job's success, restart and duration are increases rate() can see:
    their series exist at 0 from the first reconcile of a job in the namespace."""
    from t9k_operator.reconcilers.apply.lifecycle import Lifecycle

    Lifecycle("ZeroJob").series_at_zero("zero-ns")
    series = labels(kind="ZeroJob", namespace="zero-ns")
    assert samples("t9k_jobs_succeeded_total")[series] == 0.0
    assert samples("t9k_jobs_restarted_total")[series] == 0.0
    for phase in ("Succeeded", "Failed"):
        counts = samples("t9k_job_duration_seconds_count")
        assert counts[labels(kind="ZeroJob", namespace="zero-ns", phase=phase)] == 0.0
