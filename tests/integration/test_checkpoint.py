"""Checkpoint before stopping, end to end: the replicas' pods, as the operator
creates them, run on the pod host (tests/integration/podhost) a training
script that reports with the reporter the operator ships, learns of the
operator's checkpoint request from its endpoint's answers (the callback of
``on_checkpoint``), writes its step and reports it (``checkpointed``). The
operator deletes the pods only then, and the new pods start with
``T9K_RESUME_STEP``. A script that ignores the request is stopped once
``graceSeconds`` have passed, not before and not much later.

What stands in for kubelet: the pod host runs each pod's processes; the
test writes the pod's status (tests/integration/kubelet.py) and, once the
operator has deleted a pod, stops its processes (kubelet's SIGTERM then
SIGKILL: the scripts here end either way). As in test_progress.py, the
Service's name reaches the operator running on this machine."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.kube import ApiError, KubeClient
from t9k_operator.resources import NODES
from t9k_operator.resources import PODS as POD_RESOURCE
from tests.integration.cluster import wait_for
from tests.integration.conftest import OPERATOR_NAMESPACE
from tests.integration.jobs import Jobs, finish, pytorch_job, settled
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess, free_port
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK, PodRun
from tests.integration.test_gang_jobs import bound, gpu_job
from tests.integration.test_gang_schedulers import gpus_in_use
from tests.integration.test_kueue_jobs import kueue_ready, make_queue  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
SERVICE = f"t9k-operator-progress.{OPERATOR_NAMESPACE}"

TRAIN = """\
import os, sys, threading, time
import report  # beside this script: its folder is on the module path

resume = os.environ.get("T9K_RESUME_STEP")
print(f"resume {resume}", flush=True)
asked = threading.Event()
report.on_checkpoint(asked.set)
ignore = os.environ.get("IGNORE_CHECKPOINT") == "1"
fail_at = int(os.environ.get("FAIL_AT", "0"))
step = int(resume or 0)
while True:
    if fail_at and step == fail_at:
        print("failing", flush=True)
        sys.exit(1)
    if asked.is_set() and not ignore:
        with open("/tmp/checkpoint", "w") as f:
            f.write(str(step))
        report.checkpointed(step)
        print(f"checkpointed {step}", flush=True)
        while True:
            time.sleep(1)  # stopped by the operator
    report.report(step=step, total_steps=100000)
    step += 1
    time.sleep(0.2)
"""

IMAGE = STOCK.derive(
    "checkpointing",
    files={
        "/opt/train/report.py": ((ROOT / "t9k_operator" / "report.py").read_text(), 0o644),
        "/opt/train/train.py": (TRAIN, 0o644),
    },
)
PODS = ["ck-master-0", "ck-worker-0"]


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def operator(start_operator: Callable[..., OperatorProcess], port: int) -> OperatorProcess:
    """The operator, its progress endpoint on every address of this machine."""
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


def job_body(grace: int, restart_scope: str | None = None) -> dict[str, Any]:
    policy = "OnFailure" if restart_scope else "Never"
    body = pytorch_job("ck", [("master", 1, policy), ("worker", 1, policy)])
    for rs in body["spec"]["replicaSpecs"]:
        rs["template"]["spec"]["containers"][0].update(
            command=["python3", "/opt/train/train.py"], args=[]
        )
    body["spec"]["runPolicy"] = {"checkpoint": {"graceSeconds": grace}}
    if restart_scope:
        body["spec"]["runPolicy"]["restartScope"] = restart_scope
    return body


class Replicas:
    """The job's pods running on the pod host, each incarnation once."""

    def __init__(
        self, jobs: Jobs, kubelet: Kubelet, node: Node, job: str = "ck", pods: list[str] = PODS
    ) -> None:
        self.jobs, self.kubelet, self.node = jobs, kubelet, node
        self.job, self.names = job, pods
        self.runs: dict[str, tuple[str, PodRun]] = {}  # pod name -> (uid, its run)

    def start(self, env: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, Any]]:
        """The job's current pods (new ones, once the old are gone and the new
        are bound to a node), started."""

        def fresh() -> dict[str, dict[str, Any]] | None:
            pods = self.jobs.pods(self.job)
            new = {
                n: p
                for n, p in pods.items()
                if not p["metadata"].get("deletionTimestamp")
                and p["spec"].get("nodeName")  # a kubelet runs only a pod bound to its node
                and self.runs.get(n, ("", None))[0] != p["metadata"]["uid"]
            }
            return new if set(new) == set(self.names) else None

        pods = wait_for(fresh, 60, "new pods for every replica")
        for name, pod in pods.items():
            run = self.node.run_pod(pod, IMAGE, env=(env or {}).get(name.split("-")[1], {}))
            self.runs[name] = (pod["metadata"]["uid"], run)
            self.kubelet.run(self.jobs.namespace, name)
        return pods

    def log(self, name: str) -> str:
        return self.runs[name][1].logs("pytorch")

    def stop_deleted(self) -> list[str]:
        """Stop the processes of the pods the operator has deleted (as kubelet
        would); the names stopped."""
        pods = self.jobs.all_pods(self.job)
        stopped = []
        for name, (uid, run) in list(self.runs.items()):
            pod = pods.get(name)
            if (
                pod is None
                or pod["metadata"]["uid"] != uid
                or pod["metadata"].get("deletionTimestamp")
            ):
                run.stop()
                stopped.append(name)
        return sorted(stopped)

    def close(self) -> None:
        for _, run in self.runs.values():
            run.stop()


