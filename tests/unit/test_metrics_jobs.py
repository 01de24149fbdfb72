"""The jobs gauges (t9k_operator.foundation.metrics_jobs): counted from the
cache by kind, namespace and phase, the oldest pending job's age, the progress
of jobs not finished, and exported only while this process leads."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from prometheus_client import REGISTRY

from t9k_operator.foundation import metrics_jobs
from t9k_operator.foundation.metrics_jobs import JobsCollector
from t9k_operator.manager import Manager, ManagerOptions
from t9k_operator.objects import Obj
from t9k_operator.runtime.leaderelection import LeaderElectionOptions
from tests.unit.scrape import labels, samples

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


def test_jobs_collector_is_registered_once() -> None:
    names = [c for c in REGISTRY._collector_to_names if isinstance(c, JobsCollector)]
    assert names == [metrics_jobs.JOBS]
