"""Progress reports for real: the replicas' pods, as the operator creates them,
run on the pod host (tests/integration/podhost) with real projected
ServiceAccount tokens from the local API server; the training script calls
the reporter the operator ships (copied next to it, as docs/progress.md
says), which finds the operator's HTTPS endpoint through the environment the
operator put into the pod, by the Service's name. The operator checks each
token with a real TokenReview, under the RBAC we ship, and keeps its
certificate in the Secret it creates.

What stands in for the cluster: the Service's name reaches the operator,
which runs on this machine (the pod host's Service stand-in), on the port
the operator listens on (there is no kube-proxy to map 443 to it)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.kube import KubeClient
from t9k_operator.resources import SECRETS
from t9k_operator.runtime.tls import SecretSource
from tests.integration.cluster import Cluster, wait_for
from tests.integration.conftest import OPERATOR_NAMESPACE
from tests.integration.jobs import Jobs, pytorch_job, settled
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess, free_port
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK, PodRun

ROOT = Path(__file__).resolve().parents[2]
SERVICE = f"t9k-operator-progress.{OPERATOR_NAMESPACE}"

TRAIN = """\
import os, time
from report import report  # beside this script: its folder is on the module path

total = 100000
silent_after = int(os.environ.get("SILENT_AFTER", "0"))
resume = os.environ.get("RESUME_FILE")
for step in range(total):
    if silent_after and step == silent_after:
        print("going silent", flush=True)
        while resume and not os.path.exists(resume):
            time.sleep(0.1)  # silent until the test says
        if resume:
            report(step=step, total_steps=total)
            print("reported again", flush=True)
        time.sleep(100000)  # hung in a collective: alive, and silent
    report(step=step, total_steps=total, epoch=step // 1000, metrics={"loss": 1.0 / (step + 1)})
    time.sleep(0.2)
"""

# What a process in the pod sends, for the refusal checks: one POST with the
# pod's own environment, a token and a URL of the test's choosing (the token
# "@own" is the pod's progress token, "@<path>" the one in the pod's file).
POST = """\
import json, os, ssl, sys, urllib.error, urllib.request
url, token = sys.argv[1], sys.argv[2]
if token == "@own":
    token = open(os.environ["T9K_PROGRESS_TOKEN_FILE"]).read().strip()
elif token.startswith("@"):
    token = open(token[1:]).read().strip()
ctx = ssl.create_default_context(cafile=os.environ["T9K_PROGRESS_CA_FILE"])
codes = []
for _ in range(int(sys.argv[3])):
    req = urllib.request.Request(url, data=b'{"step": 1}', method="POST",
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5, context=ctx) as r:
            codes.append(r.status)
    except urllib.error.HTTPError as e:
        codes.append(e.code)
print(json.dumps(codes))
"""

IMAGE = STOCK.derive(
    "reporting",
    files={
        "/opt/train/report.py": ((ROOT / "t9k_operator" / "report.py").read_text(), 0o644),
        "/opt/train/train.py": (TRAIN, 0o644),
        "/opt/train/post.py": (POST, 0o644),
    },
)


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def progress_operator(start_operator: Callable[..., OperatorProcess], port: int) -> OperatorProcess:
    """The operator, its endpoint on every address of this machine (the pods'
    Service stand-in reaches it there), the replicas told the Service's port."""
    proc = start_operator(
        "--progress-bind-address", f"0.0.0.0:{port}", "--progress-service-port", str(port)
    )
    proc.wait_ready()
    return proc


@pytest.fixture
def node(tmp_path: Path, admin: KubeClient, namespace: str) -> Iterator[Node]:
    n = Node(tmp_path / "node", namespace, client=admin, host_services=[SERVICE])
    yield n
    n.close()


def job_body(name: str, workers: int = 1, **policy: Any) -> dict[str, Any]:
    body = pytorch_job(name, [("master", 1, "Never"), ("worker", workers, "Never")])
    for rs in body["spec"]["replicaSpecs"]:
        rs["template"]["spec"]["containers"][0].update(
            command=["python3", "/opt/train/train.py"], args=[]
        )
    if policy:
        body["spec"]["runPolicy"] = {"progress": policy}
    return body


def start(
    jobs: Jobs,
    kubelet: Kubelet,
    node: Node,
    name: str,
    pods: list[str],
    worker_env: dict[str, str] | None = None,
) -> dict[str, PodRun]:
    """The job's pods, as the operator made them, running on the pod host; the
    workers go silent after 15 steps (with ``RESUME_FILE`` in ``worker_env``,
    they report once more when that file appears, then go silent for good)."""
    created = jobs.wait_pods(name, pods)
    runs = {}
    for pod_name in pods:
        pod = created[pod_name]
        env = {"SILENT_AFTER": "15", **(worker_env or {})} if "worker" in pod_name else {}
        runs[pod_name] = node.run_pod(pod, IMAGE, env=env)
        kubelet.run(jobs.namespace, pod_name)
    jobs.wait_phase(name, "Running")
    return runs


def post(run: PodRun, url: str, token: str, times: int = 1) -> list[int]:
    out = run.exec("pytorch", ["python3", "/opt/train/post.py", url, token, str(times)], timeout=60)
    assert out.returncode == 0, out.stderr
    codes: list[int] = json.loads(out.stdout)
    return codes


def counted(operator: OperatorProcess, result: str, reason: str | None = None) -> float:
    """The endpoint's answers counted with ``result`` (and ``reason``; else
    of every reason)."""
    _, text = operator.get("/metrics", operator.metrics_port)
    total = 0.0
    for line in text.splitlines():
        if not line.startswith("t9k_progress_reports_total{"):
            continue
        key, _, value = line.rpartition(" ")
        labels = dict(
            part.split("=", 1) for part in key.partition("{")[2].rstrip("}").split(",") if part
        )
        if labels.get("result") == f'"{result}"' and reason in (
            None,
            labels.get("reason", '""')[1:-1],
        ):
            total += float(value)
    return total


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    container = pod["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def test_reports_reach_the_status_and_a_silent_replica_hangs_the_job(
    progress_operator: OperatorProcess,
    admin: KubeClient,
    kubelet: Kubelet,
    node: Node,
    namespace: str,
    cluster: Cluster,
    port: int,
) -> None:
    jobs = Jobs(admin, namespace)
    jobs.create(job_body("train", hangTimeoutSeconds=60, onHang="Fail"))
    runs = start(jobs, kubelet, node, "train", ["train-master-0", "train-worker-0"])

    # Every replica was told where and how to report, and the operator keeps its
    # certificate in a Secret of its namespace.
    pod = jobs.pods("train")["train-master-0"]
    env = env_of(pod)
    assert env["T9K_PROGRESS_URL"] == (
        f"https://{SERVICE}.svc:{port}/v1/namespaces/{namespace}/pytorchtrainingjobs/train/progress"
    )
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "t9k-progress"]
    token = volume["projected"]["sources"][0]["serviceAccountToken"]
    assert token["audience"] == "t9k-operator-progress"
    secret = admin.get(SECRETS, "t9k-operator-progress-tls", OPERATOR_NAMESPACE)
    assert {"ca.crt", "ca.key", "tls.crt", "tls.key"} <= set(secret["data"])

    # The reports reach the job's status, and kubectl's columns.
    def progressing() -> dict[str, Any] | None:
        progress = jobs.status("train").get("progress") or {}
        return progress if progress.get("step", 0) >= 10 and "eta" in progress else None

    progress = wait_for(progressing, 60, "progress in the job's status")
    assert progress["totalSteps"] == 100000
    assert progress["replica"] in ("train-master-0", "train-worker-0")
    assert progress["metrics"]["loss"] > 0
    assert progress["stepsPerSecond"] > 0
    header, row = cluster.kubectl("get", "ptj", "train", "-n", namespace).stdout.splitlines()
    assert "PROGRESS" in header.split() and "ETA" in header.split()
    assert "/100000 (" in row

    # The worker went silent after 15 steps: within the 60 s window after its
    # last report, the job fails as hung, naming it.
    runs["train-worker-0"].logs("pytorch")  # still running: alive and silent
    silent_since = time.monotonic()
    status = jobs.wait_phase("train", "Failed", timeout=100)
    waited = time.monotonic() - silent_since
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "Hung"
    hung = jobs.condition("train", "Hung")
    assert hung is not None and hung["status"] == "True"
    assert "train-worker-0" in hung["message"]
    assert waited <= 60 + 20, f"judged hung {waited:.0f} s after the worker went silent"
    accepted = progress_operator.metric("t9k_progress_reports_total", {"result": "accepted"})
    assert (accepted or 0) > 10