@pytest.fixture
def replicas(admin: KubeClient, namespace: str, kubelet: Kubelet, node: Node) -> Iterator[Replicas]:
    r = Replicas(Jobs(admin, namespace), kubelet, node)
    yield r
    r.close()


def reporting(jobs: Jobs, at_least: int) -> None:
    wait_for(
        lambda: (jobs.status("ck").get("progress") or {}).get("step", -1) >= at_least,
        60,
        f"the replicas reporting step {at_least}",
    )


def checkpointed_steps(replicas: Replicas) -> dict[str, int]:
    """The step each replica's script wrote on the request, from its log."""
    out = {}
    for name in replicas.names:
        lines = [ln for ln in replicas.log(name).splitlines() if ln.startswith("checkpointed ")]
        if lines:
            out[name] = int(lines[-1].split()[1])
    return out


def resumed(replicas: Replicas, step: int) -> None:
    """Every new replica started from ``step``: its environment, and what its script read."""
    for name in replicas.names:
        env = {e["name"]: e.get("value") for e in replicas.jobs.pods(replicas.job)[name]["spec"]
               ["containers"][0].get("env") or []}  # fmt: skip
        assert env["T9K_RESUME_STEP"] == str(step), (name, env)
        wait_for(
            lambda n=name: f"resume {step}" in replicas.log(n),
            30,
            f"{name}'s script resuming from step {step}",
        )


def diagnosis(jobs: Jobs, replicas: Replicas, operator: OperatorProcess) -> str:
    """What the job and its replicas show, for a failure's message."""
    name = replicas.job
    pods = {
        n: (p["metadata"]["uid"], p["status"].get("phase"), p["metadata"].get("deletionTimestamp"))
        for n, p in jobs.all_pods(name).items()
    }
    logs = {n: replicas.log(n)[-400:] for n in replicas.runs}
    answers = {
        r: operator.metric("t9k_progress_reports_total", {"result": r})
        for r in ("accepted", "invalid", "forbidden", "unauthenticated", "rate_limited")
    }
    return (
        f"status: {jobs.status(name)}\nevents: {jobs.events(name)}\npods: {pods}\n"
        f"logs: {logs}\nanswers: {answers}"
    )


