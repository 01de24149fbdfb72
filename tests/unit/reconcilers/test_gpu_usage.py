"""Idle GPUs, the pure parts and the watch: the PromQL asked, how Prometheus's
answers read (hand-written, with the labels DCGM's exporter carries), the
idle verdict, the condition and Events a reconcile writes from it, and one
poll of the watch against a Prometheus that answers or fails."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest

from t9k_operator.foundation.prometheus import PrometheusError
from t9k_operator.informers import CONTROLLER_UID_INDEX
from t9k_operator.integrations.gpu_usage.integration import (
    GPUState,
    GPUUsage,
    WatchOptions,
    parse_window,
)
from t9k_operator.integrations.gpu_usage.metrics import QUERIES, Judged, Verdicts
from t9k_operator.integrations.gpu_usage.usage import (
    BUSY,
    IDLE,
    UNKNOWN,
    GPUPod,
    Usage,
    Verdict,
    Window,
    current_query,
    describe_usage,
    judge,
    samples,
    usage,
    window_query,
    windows,
)
from t9k_operator.integrations.gpu_usage.watch import GPUWatch, running_since
from t9k_operator.reconcilers.engine import get_condition
from t9k_operator.reconcilers.serving import Host, Route
from tests.fakes import FakeClock

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
OPTIONS = WatchOptions("http://prometheus:9090", 5.0, 900)


def series(stat: str, value: str, pod: str = "j-worker-0", ns: str = "team", **labels: str) -> Any:
    """One series of an answer, as Prometheus returns it once the query's
    label_replace has set pod and namespace."""
    metric = {"pod": pod, "namespace": ns, "t9k_stat": stat, "gpu": "0", "Hostname": "node-1"}
    return {"metric": {**metric, **labels}, "value": [1767268800.0, value]}


# -- the queries ---------------------------------------------------------------------


def test_the_window_query_asks_max_and_avg_by_pod_reading_both_label_spellings() -> None:
    q = window_query(900)
    assert "max_over_time(DCGM_FI_DEV_GPU_UTIL[900s])" in q
    assert "avg_over_time(DCGM_FI_DEV_GPU_UTIL[900s])" in q
    assert q.count('"pod", "$1", "exported_pod", "(.+)"') == 2
    assert q.count('"namespace", "$1", "exported_namespace", "(.+)"') == 2
    assert "max by (namespace, pod)" in q and "avg by (namespace, pod)" in q
    assert '"t9k_stat", "max"' in q and '"t9k_stat", "avg"' in q


def test_the_current_query_reads_util_and_memory_of_one_namespace_under_either_label() -> None:
    q = current_query('te"am')
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"):
        assert f'{metric}{{exported_namespace="te\\"am"}} or {metric}{{namespace="te\\"am"}}' in q
    assert "namespace=" not in current_query(None)


# -- reading answers -----------------------------------------------------------------


def test_samples_keep_series_naming_a_pod_and_a_number() -> None:
    answer = [
        series("max", "3", UUID="GPU-a"),
        series("avg", "NaN"),
        series("max", "1", pod=""),  # a GPU no pod holds
        {"metric": {"t9k_stat": "max", "namespace": "team"}, "value": [0, "1"]},
        {"metric": {"pod": "p", "namespace": "team"}, "value": [0, "x"]},
    ]
    found = samples(answer)
    assert [(s.pod, s.gpu, s.stat, s.value) for s in found] == [
        (("team", "j-worker-0"), "GPU-a", "max", 3.0)
    ]


def test_windows_pair_each_pods_mean_and_peak() -> None:
    answer = [series("max", "4"), series("avg", "1.5"), series("max", "9", pod="other")]
    assert windows(samples(answer)) == {("team", "j-worker-0"): Window(1.5, 4.0)}


# -- the verdict ---------------------------------------------------------------------


def pod(name: str, gpus: int = 2, ran: float = 1000) -> GPUPod:
    return GPUPod("team", name, gpus, NOW - timedelta(seconds=ran))


def test_idle_when_every_pods_peak_stays_under_the_threshold() -> None:
    found = {("team", "a"): Window(1.0, 4.9), ("team", "b"): Window(3.0, 2.0)}
    verdict = judge([pod("a", 2), pod("b", 6)], found, 5.0, 900, NOW)
    assert verdict == Verdict(IDLE, gpus=8, avg=2.5, peak=4.9)  # (1*2 + 3*6) / 8


def test_busy_when_one_sample_of_one_gpu_reached_it() -> None:
    found = {("team", "a"): Window(0.5, 5.0), ("team", "b"): Window(0.0, 0.0)}
    assert judge([pod("a"), pod("b")], found, 5.0, 900, NOW).state == BUSY


def test_unknown_until_every_pod_has_run_the_window_and_has_series() -> None:
    found = {("team", "a"): Window(0.0, 0.0)}
    young = judge([pod("a", ran=899)], found, 5.0, 900, NOW)
    assert young.state == UNKNOWN and "less than the window" in young.why
    missing = judge([pod("a"), pod("b")], found, 5.0, 900, NOW)
    assert missing.state == UNKNOWN and "pod b" in missing.why
    not_running = judge([GPUPod("team", "a", 1, None)], found, 5.0, 900, NOW)
    assert not_running.state == UNKNOWN


def test_current_usage_sums_a_jobs_gpus_over_its_pods() -> None:
    answer = [
        series("util", "90", UUID="GPU-a"),
        series("used", "10240", UUID="GPU-a"),
        series("free", "30720", UUID="GPU-a"),
        series("util", "10", UUID="GPU-b"),
        series("used", "2048", UUID="GPU-b"),
        series("free", "38912", UUID="GPU-b"),
        series("util", "100", pod="not-the-jobs", UUID="GPU-c"),
    ]
    found = usage(samples(answer), [("team", "j-worker-0")])
    assert found == Usage(2, 50.0, 90.0, 12288.0, 81920.0)
    assert describe_usage(found) == "2 GPUs: 50% (max 90%), memory 12.0/80.0 GiB"
    assert usage(samples(answer), [("team", "nobody")]) is None


# -- the condition and its Events ----------------------------------------------------


def status_after(verdict: Verdict | None, phase: str = "Running", before: Any = None) -> Any:
    status: dict[str, Any] = {"phase": phase, "conditions": list(before or [])}
    events = GPUUsage(OPTIONS).status(GPUState(verdict, NOW), cast(Any, None), status)
    return status, events


def test_idle_sets_the_condition_and_warns_once() -> None:
    status, events = status_after(Verdict(IDLE, 4, 0.4, 2.0))
    cond = get_condition(status, "GPUsIdle")
    assert cond is not None and cond["status"] == "True" and cond["reason"] == "GPUsIdle"
    assert "4 GPU(s) stayed under 5.0% utilization for 15m" in cond["message"]
    assert "average 0.4%, peak 2.0%" in cond["message"]
    assert [(e[0], e[1]) for e in events] == [("Warning", "GPUsIdle")]
    again, events = status_after(Verdict(IDLE, 4, 0.1, 0.3), before=status["conditions"])
    assert events == [] and get_condition(again, "GPUsIdle") == cond


def test_busy_clears_it_with_a_normal_event_and_unknown_leaves_it() -> None:
    idle, _ = status_after(Verdict(IDLE, 1, 0.0, 0.0))
    unknown, events = status_after(Verdict(UNKNOWN), before=idle["conditions"])
    assert events == [] and get_condition(unknown, "GPUsIdle")["status"] == "True"  # type: ignore[index]
    busy, events = status_after(Verdict(BUSY, 1, 40, 97), before=idle["conditions"])
    cond = get_condition(busy, "GPUsIdle")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "GPUsInUse")
    assert [(e[0], e[1]) for e in events] == [("Normal", "GPUsInUse")]
    fresh, events = status_after(Verdict(BUSY, 1, 40, 97))
    assert events == [] and get_condition(fresh, "GPUsIdle")["status"] == "False"  # type: ignore[index]


def test_a_job_no_longer_running_is_no_longer_idle() -> None:
    idle, _ = status_after(Verdict(IDLE, 1, 0.0, 0.0))
    done, events = status_after(None, phase="Succeeded", before=idle["conditions"])
    cond = get_condition(done, "GPUsIdle")
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "NotRunning")
    assert events == []
    never, _ = status_after(None, phase="Paused")
    assert get_condition(never, "GPUsIdle") is None


# -- flags ---------------------------------------------------------------------------


def flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    GPUUsage.add_flags(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--prometheus-url", "prometheus:9090"], "--prometheus-url"),
        (["--gpu-idle-threshold", "0"], "--gpu-idle-threshold"),
        (["--gpu-idle-threshold", "101"], "--gpu-idle-threshold"),
        (["--gpu-idle-window", "5s"], "--gpu-idle-window"),
        (["--gpu-idle-window", "25h"], "--gpu-idle-window"),
    ],
)
def test_flags_out_of_bounds_are_refused(argv: list[str], problem: str) -> None:
    assert problem in (GPUUsage.check_flags(flags(*argv)) or "")


def test_flags_turn_it_on_with_a_url_only() -> None:
    assert GPUUsage.from_flags(flags()) is None
    on = GPUUsage.from_flags(flags("--prometheus-url", "http://p:9090", "--gpu-idle-window", "2m"))
    assert on is not None and on.options == WatchOptions("http://p:9090", 5.0, 120)
    assert on.options.period == 12.0 and OPTIONS.period == 60.0
    assert GPUUsage.check_flags(flags("--prometheus-url", "https://p/prom")) is None
    assert parse_window("90") == 90 and parse_window("1.5h") == 5400


# -- the watch -----------------------------------------------------------------------


def gpu_pod(name: str, uid: str, started: str = "2026-01-01T11:00:00Z") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team", "uid": f"pod-{name}"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": started}}}],
        },
    }


class Index:
    def __init__(self, objs: dict[str, list[dict[str, Any]]]) -> None:
        self.objs = objs

    def list(self) -> list[dict[str, Any]]:
        return [o for objs in self.objs.values() for o in objs]

    def by_index(self, index: str, value: str) -> list[dict[str, Any]]:
        assert index == CONTROLLER_UID_INDEX
        return self.objs.get(value, [])


def watch_of(answer: Any) -> tuple[GPUWatch, list[str]]:
    jobs = Index(
        {
            "": [
                {
                    "metadata": {"name": "idle", "namespace": "team", "uid": "u1"},
                    "status": {"phase": "Running"},
                },
                {
                    "metadata": {"name": "busy", "namespace": "team", "uid": "u2"},
                    "status": {"phase": "Running"},
                },
                {
                    "metadata": {"name": "done", "namespace": "team", "uid": "u3"},
                    "status": {"phase": "Succeeded"},
                },
            ]
        }
    )
    pods = Index(
        {
            "u1": [gpu_pod("idle-0", "u1")],
            "u2": [gpu_pod("busy-0", "u2")],
            "u3": [gpu_pod("done-0", "u3")],
        }
    )
    queued: list[str] = []
    resource = SimpleNamespace(kind="PyTorchTrainingJob")
    route = Route(cast(Any, resource), cast(Any, jobs), lambda key, _: queued.append(key))
    ctx = SimpleNamespace(clock=FakeClock(NOW), is_leader=lambda: True)
    host = Host(cast(Any, ctx), {"pytorchtrainingjobs": route}, cast(Any, pods))

    def ask(url: str, expr: str) -> Any:
        assert url == OPTIONS.url and expr == window_query(900)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return GPUWatch(host, OPTIONS, Verdicts(), ask=ask), queued


def test_a_poll_judges_running_gpu_jobs_and_queues_those_whose_verdict_changed() -> None:
    answer = [
        series("max", "1", pod="idle-0"),
        series("avg", "0.5", pod="idle-0"),
        series("max", "80", pod="busy-0"),
        series("avg", "60", pod="busy-0"),
        series("max", "0", pod="done-0"),
        series("avg", "0", pod="done-0"),
    ]
    watch, queued = watch_of(answer)
    assert watch.poll()
    assert watch.verdicts.verdict("u1") == Verdict(IDLE, 1, 0.5, 1.0)
    assert watch.verdicts.verdict("u2") == Verdict(BUSY, 1, 60.0, 80.0)
    assert watch.verdicts.verdict("u3") is None  # not Running: not judged
    assert sorted(queued) == ["team/busy", "team/idle"]
    queued.clear()
    assert watch.poll() and queued == []  # nothing changed: nothing queued


def test_a_failing_query_is_counted_and_keeps_the_verdicts() -> None:
    watch, queued = watch_of(PrometheusError("http://prometheus:9090/api/v1/query: refused"))
    kept = Judged("PyTorchTrainingJob", "pytorchtrainingjobs", "team", "idle", Verdict(IDLE, 1))
    watch.verdicts.replace({"u1": kept})
    errors = QUERIES.labels("error")._value.get()
    assert not watch.poll()
    assert QUERIES.labels("error")._value.get() == errors + 1
    assert watch.verdicts.verdict("u1") == Verdict(IDLE, 1) and queued == []


def test_a_pod_runs_since_its_latest_container_start() -> None:
    p = gpu_pod("a", "u")
    p["status"]["containerStatuses"].append(
        {"name": "d", "state": {"running": {"startedAt": "2026-01-01T11:30:00Z"}}}
    )
    assert running_since(p) == datetime(2026, 1, 1, 11, 30, tzinfo=UTC)
    p["status"]["containerStatuses"][1]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
    assert running_since(p) is None