def test_forged_foreign_and_flooding_reports_are_refused_and_counted(
    progress_operator: OperatorProcess,
    admin: KubeClient,
    kubelet: Kubelet,
    node: Node,
    namespace: str,
) -> None:
    jobs = Jobs(admin, namespace)
    jobs.create(job_body("a"))
    jobs.create(job_body("b"))
    runs_a = start(jobs, kubelet, node, "a", ["a-master-0", "a-worker-0"])
    runs_b = start(jobs, kubelet, node, "b", ["b-master-0", "b-worker-0"])
    a = runs_a["a-master-0"]
    url_a = env_of(jobs.pods("a")["a-master-0"])["T9K_PROGRESS_URL"]
    url_b = env_of(jobs.pods("b")["b-master-0"])["T9K_PROGRESS_URL"]

    def count(result: str) -> float:
        return counted(progress_operator, result)

    before = {r: count(r) for r in ("unauthenticated", "forbidden", "rate_limited")}
    assert post(a, url_a, "@own") == [202]
    assert post(a, url_a, "eyJhbGciOiJSUzI1NiJ9.e30.forged") == [401]  # a forged token
    assert post(runs_b["b-master-0"], url_a, "@own") == [403]  # another job's pod's token
    assert post(a, url_b, "@own") == [403]  # a report for another job
    assert count("unauthenticated") == before["unauthenticated"] + 1
    assert count("forbidden") == before["forbidden"] + 2

    # A flood from one pod: refused beyond the job's rate, and the job's status
    # written at most once per few seconds for it.
    writes: list[str] = []
    rv = str(jobs.get("a")["metadata"]["resourceVersion"])

    def watch() -> None:
        stream = admin.watch(jobs.resource, namespace, resource_version=rv, timeout_seconds=20)
        for event in stream:
            obj = event["object"]
            if event["type"] == "MODIFIED" and obj["metadata"]["name"] == "a":
                writes.append(obj["metadata"]["resourceVersion"])

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    codes = post(a, url_a, "@own", times=300)
    watcher.join(30)
    assert 429 in codes and 202 in codes
    assert count("rate_limited") > before["rate_limited"]
    # 20 s watched: at most one write per 5 s interval (and the first at once).
    assert len(writes) <= 20 / 5 + 1, f"{len(writes)} writes of the job in 20 s"
    # Still the job's own: the flood changed who may report nothing.
    assert post(a, url_b, "@own") == [403]