def test_a_pause_waits_for_the_checkpoint_and_the_resume_starts_from_it(
    operator: OperatorProcess, admin: KubeClient, namespace: str, replicas: Replicas
) -> None:
    jobs = Jobs(admin, namespace)
    jobs.create(job_body(grace=120))
    replicas.start()
    jobs.wait_phase("ck", "Running")
    reporting(jobs, 10)
    assert "T9K_RESUME_STEP" not in {
        e["name"] for e in jobs.pods("ck")["ck-master-0"]["spec"]["containers"][0]["env"]
    }

    jobs.patch_spec("ck", {"runMode": {"pause": {"enabled": True}}})
    started = time.monotonic()
    stopped = settled(
        jobs,
        "ck",
        "paused, its pods deleted after they checkpointed",
        lambda j: (
            j["status"]["phase"] == "Paused"
            and replicas.stop_deleted() == PODS
            and not jobs.all_pods("ck")
        ),
        operator=operator,
    )
    took = time.monotonic() - started
    steps = checkpointed_steps(replicas)
    assert set(steps) == set(PODS), {n: replicas.log(n) for n in PODS}
    saved = stopped["status"]["checkpoint"]
    assert saved["reason"] == "Paused" and saved["waited"] is True, saved
    assert saved["lastStep"] in steps.values() and saved["replica"] in PODS, (saved, steps)
    assert saved["requestedAt"] <= saved["lastStepTime"] <= saved["stoppedAt"], saved
    assert took < 60, f"paused {took:.0f} s after the request: the grace is 120 s"
    reasons = [r for _, r, _ in jobs.events("ck")]
    assert reasons.count("Checkpointing") == 1 and reasons.count("Checkpointed") == 1, reasons
    assert "CheckpointGracePassed" not in reasons

    jobs.patch_spec("ck", {"runMode": {"pause": {"enabled": False}}})
    replicas.start()
    resumed(replicas, saved["lastStep"])
    jobs.wait_phase("ck", "Running")
    assert jobs.status("ck")["restartCount"] == 0


