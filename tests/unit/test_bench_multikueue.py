"""The MultiKueue bench's figures from what a run noted (hack/bench/multikueue/figures.py)."""

from __future__ import annotations

import math

import pytest

from hack.bench.multikueue.figures import (
    STAGES,
    busy_rate,
    latencies,
    peak_rate,
    remote_requests,
    spread,
    stages,
    throttled,
    throughput,
)


def test_throughput_runs_from_the_start_to_the_last_end() -> None:
    assert throughput(10.0, [12.0, 30.0, 20.0]) == pytest.approx(3 / 20)
    assert throughput(10.0, []) is None


def test_latencies_and_their_spread_count_only_the_jobs_that_got_there() -> None:
    created = {f"j{i}": float(i) for i in range(20)}
    reached = {f"j{i}": i + 1.0 + i / 10 for i in range(19)}  # j19 never did
    got = latencies(created, reached)
    assert len(got) == 19 and got["j0"] == pytest.approx(1.0)
    s = spread(got.values())
    assert s.n == 19
    assert (s.p50, s.p95, s.longest) == pytest.approx((1.9, 2.8, 2.8))
    assert str(spread([])) == "-" and math.isnan(spread([]).p50)


def test_each_stage_steps_from_the_one_before() -> None:
    times = {
        "created": {"a": 100.0, "b": 101.0},
        "workload": {"a": 100.5, "b": 101.5},
        "reserved": {"a": 101.0},
    }
    got = {s.name: s for s in stages(times)}
    assert [s.name for s in stages(times)] == [name for name, _ in STAGES]
    assert got["workload"].reached == 2 and got["workload"].last_s == pytest.approx(1.5)
    assert got["reserved"].step.p50 == pytest.approx(0.5)
    assert got["running"].reached == 0 and got["running"].last_s is None


def test_remote_requests_are_multikueues_verbs_without_a_subresource() -> None:
    text = "\n".join(
        [
            'apiserver_request_total{code="200",resource="workloads",subresource="",verb="GET"} 7',
            'apiserver_request_total{code="404",resource="workloads",subresource="",verb="GET"} 2',
            'apiserver_request_total{code="201",resource="pytorchtrainingjobs",verb="POST"} 3',
            # the worker's own writers: status, the operator's adoption, list/watch
            'apiserver_request_total{code="200",resource="workloads",subresource="status",'
            'verb="PUT"} 50',
            'apiserver_request_total{code="200",resource="workloads",subresource="",verb="PUT"} 4',
            'apiserver_request_total{code="200",resource="workloads",subresource="",verb="LIST"} 1',
            'apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 9',
        ]
    )
    got = remote_requests(text)
    assert got == {("GET", "workloads"): 9, ("POST", "pytorchtrainingjobs"): 3}


def test_rates_of_a_sampled_counter() -> None:
    series = [(0.0, 0), (10.0, 50), (20.0, 100), (30.0, 120), (40.0, 120)]
    assert busy_rate(series) == pytest.approx(120 / 30)
    assert peak_rate(series, 20.0) == pytest.approx(5.0)
    assert peak_rate(series, 60.0) is None
    assert busy_rate([(0.0, 0), (5.0, 0)]) is None


def test_throttling_lines_of_client_go_in_either_form() -> None:
    lines = [
        'I1206 23:10:00.1 1 request.go:752] "Waited before sending request" delay="1.5s" '
        'reason="client-side throttling, not priority and fairness" verb="GET" '
        'URL="https://127.0.0.1:39603/apis/kueue.x-k8s.io/v1beta2/namespaces/bench/workloads/w1"',
        '{"level":"info","msg":"Waited before sending request","delay":"1200ms","reason":'
        '"client-side throttling, not priority and fairness","verb":"POST","URL":'
        '"https://127.0.0.1:1/apis/batch.tensorstack.dev/v1beta1/namespaces/bench/'
        'pytorchtrainingjobs"}',
        "I0314 request.go:665] Waited for 2.03s due to client-side throttling, not priority "
        "and fairness, request: DELETE:https://h:6443/api/v1/nodes/n1?timeout=32s",
        '{"msg":"an unrelated line","delay":"3s"}',
    ]
    got = throttled(lines)
    assert [(t.waited_s, t.verb, t.host, t.resource) for t in got] == [
        (1.5, "GET", "127.0.0.1:39603", "workloads"),
        (pytest.approx(1.2), "POST", "127.0.0.1:1", "pytorchtrainingjobs"),
        (pytest.approx(2.03), "DELETE", "h:6443", "nodes"),
    ]