def test_a_silent_replica_restarts_the_job_within_its_window_across_an_operator_restart(
    start_operator: Callable[..., OperatorProcess],
    admin: KubeClient,
    kubelet: Kubelet,
    node: Node,
    namespace: str,
    port: int,
) -> None:
    """onHang Restart, end to end, with the operator restarted while the worker is
    silent: the new operator judges the worker from its next report (it keeps
    reports in memory, docs/progress.md), not earlier, and restarts the job
    once the window after that report has passed, not much later."""
    args = ("--progress-bind-address", f"0.0.0.0:{port}", "--progress-service-port", str(port))
    first = start_operator(*args)
    first.wait_ready()
    jobs = Jobs(admin, namespace)
    jobs.create(job_body("hang", hangTimeoutSeconds=60, onHang="Restart"))
    names = ["hang-master-0", "hang-worker-0"]
    resume = "/tmp/resume"
    runs = start(jobs, kubelet, node, "hang", names, worker_env={"RESUME_FILE": resume})
    worker = runs["hang-worker-0"]
    wait_for(lambda: "going silent" in worker.logs("pytorch"), 60, "the worker silent")
    silent_since = time.monotonic()
    old = {n: p["metadata"]["uid"] for n, p in jobs.pods("hang").items()}

    first.kill()
    second = start_operator(*args)
    second.wait_ready()
    wait_for(
        lambda: (second.metric("t9k_progress_reports_total", {"result": "accepted"}) or 0) > 0,
        30,
        "the master's reports taken by the new operator",
    )
    # Long enough silent before the restart that a window counted from the
    # worker's last report before it would end well before the one after.
    time.sleep(max(0.0, silent_since + 20 - time.monotonic()))
    resumed_at = time.monotonic()  # the worker's next report is received after this
    out = worker.exec("pytorch", ["python3", "-c", f"open({resume!r}, 'w').close()"])
    assert out.returncode == 0, out.stderr
    wait_for(lambda: "reported again" in worker.logs("pytorch"), 10, "the worker's one report")

    # Lower bound: not hung while the window after that report lasts.
    window = 60
    while time.monotonic() < resumed_at + window - 1:
        status = jobs.status("hang")
        hung = jobs.condition("hang", "Hung")
        assert status["restartCount"] == 0 and not (hung and hung["status"] == "True"), (
            f"judged hung {time.monotonic() - resumed_at:.0f} s after the worker's report: {status}"
        )
        assert status["phase"] == "Running", status
        time.sleep(1)
    # Upper bound: restarted soon after it ends.
    wait_for(
        lambda: jobs.status("hang")["restartCount"] == 1,
        resumed_at + window + 20 - time.monotonic(),
        "the hung job restarted within 20 s of its window's end",
    )
    hung = jobs.condition("hang", "Hung")
    assert hung is not None and hung["status"] == "True" and hung["reason"] == "Hung", hung
    assert "hang-worker-0" in hung["message"] and "restart 1 of" in hung["message"], hung

    # One attempt: every replica recreated, counted once, and the new pods (which
    # have not reported) are never judged.
    job = settled(
        jobs,
        "hang",
        "every replica recreated",
        lambda _: (
            (pods := jobs.pods("hang")).keys() == old.keys()
            and all(p["metadata"]["uid"] != old[n] for n, p in pods.items())
        ),
        operator=second,
    )
    status = job["status"]
    assert status["restartCount"] == 1 and status["phase"] != "Failed", status
    (record,) = status["restarts"]
    assert (record["replica"], record["reason"], record["counted"]) == (
        "hang-worker-0",
        "Hung",
        True,
    )
    assert [r for t, r, _ in jobs.events("hang") if t == "Warning"].count("Hung") == 1


def test_a_certificate_secret_in_a_missing_namespace_is_said_so(admin: KubeClient) -> None:
    # The API server refuses the Secret's create with 404 (its namespace does
    # not exist): not a Secret that keeps changing, nothing to retry.
    source = SecretSource(admin, "t9k-no-such-namespace", "cert", ["t9k-operator-progress"])
    with pytest.raises(RuntimeError, match="namespace t9k-no-such-namespace does not exist"):
        source.load()
