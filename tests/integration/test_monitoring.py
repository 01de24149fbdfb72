"""The monitoring a platform team deploys, against a real Prometheus.

Two operator replicas (leader election) run a small set of jobs: two
succeed, one fails, one stays Pending (its pod cannot be scheduled), and one
cannot have its status written (a ValidatingAdmissionPolicy refuses it), so
its reconciles fail. Prometheus (Debian's package) scrapes both replicas as
the prometheus-operator scrapes the Service t9k-operator-metrics (job label
"t9k-operator-metrics", honorLabels) and loads manifests/monitoring/rules.yaml.
Then every dashboard query, with its template variables substituted, and
every alert expression is evaluated: each returns series of the expected
labels, and the figures the run makes.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.kube import ApiError, KubeClient
from t9k_operator.resources import Resource
from tests.integration.cluster import delete_quietly, in_background
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.operator_process import OperatorProcess
from tests.integration.prometheus import (
    DASHBOARD,
    JOB,
    RULES,
    Prometheus,
    Series,
    finite,
    tool,
    value,
)

FAST_ELECTION = (
    "--leader-elect-lease-duration=6",
    "--leader-elect-renew-deadline=4",
    "--leader-elect-retry-period=1",
)
KIND = "PyTorchTrainingJob"
POLICIES = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicies",
    "ValidatingAdmissionPolicy",
    namespaced=False,
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    namespaced=False,
)
DENY_LABEL = "t9k-test/deny-status"

# The one threshold a short run cannot reach: 30 minutes Pending. The test
# lowers it to 3 seconds and evaluates the rest of the expression as written.
STUCK_THRESHOLD = "> 1800"
STUCK_FOR_THE_TEST = "> 3"

# Series only a job whose training reported its progress has. In this run
# one job has progress: "stuck", given the status.progress a report would have
# left before it went back to Pending (tests/integration/test_progress.py
# sends real reports); the queries over them show that job alone, and the
# silent-job alert, for Running jobs only, stays quiet. rules_test.yaml
# covers the alert's threshold.
SILENT_THRESHOLD = "> 900"
PROGRESS_METRICS = (
    "t9k_job_progress_ratio",
    "t9k_job_progress_step",
    "t9k_job_seconds_since_progress_report",
)


def over_progress(expr: str) -> bool:
    return any(name in expr for name in PROGRESS_METRICS)


def test_promtool_checks_the_rules() -> None:
    proc = subprocess.run(
        [tool("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_rule_thresholds() -> None:
    """Each alert's threshold and `for`, on made-up series (tests/integration/rules_test.yaml):
    what a run of seconds cannot reach."""
    proc = subprocess.run(
        [tool("promtool"), "test", "rules", "rules_test.yaml"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout
    cases = yaml.safe_load((Path(__file__).parent / "rules_test.yaml").read_text())
    tested = {a["alertname"] for t in cases["tests"] for a in t.get("alert_rule_test", [])}
    assert tested == set(rules()), "every alert has its threshold tested"


def rules() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"] if "alert" in r}


def refused_status(admin: KubeClient, namespace: str) -> Iterator[None]:
    """A policy refusing status writes of the jobs labelled DENY_LABEL in ``namespace``."""
    name = f"t9k-test-deny-status-{namespace}"
    admin.create(
        POLICIES,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["batch.tensorstack.dev"],
                            "apiVersions": ["*"],
                            "operations": ["UPDATE"],
                            "resources": ["pytorchtrainingjobs/status"],
                        }
                    ]
                },
                "validations": [
                    {"expression": "false", "message": "status writes refused by a test"}
                ],
            },
        },
    )
    admin.create(
        BINDINGS,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": namespace}
                    },
                    "objectSelector": {"matchLabels": {DENY_LABEL: "true"}},
                },
            },
        },
    )
    try:
        yield
    finally:
        for resource in (BINDINGS, POLICIES):
            delete_quietly(admin, resource, name, None)


@pytest.fixture
def deny_status(admin: KubeClient, namespace: str) -> Iterator[None]:
    yield from refused_status(admin, namespace)


@pytest.fixture
def prometheus_dir(tmp_path: Path) -> Path:
    path = tmp_path / "prometheus"
    path.mkdir()
    return path


def legend_labels(target: dict[str, Any]) -> set[str]:
    return set(re.findall(r"\{\{\s*(\w+)\s*\}\}", str(target.get("legendFormat") or "")))


def substitute(expr: str, namespace: str) -> str:
    """The dashboard's variables as Grafana fills them in for one namespace and kind."""
    for var, val in (
        ("$__rate_interval", "1m"),
        ("$__range", "10m"),
        ("$namespace", namespace),
        ("$kind", KIND),
        ("$job", JOB),
    ):
        expr = expr.replace(var, val)
    assert "$" not in expr, f"a variable the test does not fill in: {expr}"
    return expr


