"""The job-start bench's pure helpers for its ``--kueue`` and ``--gang`` runs,
its count of the operator's reads, its ``--py-spy`` summary and its
comparisons (hack/bench/job_start/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hack.bench.common.metrics import count_requests, informer_requests
from hack.bench.job_start.apiserver import closed_watchers, writes
from hack.bench.job_start.compare import comparisons, targets
from hack.bench.job_start.integrations import (
    CPU_MILLIS,
    FLAVOR_LABELS,
    LOCAL_QUEUE,
    PRIORITY,
    SCHEDULER,
    Integrations,
    job_body,
)
from hack.bench.job_start.kubeflow import job_body as kubeflow_job
from hack.bench.job_start.kubeflow import running as kubeflow_running
from hack.bench.job_start.plan import DEFAULT_PLAN, scenario_plan
from hack.bench.job_start.prepare import kueue_queues, manifest_object, nodes_to_add
from hack.bench.job_start.pyspy import profile_top
from hack.bench.job_start.run import Run

ROOT = Path(__file__).resolve().parents[2]


METRICS = """\
# HELP rest_client_requests_total Requests this process sent to the API server.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 41.0
rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 2.0
rest_client_requests_total{code="<error>",host="127.0.0.1:6443",method="GET"} 1.0
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 800.0
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PUT"} 400.0
# HELP rest_client_requests_created Requests this process sent to the API server.
# TYPE rest_client_requests_created gauge
rest_client_requests_created{code="200",host="127.0.0.1:6443",method="GET"} 1.7e+09
"""


def test_reads_are_every_get_of_any_code() -> None:
    assert count_requests(METRICS) == 44
    assert count_requests(METRICS, ("POST", "PUT")) == 1200


def test_the_informers_requests_every_resource_and_verb() -> None:
    metrics = METRICS + (
        "# TYPE t9k_informer_requests_total counter\n"
        't9k_informer_requests_total{resource="pods",verb="list"} 2.0\n'
        't9k_informer_requests_total{resource="pods",verb="watch"} 3.0\n'
        't9k_informer_requests_total{resource="leases",verb="watch"} 1.0\n'
        't9k_informer_requests_created{resource="pods",verb="list"} 1.7e+09\n'
    )
    assert informer_requests(metrics) == 6
    # The reconciles' reads: every GET less the informers' own.
    assert count_requests(metrics) - informer_requests(metrics) == 38
    assert informer_requests(METRICS) is None


def test_no_request_counter_is_none_not_zero() -> None:
    assert count_requests("process_cpu_seconds_total 1.5\n") is None
    only_writes = 'rest_client_requests_total{code="201",host="h",method="POST"} 3.0\n'
    assert count_requests(only_writes) == 0


def test_integrations_flags() -> None:
    plain = Integrations()
    assert (plain.cluster_flags(), plain.operator_flags(), str(plain)) == ((), (), "none")
    assert plain.scheduler() == SCHEDULER
    both = Integrations(kueue=True, gang="volcano")
    assert both.cluster_flags() == ("--gang", "volcano", "--kueue")
    assert both.operator_flags() == ("--kueue", "--gang-scheduler=volcano")
    assert both.scheduler() == "volcano"
    assert Integrations(gang="coscheduling").scheduler() == "scheduler-plugins-scheduler"


def test_a_kueue_job_names_the_queue_a_priority_and_a_request() -> None:
    job = job_body("job-0", 4, Integrations(kueue=True))
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": LOCAL_QUEUE}
    assert job["spec"]["scheduler"] == {
        "t9kScheduler": {"queue": LOCAL_QUEUE, "priority": PRIORITY}
    }
    (container,) = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": f"{CPU_MILLIS}m"}}
    # Without Kueue (a gang scheduler alone too) the job is the plain one.
    plain = job_body("job-0", 4)
    assert job_body("job-0", 4, Integrations(gang="volcano")) == plain
    assert "labels" not in plain["metadata"] and "scheduler" not in plain["spec"]


def test_the_queues_hold_every_pod_at_once_on_a_flavor_with_node_labels() -> None:
    (flavor_r, flavor), (cq_r, cq), (lq_r, lq) = kueue_queues(800)
    assert (flavor_r.kind, cq_r.kind, lq_r.kind) == ("ResourceFlavor", "ClusterQueue", "LocalQueue")
    assert flavor["spec"]["nodeLabels"] == FLAVOR_LABELS
    (group,) = cq["spec"]["resourceGroups"]
    assert group["flavors"] == [
        {
            "name": flavor["metadata"]["name"],
            "resources": [{"name": "cpu", "nominalQuota": "80000m"}],
        }
    ]
    assert lq["spec"] == {"clusterQueue": cq["metadata"]["name"]}
    assert lq["metadata"]["name"] == LOCAL_QUEUE


def test_the_priority_classes_come_from_the_manifests() -> None:
    name = f"t9k-priority-{PRIORITY}"
    wpc = manifest_object(ROOT / "manifests/kueue/workload-priority-classes.yaml", name)
    assert (wpc["kind"], wpc["value"]) == ("WorkloadPriorityClass", PRIORITY)
    pc = manifest_object(ROOT / "manifests/scheduling/priority-classes.yaml", name)
    assert (pc["kind"], pc["value"]) == ("PriorityClass", PRIORITY)


def test_integrations_run_only_with_the_operator() -> None:
    kueue = Integrations(kueue=True)
    sizes = ["200x4", "1000x4"]
    assert scenario_plan(sizes, None, kueue) == {
        "200x4": ("defaults", "tuned"),
        "1000x4": ("defaults", "tuned"),
    }
    assert scenario_plan(sizes, ["tuned"], kueue) == {
        "200x4": ("tuned",),
        "1000x4": ("tuned",),
    }
    with pytest.raises(ValueError, match="ceiling, baseline"):
        scenario_plan(sizes, ["ceiling", "tuned", "baseline"], kueue)
    with pytest.raises(ValueError, match="writes"):
        scenario_plan(sizes, ["writes"], Integrations(gang="coscheduling"))
    assert scenario_plan(["200x4"], None, Integrations()) == {
        "200x4": ("ceiling", "writes", "defaults", "tuned", "baseline")
    }
    assert scenario_plan(["200x4"], ["defaults", "kubeflow"], Integrations()) == {
        "200x4": ("defaults", "kubeflow")
    }
    with pytest.raises(ValueError, match="unknown scenario"):
        scenario_plan(sizes, ["fastest"], Integrations())


def test_nodes_for_a_gang_run() -> None:
    assert nodes_to_add(800, 4) == 6  # 1,000 pods' room: 10 nodes of 110
    assert nodes_to_add(40, 4) == 0


def test_closed_watchers_by_resource() -> None:
    metrics = (
        "# HELP apiserver_terminated_watchers_total [ALPHA] Counter of watchers closed.\n"
        'apiserver_terminated_watchers_total{group="",resource="pods"} 9\n'
        'apiserver_terminated_watchers_total{group="batch.tensorstack.dev",'
        'resource="pytorchtrainingjobs"} 1\n'
        'apiserver_watch_events_total{group="",resource="pods",version="v1"} 5000\n'
    )
    assert closed_watchers(metrics) == {"pods": 9, "pytorchtrainingjobs": 1}
    assert not closed_watchers("")  # none closed yet: the counter has no series


def test_the_servers_writes_by_verb_resource_and_subresource() -> None:
    metrics = (
        'apiserver_request_total{code="201",resource="pods",subresource="",verb="POST"} 5\n'
        'apiserver_request_total{code="200",resource="pods",subresource="",verb="GET"} 9\n'
        'apiserver_request_total{code="200",resource="pods",subresource="status",verb="PATCH"} 2\n'
        'apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="POST"} 0.5\n'
        'apiserver_request_duration_seconds_sum{resource="pods",subresource="",verb="GET"} 7.0\n'
    )
    counted, seconds = writes(metrics)  # the text given: no scrape
    assert dict(counted) == {("POST", "pods", ""): 5, ("PATCH", "pods", "status"): 2}
    assert seconds == {("POST", "pods", ""): 0.5}


def test_the_default_plan_runs_10000_jobs_at_the_operators_defaults() -> None:
    plan = scenario_plan(list(DEFAULT_PLAN), None, Integrations())
    assert plan["10000x4"] == ("defaults",)
    assert "defaults" in plan["1000x4"] and "defaults" in plan["200x4"]


def test_py_spy_stacks_give_self_and_cumulative_shares(tmp_path: Path) -> None:
    raw = tmp_path / "stacks"
    raw.write_text(
        "thread (0x1);run (a.py:1);work (b.py:2);loads (json.py:3) 6\n"
        "thread (0x1);run (a.py:1);work (b.py:7) 3\n"
        "thread (0x2);run (a.py:1);other (c.py:4);work (b.py:2) 1\n"
        "garbage line\n"
    )
    top, total = profile_top(raw, n=3)
    assert total == 10
    # Lines of one function are merged; the thread's own frame is no code.
    assert top["self"] == [
        ("loads (json.py)", 0.6, 0.6),
        ("work (b.py)", 0.4, 1.0),
        ("other (c.py)", 0.0, 0.1),
    ]
    assert top["cumulative"] == [
        ("run (a.py)", 0.0, 1.0),
        ("work (b.py)", 0.4, 1.0),
        ("loads (json.py)", 0.6, 0.6),
    ]


def test_comparisons_are_ratios_within_the_run() -> None:
    def run(scenario: str, pods: float, cpu: float, writes: int, rss: float | None) -> object:
        return Run(
            "200x4",
            scenario,
            pods_s=pods,
            running_s=pods + 1,
            cpu_s=cpu,
            budget_writes=writes,
            jobs=200,
            rss_peak_mib=rss,
        )

    by = {
        ("200x4", "defaults"): run("defaults", 6.0, 2.0, 1400, 90.0),
        ("200x4", "baseline"): run("baseline", 24.0, 4.0, 1600, 80.0),
        ("200x4", "ceiling"): run("ceiling", 2.0, 0.0, 800, None),
    }
    table = comparisons(by)
    assert "| 200x4 | defaults / baseline | 0.25 | 0.28 | 0.50 | 0.88 | 1.12 |" in table
    assert "tuned" not in table  # no tuned run: no comparison with it
    lines = targets(by)
    assert "200x4 CPU per job, defaults / baseline: 10.0 / 20.0 ms = 0.50 (target <= 0.75)" in lines


def test_a_run_of_10000_jobs_reports_its_rss_against_the_limit() -> None:
    r = Run("10000x4", "defaults", cpu_s=120.0, jobs=10_000, rss_ready_mib=80.0, rss_peak_mib=400.0)
    (line,) = [x for x in targets({("10000x4", "defaults"): r}) if "RSS" in x]
    assert line == (
        "10000x4 defaults: RSS at ready 84 MB, peak 419 MB (target < 450 MB), CPU 12.0 ms per job"
    )


def test_the_kubeflow_scenario_runs_a_master_and_workers_running_by_condition() -> None:
    job = kubeflow_job("job-7", 4)
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert {k: v["replicas"] for k, v in specs.items()} == {"Master": 1, "Worker": 3}
    for spec in specs.values():
        assert spec["template"]["spec"]["schedulerName"] == SCHEDULER
        assert spec["template"]["metadata"]["annotations"] == {"kwok.t9k.dev/manual": "true"}
    assert list(kubeflow_job("one", 1)["spec"]["pytorchReplicaSpecs"]) == ["Master"]
    created = {"type": "Created", "status": "True"}
    assert not kubeflow_running({"status": {"conditions": [created]}})
    assert not kubeflow_running(
        {"status": {"conditions": [{"type": "Running", "status": "False"}]}}
    )
    assert kubeflow_running(
        {"status": {"conditions": [created, {"type": "Running", "status": "True"}]}}
    )
    assert not kubeflow_running({})