def test_a_whole_job_restart_recreates_the_replicas_after_the_others_checkpointed(
    operator: OperatorProcess, admin: KubeClient, namespace: str, replicas: Replicas
) -> None:
    jobs = Jobs(admin, namespace)
    jobs.create(job_body(grace=120, restart_scope="Job"))
    replicas.start({"worker": {"FAIL_AT": "40"}})
    jobs.wait_phase("ck", "Running")
    worker = replicas.runs["ck-worker-0"][1]
    assert worker.wait("pytorch", 60) == 1
    replicas.kubelet.fail(namespace, "ck-worker-0", exit_code=1)

    try:
        stopped = settled(
            jobs,
            "ck",
            "the replicas deleted once the master checkpointed",
            lambda j: (
                (j["status"].get("checkpoint") or {}).get("stoppedAt")
                and replicas.stop_deleted() == PODS
            ),
            operator=operator,
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{diagnosis(jobs, replicas, operator)}") from None
    status = stopped["status"]
    saved = status["checkpoint"]
    steps = checkpointed_steps(replicas)
    assert list(steps) == ["ck-master-0"]  # the failed worker is not waited for
    assert (saved["reason"], saved["waited"]) == ("Restarting", True), saved
    assert (saved["lastStep"], saved["replica"]) == (steps["ck-master-0"], "ck-master-0")
    assert status["restartCount"] == 1, status
    (record,) = status["restarts"]
    assert (record["replica"], record["exitCode"], record["counted"]) == ("ck-worker-0", 1, True)

    replicas.start()
    resumed(replicas, saved["lastStep"])
    jobs.wait_phase("ck", "Running")
    assert jobs.status("ck")["restartCount"] == 1


def test_a_script_that_ignores_the_request_is_stopped_when_the_grace_has_passed(
    operator: OperatorProcess, admin: KubeClient, namespace: str, replicas: Replicas
) -> None:
    grace = 20
    jobs = Jobs(admin, namespace)
    jobs.create(job_body(grace=grace))
    replicas.start({"master": {"IGNORE_CHECKPOINT": "1"}, "worker": {"IGNORE_CHECKPOINT": "1"}})
    jobs.wait_phase("ck", "Running")
    reporting(jobs, 5)
    jobs.patch_spec("ck", {"runMode": {"pause": {"enabled": True}}})
    wait_for(
        lambda: (jobs.status("ck").get("checkpoint") or {}).get("requestedAt"),
        30,
        "the checkpoint request",
    )
    asked = time.monotonic()
    # Lower bound: every pod stays, untouched, while the grace lasts.
    while time.monotonic() < asked + grace - 2:
        pods = jobs.all_pods("ck")
        assert set(pods) == set(PODS), pods
        assert not any(p["metadata"].get("deletionTimestamp") for p in pods.values()), pods
        time.sleep(0.5)
    # Upper bound: deleted soon after it ends.
    wait_for(
        lambda: replicas.stop_deleted() == PODS,
        asked + grace + 15 - time.monotonic(),
        "the pods deleted within 15 s of the grace's end",
    )
    job = settled(
        jobs, "ck", "paused", lambda j: j["status"]["phase"] == "Paused", operator=operator
    )
    saved = job["status"]["checkpoint"]
    assert saved["waited"] is False and "lastStep" not in saved, saved

    def when(field: str) -> datetime:
        return datetime.fromisoformat(saved[field].replace("Z", "+00:00"))

    assert grace <= (when("stoppedAt") - when("requestedAt")).total_seconds() <= grace + 15, saved
    warnings = [m for t, r, m in jobs.events("ck") if r == "CheckpointGracePassed"]
    assert len(warnings) == 1 and "ck-master-0, ck-worker-0" in warnings[0], warnings
    assert checkpointed_steps(replicas) == {}


def test_a_cordoned_node_asks_for_a_checkpoint_and_the_evicted_replica_resumes_from_it(
    operator: OperatorProcess, admin: KubeClient, namespace: str, replicas: Replicas
) -> None:
    """A drain as ``kubectl drain`` makes it, its two steps apart: the worker's
    node cordoned (``spec.unschedulable``, as ``kubectl cordon`` patches it),
    then the pod evicted through the Eviction API (policy/v1, as ``kubectl
    drain`` posts it). The operator asks at the cordon and deletes nothing."""
    jobs = Jobs(admin, namespace)
    jobs.create(job_body(grace=120))
    replicas.start()
    jobs.wait_phase("ck", "Running")
    reporting(jobs, 10)
    pods = jobs.pods("ck")
    uids = {n: p["metadata"]["uid"] for n, p in pods.items()}
    drained = pods["ck-worker-0"]["spec"]["nodeName"]
    try:
        admin.patch(NODES, drained, {"spec": {"unschedulable": True}})
        try:
            asked = settled(
                jobs,
                "ck",
                "asked before the drain, every replica's checkpoint received",
                lambda j: (
                    (j["status"].get("checkpoint") or {}).get("reason") == "NodeCordoned"
                    and set(checkpointed_steps(replicas)) == set(PODS)
                    and (j["status"].get("checkpoint") or {}).get("lastStep")
                    in checkpointed_steps(replicas).values()
                ),
                operator=operator,
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{diagnosis(jobs, replicas, operator)}") from None
        saved = asked["status"]["checkpoint"]
        assert saved["requestedAt"] and "stoppedAt" not in saved, saved
        now = jobs.all_pods("ck")
        assert {n: p["metadata"]["uid"] for n, p in now.items()} == uids, "nothing deleted"
        assert not any(p["metadata"].get("deletionTimestamp") for p in now.values())
        (message,) = [m for _, r, m in jobs.events("ck") if r == "Checkpointing"]
        assert f"ck-worker-0 (node {drained} is cordoned)" in message, message
        step = saved["lastStep"]

        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "ck-worker-0", "namespace": namespace},
        }
        admin.request(
            "POST", POD_RESOURCE.path(namespace, "ck-worker-0", "eviction"), body=eviction
        )
        wait_for(lambda: "ck-worker-0" in replicas.stop_deleted(), 30, "the evicted worker stopped")
        replicas.names = ["ck-worker-0"]  # the master runs on, untouched
        new = replicas.start()
        assert new["ck-worker-0"]["spec"]["nodeName"] != drained
        resumed(replicas, step)
        assert jobs.pods("ck")["ck-master-0"]["metadata"]["uid"] == uids["ck-master-0"]

        # lastStep is the newest report by time: a replica's own checkpoint of a
        # lower step may land after the one read above; the one kept is this.
        kept = jobs.status("ck")["checkpoint"]["lastStep"]
        admin.patch(NODES, drained, {"spec": {"unschedulable": None}})
        done = settled(
            jobs,
            "ck",
            "uncordoned: the request dropped, the last step kept",
            lambda j: "requestedAt" not in (j["status"].get("checkpoint") or {}),
            operator=operator,
        )
        status = done["status"]
        assert status["checkpoint"]["lastStep"] == kept, status["checkpoint"]
        assert (status["restartCount"], status.get("disruptionCount")) == (0, 1), status
        (record,) = status["restarts"]
        assert (record["replica"], record["counted"]) == ("ck-worker-0", False), record
        assert record["reason"] == "EvictionByEvictionAPI", record
    finally:
        admin.patch(NODES, drained, {"spec": {"unschedulable": None}})