def by(result: list[Series], *names: str) -> dict[tuple[str, ...], float]:
    return {tuple(s["metric"].get(n, "") for n in names): value(s) for s in result}


def json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def test_dashboard_queries_and_alerts_against_a_real_prometheus(
    start_operator: Callable[..., OperatorProcess],
    admin: KubeClient,
    namespace: str,
    deny_status: None,
    prometheus_dir: Path,
) -> None:
    lease = f"test-monitoring-{int(time.time())}"
    args = ("--leader-elect", f"--leader-election-id={lease}", *FAST_ELECTION)
    replicas = {"t9k-operator-a": start_operator(*args), "t9k-operator-b": start_operator(*args)}
    for proc in replicas.values():
        proc.wait_ready()
    prom = Prometheus(prometheus_dir, {pod: p.metrics_port for pod, p in replicas.items()})
    try:
        prom.wait_ready()
        run_and_check(prom, replicas, admin, namespace)
    finally:
        prom.stop()


def run_and_check(
    prom: Prometheus, replicas: dict[str, OperatorProcess], admin: KubeClient, namespace: str
) -> None:
    sel = f'job="{JOB}"'
    # Both replicas scraped; one leads and the standby says 0 (not nothing).
    leaders = prom.wait_query(
        f"count(leader_election_master_status{{{sel}}} == 0) == 1 "
        f"and count(leader_election_master_status{{{sel}}} == 1) == 1",
        30,
        "one leader and one standby exporting 0",
    )
    assert leaders
    status = by(prom.query(f"leader_election_master_status{{{sel}}}"), "pod")
    leader_pod = next(pod for pod, v in status.items() if v == 1)[0]
    standby_pod = next(pod for pod, v in status.items() if v == 0)[0]

    jobs = Jobs(admin, namespace)
    quick = {"kwok.t9k.dev/run-duration": "1s"}
    for name in ("ok-1", "ok-2"):
        jobs.create(pytorch_job(name, [("worker", 1, "Never")], manual=False, annotations=quick))
    jobs.create(
        pytorch_job(
            "bad",
            [("worker", 1, "Never")],
            manual=False,
            annotations={**quick, "kwok.t9k.dev/exit-code": "1"},
        )
    )
    stuck = pytorch_job("stuck", [("worker", 1, "Never")], manual=False)
    container = stuck["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "1000"}}  # no node has that much
    jobs.create(stuck)
    denied = pytorch_job("denied", [("worker", 1, "Never")], manual=False)
    denied["metadata"]["labels"] = {DENY_LABEL: "true"}
    jobs.create(denied)

    jobs.wait_phase("ok-1", "Succeeded", 60)
    jobs.wait_phase("ok-2", "Succeeded", 60)
    failed = jobs.wait_phase("bad", "Failed", 60)
    reason = next(c["reason"] for c in failed["conditions"] if c["type"] == "Failed")
    jobs.wait_phase("stuck", "Pending", 30)
    assert not jobs.status("denied"), "the policy should keep the job without status"
    reported = {
        "step": 420,
        "totalSteps": 1000,
        "replica": "stuck-worker-0",
        "lastReportTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 30)),
    }
    admin.patch(
        jobs.resource, "stuck", {"status": {"progress": reported}}, namespace, subresource="status"
    )

    # Prometheus has scraped the run's outcome, a few times over (rate() wants
    # two samples of a series born with the failure).
    ns_sel = f'{sel}, kind="{KIND}", namespace="{namespace}"'
    prom.wait_query(
        f'sum(t9k_jobs{{{ns_sel}, phase="Succeeded"}}) == 2 '
        f'and sum(t9k_jobs{{{ns_sel}, phase="Failed"}}) == 1',
        30,
        "t9k_jobs to show the finished jobs",
    )
    prom.wait_query(
        f"count_over_time(t9k_jobs_failed_total{{{ns_sel}}}[1m]) >= 3", 15, "three scrapes"
    )
    prom.wait_query(
        f'count_over_time(t9k_job_progress_step{{{ns_sel}, name="stuck"}}[1m]) >= 2',
        30,
        "the stuck job's progress, scraped twice",
    )

    # -- t9k_jobs: from the leader only, so a plain sum counts each job once -------
    phases = by(prom.query(f"sum by (phase) (t9k_jobs{{{ns_sel}}})"), "phase")
    assert phases[("Succeeded",)] == 2
    assert phases[("Failed",)] == 1
    assert phases[("Pending",)] == 2  # stuck, and denied (no status yet)
    assert phases[("Running",)] == 0
    exporters = by(prom.query(f"count by (pod) (t9k_jobs{{{sel}}})"), "pod")
    assert list(exporters) == [(leader_pod,)], f"only the leader exports t9k_jobs: {exporters}"

    check_dashboard(prom, namespace, reason)
    check_alerts_while_healthy(prom, namespace, reason, jobs)
    check_logs(replicas, leader_pod, namespace, reason)
    check_rules_loaded(prom)

    # -- the operator's own alerts, made to fire for real ------------------------------
    alerts = rules()
    no_leader = alerts["T9kOperatorNoLeader"]["expr"]
    down = alerts["T9kOperatorDown"]["expr"]
    assert prom.query(no_leader) == [] and prom.query(down) == []
    replicas[leader_pod].kill()  # no release: the standby waits for the lease to expire
    result = prom.wait_query(no_leader, 6, "T9kOperatorNoLeader while the lease runs out")
    assert [s["metric"] for s in result] == [{}] and value(result[0]) == 0
    prom.wait_query(
        f'leader_election_master_status{{{sel}, pod="{standby_pod}"}} == 1',
        20,
        "the standby to take over",
    )
    assert prom.query(no_leader) == []
    replicas[standby_pod].kill()
    result = prom.wait_query(down, 10, "T9kOperatorDown once no replica answers")
    assert [s["metric"] for s in result] == [{}]  # absent() of a comparison: no labels


def check_dashboard(prom: Prometheus, namespace: str, reason: str) -> None:
    board = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert set(variables) == {"datasource", "job", "namespace", "kind"}
    assert variables["job"]["current"]["value"] == JOB
    for name, want in (("namespace", namespace), ("kind", KIND)):
        definition = substitute(variables[name]["definition"], namespace)
        match = re.fullmatch(r"label_values\((.+), (\w+)\)", definition)
        assert match and match.group(2) == name, definition
        values = prom.api("label/" + name + "/values", **{"match[]": match.group(1)})
        assert want in values, f"${name} offers {values}"

    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len(panels) >= 12
    results: dict[str, list[list[Series]]] = {}
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expr = substitute(target["expr"], namespace)
            result = prom.query(expr)
            where = f"panel {panel['title']!r}, query {expr}"
            if over_progress(expr):
                names = {series["metric"].get("name") for series in result}
                assert names == {"stuck"}, f"{where}: only the stuck job reported, yet {result}"
                results.setdefault(panel["title"], []).append(result)
                continue
            assert finite(result), f"{where}: no data ({result})"
            for series in result:
                missing = legend_labels(target) - set(series["metric"])
                assert not missing, f"{where}: series {series['metric']} lacks {missing}"
            if not target.get("instant"):
                points = prom.query_range(expr, 60)
                # What Grafana asks a time series panel for: a range (this run
                # lasts seconds, so some series have a point or two).
                assert any(s["values"] for s in points), f"{where}: no range data"
            results.setdefault(panel["title"], []).append(result)

    phases = by(results["Jobs by phase"][0], "phase")
    assert phases[("Succeeded",)] == 2 and phases[("Failed",)] == 1
    now = by(results["Jobs now by kind, namespace and phase"][0], "phase")
    assert now == {("Succeeded",): 2, ("Failed",): 1, ("Pending",): 2}
    failures = by(results["Failures in the time range, by reason"][0], "namespace", "reason")
    assert failures == {(namespace, reason): 1}
    pending = by(results["Longest-Pending job"][0], "namespace")
    assert pending[(namespace,)] > 0
    up, leader = results["Replicas up and leading"]
    assert sorted(value(s) for s in up) == [1, 1]
    assert sorted(value(s) for s in leader) == [0, 1]
    durations = results["Job duration (p50, p90)"]
    assert all(value(s) > 0 for r in durations for s in finite(r))
    # Answered requests in the window (lease renewals at least, every few seconds).
    requests = by(results["API requests by method and code"][0], "method", "code")
    assert any(code.startswith("2") and rate > 0 for (_, code), rate in requests.items()), requests
    (ratio,) = results["Training progress"][0]
    assert value(ratio) == pytest.approx(0.42)
    silence = by(results["Seconds since the last progress report"][0], "phase")
    assert 30 <= silence[("Pending",)] < 600, silence
    waits = by(results["Waiting for the client's own rate limiter"][0], "client")
    assert ("t9k-operator",) in waits, waits


def check_alerts_while_healthy(prom: Prometheus, namespace: str, reason: str, jobs: Jobs) -> None:
    alerts = rules()
    assert set(alerts) == {
        "T9kOperatorDown",
        "T9kOperatorNoLeader",
        "T9kReconcileErrors",
        "T9kJobsFailing",
        "T9kJobStuckPending",
        "T9kJobSilent",
        "T9kJobGPUsIdle",  # against a real Prometheus in test_gpu_usage.py
    }
    # The one job with progress is Pending: not Running, so not silent, even
    # past a threshold of 0 (and a job that never reported never fires).
    silent = alerts["T9kJobSilent"]["expr"]
    assert over_progress(silent) and silent.count(SILENT_THRESHOLD) == 1, silent
    assert prom.query(silent.replace(SILENT_THRESHOLD, ">= 0")) == []
    failing = prom.wait_query(alerts["T9kJobsFailing"]["expr"], 15, "T9kJobsFailing")
    assert by(failing, "kind", "namespace", "reason") == {(KIND, namespace, reason): 1}
    # As Prometheus itself evaluates the rule: it fires (it has no `for`).
    prom.wait_query(
        f'ALERTS{{alertname="T9kJobsFailing", alertstate="firing", namespace="{namespace}"}}',
        15,
        "T9kJobsFailing to fire in Prometheus's rule evaluation",
    )

    expr = alerts["T9kJobStuckPending"]["expr"]
    assert expr.count(STUCK_THRESHOLD) == 1, expr
    stuck = prom.wait_query(
        expr.replace(STUCK_THRESHOLD, STUCK_FOR_THE_TEST), 15, "T9kJobStuckPending (3 s)"
    )
    assert set(by(stuck, "kind", "namespace")) == {(KIND, namespace)}
    assert prom.query(expr) == []  # not yet at the real threshold

    # The refused job's reconciles fail with a growing backoff, so on their own
    # its errors thin out while the window's other reconciles stay; a real
    # broken webhook meets steady traffic. Touching the job every half second
    # while the rule is evaluated gives it that: each touch is a reconcile that
    # fails, so the rate of errors stays over a tenth of all reconciles.
    stop = threading.Event()

    def touch() -> None:
        while not stop.wait(0.5):
            with contextlib.suppress(ApiError):
                jobs.client.patch(
                    jobs.resource,
                    "denied",
                    {"metadata": {"annotations": {"t9k.test/touch": str(time.monotonic_ns())}}},
                    jobs.namespace,
                )

    with in_background(touch, stop.set):
        errors = prom.wait_query(
            alerts["T9kReconcileErrors"]["expr"], 60, "T9kReconcileErrors (the refused job)"
        )
    assert set(by(errors, "controller")) == {("pytorchtrainingjob",)}
    assert all(s["metric"].keys() == {"controller"} for s in errors)


def check_logs(
    replicas: dict[str, OperatorProcess], leader_pod: str, namespace: str, reason: str
) -> None:
    leader = replicas[leader_pod]
    lines = json_lines(leader.log_path.read_text(errors="replace"))
    ours = [entry for entry in lines if str(entry.get("key", "")).startswith(f"{namespace}/")]
    assert ours, leader.logs()
    assert all(entry.get("reconcile_id") for entry in ours), [
        e for e in ours if not e.get("reconcile_id")
    ][:3]
    failed = [
        e for e in lines if e.get("event") == "job failed" and e.get("namespace") == namespace
    ]
    assert len(failed) == 1, failed
    assert failed[0]["name"] == "bad" and failed[0]["reason"] == reason
    assert failed[0]["reconcile_id"] and failed[0]["message"]
    refused = [
        e
        for e in lines
        if e.get("event") == "reconcile failed" and e.get("key") == f"{namespace}/denied"
    ]
    assert refused and all(e["reconcile_id"] for e in refused)
    assert len({e["reconcile_id"] for e in refused}) == len(refused)  # one id per reconcile


def check_rules_loaded(prom: Prometheus) -> None:
    groups = prom.api("rules")["groups"]
    loaded = {r["name"]: r for g in groups for r in g["rules"]}
    assert set(loaded) == set(rules())
    for name, rule in loaded.items():
        assert rule["health"] == "ok", f"{name}: {rule.get('lastError')}"