def test_grace_seconds_out_of_bounds_is_refused_at_admission(
    admin: KubeClient, namespace: str, crds_installed: None
) -> None:
    jobs = Jobs(admin, namespace)
    for grace in (0, 3601):
        with pytest.raises(ApiError, match="graceSeconds"):
            jobs.create(job_body(grace=grace))


# -- Kueue's preemption ----------------------------------------------------------------


@pytest.fixture
def preempting_queue(
    request: pytest.FixtureRequest, admin: KubeClient, namespace: str
) -> Iterator[str]:
    """test_kueue_jobs' queue that preempts lower priorities (Kueue running)."""
    request.getfixturevalue("kueue_ready")
    yield from make_queue(admin, namespace, preemption="LowerPriority")


def queued_job(name: str, queue: str, priority: int, grace: int | None = None) -> dict[str, Any]:
    """A PyTorchTrainingJob of two workers of 8 GPUs in ``queue``: two such jobs
    exceed the test's ClusterQueue (24 GPUs)."""
    body = gpu_job("PyTorchTrainingJob", name, manual=True, queue=queue, priority=priority, pods=2)
    container = body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container.update(command=["python3", "/opt/train/train.py"], args=[])
    if grace is not None:
        body["spec"]["runPolicy"] = {"checkpoint": {"graceSeconds": grace}}
    return body


@pytest.mark.xdist_group("add-ons")
def test_a_preempted_job_checkpoints_before_kueue_takes_its_quota_and_resumes_from_it(
    start_operator: Callable[..., OperatorProcess],
    port: int,
    preempting_queue: str,
    admin: KubeClient,
    namespace: str,
    kubelet: Kubelet,
    node: Node,
) -> None:
    wait_for(lambda: gpus_in_use(admin) == 0, 120, "the GPUs of earlier tests freed")
    operator = start_operator(
        "--kueue",
        "--progress-bind-address",
        f"0.0.0.0:{port}",
        "--progress-service-port",
        str(port),
    )
    operator.wait_ready()
    jobs = Jobs(admin, namespace)
    low = Replicas(jobs, kubelet, node, pods=["ck-worker-0", "ck-worker-1"])
    try:
        jobs.create(queued_job("ck", preempting_queue, priority=10, grace=120))
        low.start()
        jobs.wait_phase("ck", "Running", 60)
        reporting(jobs, 10)

        jobs.create(queued_job("high", preempting_queue, priority=90))
        try:
            stopped = settled(
                jobs,
                "ck",
                "evicted by Kueue, its pods deleted after they checkpointed",
                lambda j: (
                    (j["status"].get("checkpoint") or {}).get("stoppedAt")
                    and low.stop_deleted() == low.names
                    and j["status"]["phase"] == "Pending"
                ),
                operator=operator,
                timeout=90,
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{diagnosis(jobs, low, operator)}") from None
        saved = stopped["status"]["checkpoint"]
        steps = checkpointed_steps(low)
        assert set(steps) == set(low.names), steps
        assert (saved["reason"], saved["waited"]) == ("EvictedByKueue", True), saved
        assert saved["lastStep"] in steps.values(), (saved, steps)
        assert stopped["status"]["restartCount"] == 0

        # The quota goes to the high job; once it is done, the low one is
        # admitted again and resumes from its checkpoint.
        wait_for(lambda: bound(jobs, "high") == 2, 60, "high admitted and bound")
        finish(kubelet, jobs, "high")
        jobs.wait_phase("high", "Succeeded", 30)
        low.start()
        resumed(low, saved["lastStep"])
        jobs.wait_phase("ck", "Running", 60)
        assert jobs.status("ck")["restartCount"] == 0
    finally:
        low.close()
