"""PyTorchTrainingJob end to end: the operator (as its ServiceAccount) runs jobs
on the local cluster while the test drives pods like a kubelet would."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from t9k_operator.kube import KubeClient
from t9k_operator.resources import SERVICES
from tests.integration.cluster import wait_for
from tests.integration.crd_helpers import DOC_FRAGMENTS, refused_for_nameless_container
from tests.integration.jobs import Jobs, in_phase, pytorch_job, run_all, settled, with_containers
from tests.integration.kubelet import Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.unit.api.test_pytorch_models import SPEC_EXAMPLES

pytestmark = pytest.mark.usefixtures("operator")


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env", [])}


def test_seed_basic_job_runs_to_success_on_kwok(jobs: Jobs) -> None:
    body = pytorch_job(
        "pytorch-example",
        [("worker", 4, "OnFailure")],
        manual=False,
        annotations={"kwok.t9k.dev/run-duration": "2s"},
    )
    jobs.create(body)
    jobs.wait_phase("pytorch-example", "Succeeded", 40)
    # The master's success ends the job; the other replicas' ends keep being
    # reported in the finished job's status.
    status = wait_for(
        lambda: (s := jobs.status("pytorch-example"))["aggregate"]["succeeded"] == 4 and s,
        20,
        "all four replicas reported Succeeded",
    )
    assert status["completionTime"] and status["startTime"]
    assert jobs.condition("pytorch-example", "Completed")["status"] == "True"  # type: ignore[index]
    assert jobs.condition("pytorch-example", "Initialized")["status"] == "True"  # type: ignore[index]
    assert [t["type"] for t in status["tasks"]] == ["worker"]
    replicas = status["tasks"][0]["replicas"]
    assert [r["name"] for r in replicas] == [f"pytorch-example-worker-{i}" for i in range(4)]
    assert replicas[0]["containers"][0] == {
        "name": "pytorch",
        "state": "Terminated",
        "exitCode": 0,
        "reason": "Completed",
    }
    pods = jobs.pods("pytorch-example")
    env = env_of(pods["pytorch-example-worker-3"])
    assert env["MASTER_ADDR"] == "pytorch-example-worker-0.pytorch-example"
    assert (env["RANK"], env["WORLD_SIZE"], env["MASTER_PORT"]) == ("3", "4", "23456")
    svc = jobs.client.get(SERVICES, "pytorch-example", jobs.namespace)
    assert svc["spec"]["clusterIP"] == "None"
    reasons = [e[1] for e in jobs.events("pytorch-example")]
    assert "Created" in reasons and "Succeeded" in reasons


def test_on_failure_recreates_the_pod_and_counts_the_restart(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(pytorch_job("onf", [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")]))
    pods = jobs.wait_pods("onf", ["onf-master-0", "onf-worker-0"])
    run_all(kubelet, jobs, "onf", list(pods))
    old = pods["onf-worker-0"]["metadata"]["uid"]
    node = jobs.pods("onf")["onf-worker-0"]["spec"]["nodeName"]  # bound by now: it ran
    kubelet.fail(jobs.namespace, "onf-worker-0", exit_code=1)
    jobs.wait_new_pod("onf", "onf-worker-0", old)
    wait_for(lambda: jobs.status("onf").get("restartCount") == 1, 10, "restartCount 1")
    event = jobs.wait_event("onf", "Restarting")
    assert "exit code 1" in event[2]
    tasks = {t["type"]: t["restartCount"] for t in jobs.status("onf")["tasks"]}
    assert tasks == {"master": 0, "worker": 1}
    kubelet.run(jobs.namespace, "onf-worker-0")
    kubelet.succeed(jobs.namespace, "onf-master-0")
    done = jobs.wait_phase("onf", "Succeeded")
    # The record of the restart outlives the job's run.
    (record,) = done["restarts"]
    assert {k: record[k] for k in ("replica", "exitCode", "counted")} == {
        "replica": "onf-worker-0",
        "exitCode": 1,
        "counted": True,
    }
    assert record["node"] == node


def test_restart_scope_job_recreates_every_replica_as_one_counted_attempt(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    body = pytorch_job("whole", [("master", 1, "OnFailure"), ("worker", 2, "OnFailure")])
    body["spec"]["runPolicy"] = {"restartScope": "Job"}
    jobs.create(body)
    names = ["whole-master-0", "whole-worker-0", "whole-worker-1"]
    pods = jobs.wait_pods("whole", names)
    run_all(kubelet, jobs, "whole", names)
    kubelet.fail(jobs.namespace, "whole-worker-1", exit_code=1)
    for name in names:  # every replica, not only the one that failed
        jobs.wait_new_pod("whole", name, pods[name]["metadata"]["uid"], 30)
    status = jobs.status("whole")
    assert status["restartCount"] == 1
    _, _, message = jobs.wait_event("whole", "Restarting")
    assert "with every other replica of the job (restartScope Job)" in message
    run_all(kubelet, jobs, "whole", names)


def test_never_fails_the_job_at_once_with_the_reason(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(pytorch_job("nev", [("master", 1, "Never"), ("worker", 2, "Never")]))
    pods = jobs.wait_pods("nev", ["nev-master-0", "nev-worker-0", "nev-worker-1"])
    run_all(kubelet, jobs, "nev", list(pods))
    kubelet.fail(jobs.namespace, "nev-worker-1", exit_code=3)
    status = jobs.wait_phase("nev", "Failed")
    failed = jobs.condition("nev", "Failed")
    assert failed is not None and failed["reason"] == "ReplicaFailed"
    assert "nev-worker-1" in failed["message"] and "exit code 3" in failed["message"]
    assert status["restartCount"] == 0
    assert (
        jobs.pods("nev")["nev-worker-1"]["metadata"]["uid"]
        == (pods["nev-worker-1"]["metadata"]["uid"])
    )


def test_a_sidecar_still_running_does_not_hold_a_failed_replica(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    # The training container exits 1 while a log shipper beside it runs on:
    # kubelet keeps the pod Running, and the replica is still restarted.
    body = with_containers(
        pytorch_job(
            "sc",
            [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")],
            runPolicy={"cleanUpPolicy": "All"},
        ),
        ["pytorch", "log-shipper"],
    )
    jobs.create(body)
    pods = jobs.wait_pods("sc", ["sc-master-0", "sc-worker-0"])
    run_all(kubelet, jobs, "sc", list(pods))
    pod = kubelet.fail(jobs.namespace, "sc-worker-0", exit_code=1, running=["log-shipper"])
    assert pod["status"]["phase"] == "Running"
    jobs.wait_new_pod("sc", "sc-worker-0", pods["sc-worker-0"]["metadata"]["uid"])
    wait_for(lambda: jobs.status("sc").get("restartCount") == 1, 10, "restartCount 1")
    assert "exit code 1" in jobs.wait_event("sc", "Restarting")[2]
    # The master's training succeeds with its sidecar still running: the job
    # has succeeded, not held open by the pod kubelet still calls Running.
    kubelet.run(jobs.namespace, "sc-worker-0")
    pod = kubelet.succeed(jobs.namespace, "sc-master-0", running=["log-shipper"])
    assert pod["status"]["phase"] == "Running"
    jobs.wait_phase("sc", "Succeeded")
    # cleanUpPolicy All: the pods still running, sidecars and all, are deleted.
    wait_for(lambda: not jobs.pods("sc"), 20, "the finished job's pods deleted")
    # The one failure counted once: its pod, its sidecar still running, was not
    # counted again when it ended, nor were the pods the cleanup stopped.
    status = settled(jobs, "sc", "phase Succeeded", in_phase("Succeeded"), operator=operator)
    assert status["status"]["restartCount"] == 1
    assert [e[1] for e in jobs.events("sc")].count("Restarting") == 1


def test_the_training_containers_exit_code_decides_whatever_the_status_order(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    # No container has the conventional name: the builders launch training in
    # the template's first, "trainer"; kubelet lists "aaa-log" first (by name).
    body = with_containers(pytorch_job("co", [("worker", 2, "ExitCode")]), ["trainer", "aaa-log"])
    jobs.create(body)
    pods = jobs.wait_pods("co", ["co-worker-0", "co-worker-1"])
    assert "RANK" in {e["name"] for e in pods["co-worker-1"]["spec"]["containers"][0]["env"]}
    run_all(kubelet, jobs, "co", list(pods))
    pod = kubelet.fail(jobs.namespace, "co-worker-1", exit_code=137, container="trainer")
    assert [c["name"] for c in pod["status"]["containerStatuses"]] == ["aaa-log", "trainer"]
    jobs.wait_new_pod("co", "co-worker-1", pods["co-worker-1"]["metadata"]["uid"])
    assert "exit code 137" in jobs.wait_event("co", "Restarting")[2]
    assert jobs.status("co")["restartCount"] == 1
    assert jobs.status("co")["phase"] != "Failed"


def test_a_native_sidecar_is_neither_the_training_container_nor_keeps_it_alive(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    body = with_containers(pytorch_job("ns", [("worker", 1, "Never")]), ["trainer"], ["aaa-proxy"])
    jobs.create(body)
    pods = jobs.wait_pods("ns", ["ns-worker-0"])
    run_all(kubelet, jobs, "ns", list(pods))
    pod = kubelet.fail(jobs.namespace, "ns-worker-0", exit_code=3)
    assert pod["status"]["initContainerStatuses"][0]["name"] == "aaa-proxy"
    jobs.wait_phase("ns", "Failed")
    failed = jobs.condition("ns", "Failed")
    assert failed is not None and "exit code 3" in failed["message"]


@pytest.mark.parametrize(("code", "restarts"), [(137, True), (143, True), (1, False)])
def test_exit_code_policy(jobs: Jobs, kubelet: Kubelet, code: int, restarts: bool) -> None:
    jobs.create(pytorch_job("ec", [("node", 2, "ExitCode")]))
    pods = jobs.wait_pods("ec", ["ec-node-0", "ec-node-1"])
    run_all(kubelet, jobs, "ec", list(pods))
    kubelet.fail(jobs.namespace, "ec-node-1", exit_code=code)
    if restarts:
        jobs.wait_new_pod("ec", "ec-node-1", pods["ec-node-1"]["metadata"]["uid"])
        assert jobs.status("ec")["restartCount"] == 1
    else:
        jobs.wait_phase("ec", "Failed")


def test_always_restarts_an_ended_worker(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(pytorch_job("alw", [("master", 1, "Never"), ("worker", 1, "Always")]))
    pods = jobs.wait_pods("alw", ["alw-master-0", "alw-worker-0"])
    run_all(kubelet, jobs, "alw", list(pods))
    kubelet.succeed(jobs.namespace, "alw-worker-0")
    jobs.wait_new_pod("alw", "alw-worker-0", pods["alw-worker-0"]["metadata"]["uid"])
    kubelet.succeed(jobs.namespace, "alw-master-0")
    jobs.wait_phase("alw", "Succeeded")


def test_backoff_limit_is_shared_across_types(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(
        pytorch_job(
            "bo",
            [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")],
            runPolicy={"backoffLimit": 1},
        )
    )
    pods = jobs.wait_pods("bo", ["bo-master-0", "bo-worker-0"])
    run_all(kubelet, jobs, "bo", list(pods))
    kubelet.fail(jobs.namespace, "bo-worker-0", exit_code=1)
    new = jobs.wait_new_pod("bo", "bo-worker-0", pods["bo-worker-0"]["metadata"]["uid"])
    kubelet.run(jobs.namespace, new["metadata"]["name"])
    kubelet.fail(jobs.namespace, "bo-master-0", exit_code=1)
    jobs.wait_phase("bo", "Failed")
    failed = jobs.condition("bo", "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert jobs.status("bo")["restartCount"] == 1


def test_active_deadline_fails_the_job_on_time(jobs: Jobs, kubelet: Kubelet) -> None:
    policy = {"activeDeadlineSeconds": 3, "cleanUpPolicy": "All"}
    jobs.create(pytorch_job("dl", [("worker", 1, "OnFailure")], runPolicy=policy))
    pods = jobs.wait_pods("dl", ["dl-worker-0"])
    run_all(kubelet, jobs, "dl", list(pods))
    jobs.wait_phase("dl", "Failed", 15)
    failed = jobs.condition("dl", "Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    wait_for(lambda: not jobs.pods("dl"), 10, "cleanup All after the deadline")


@pytest.mark.parametrize(
    ("policy", "left"),
    [("None", {"cu-master-0", "cu-worker-0"}), ("All", set()), ("Unfinished", {"cu-master-0"})],
)
def test_cleanup_policy_after_success(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess, policy: str, left: set[str]
) -> None:
    jobs.create(
        pytorch_job(
            "cu",
            [("master", 1, "Never"), ("worker", 1, "Never")],
            runPolicy={"cleanUpPolicy": policy},
        )
    )
    pods = jobs.wait_pods("cu", ["cu-master-0", "cu-worker-0"])
    run_all(kubelet, jobs, "cu", list(pods))
    kubelet.succeed(jobs.namespace, "cu-master-0")
    jobs.wait_phase("cu", "Succeeded")
    # The cleanup pass has run and the pods it deleted are gone: what is left stays.
    settled(jobs, "cu", "phase Succeeded", in_phase("Succeeded"), operator=operator)
    assert set(jobs.pods("cu")) == left


@pytest.mark.parametrize(
    ("policy", "left"),
    [("None", {"cf-master-0", "cf-worker-0"}), ("All", set()), ("Unfinished", {"cf-worker-0"})],
)
def test_cleanup_policy_after_failure(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess, policy: str, left: set[str]
) -> None:
    jobs.create(
        pytorch_job(
            "cf",
            [("master", 1, "Never"), ("worker", 1, "Never")],
            runPolicy={"cleanUpPolicy": policy},
        )
    )
    pods = jobs.wait_pods("cf", ["cf-master-0", "cf-worker-0"])
    run_all(kubelet, jobs, "cf", list(pods))
    kubelet.fail(jobs.namespace, "cf-worker-0", exit_code=2)
    jobs.wait_phase("cf", "Failed")
    settled(jobs, "cf", "phase Failed", in_phase("Failed"), operator=operator)
    assert set(jobs.pods("cf")) == left


def test_pause_then_resume_with_resume_specs(jobs: Jobs, kubelet: Kubelet) -> None:
    resume = [
        {"type": "worker", "skipInitContainer": True, "command": ["python"], "args": ["resume.py"]}
    ]
    body = pytorch_job(
        "pz",
        [("worker", 2, "OnFailure")],
        runMode={"pause": {"enabled": False, "resumeSpecs": resume}},
    )
    body["spec"]["replicaSpecs"][0]["template"]["spec"]["initContainers"] = [
        {"name": "fetch", "image": "busybox"}
    ]
    jobs.create(body)
    pods = jobs.wait_pods("pz", ["pz-worker-0", "pz-worker-1"])
    assert "initContainers" in pods["pz-worker-0"]["spec"]
    run_all(kubelet, jobs, "pz", list(pods))
    jobs.patch_spec("pz", {"runMode": {"pause": {"enabled": True}}})
    jobs.wait_phase("pz", "Paused")
    wait_for(lambda: not jobs.pods("pz"), 10, "pods deleted while paused")
    assert jobs.condition("pz", "Paused")["status"] == "True"  # type: ignore[index]
    jobs.patch_spec("pz", {"runMode": {"pause": {"enabled": False}}})
    back = jobs.wait_pods("pz", ["pz-worker-0", "pz-worker-1"])
    assert jobs.status("pz")["phase"] == "Resuming"
    c = back["pz-worker-1"]["spec"]["containers"][0]
    assert (c["command"], c["args"]) == (["python"], ["resume.py"])
    assert "initContainers" not in back["pz-worker-1"]["spec"]
    run_all(kubelet, jobs, "pz", list(back))
    reasons = [e[1] for e in jobs.events("pz")]
    assert "Paused" in reasons and "Resumed" in reasons


def test_debug_mode_runs_the_debug_command_and_never_ends(jobs: Jobs, kubelet: Kubelet) -> None:
    debug = {"enabled": True, "replicaSpecs": [{"type": "worker", "command": ["/usr/bin/sshd"]}]}
    jobs.create(
        pytorch_job(
            "dbg", [("master", 1, "Never"), ("worker", 1, "Never")], runMode={"debug": debug}
        )
    )
    pods = jobs.wait_pods("dbg", ["dbg-master-0", "dbg-worker-0"])
    assert pods["dbg-master-0"]["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    assert pods["dbg-worker-0"]["spec"]["containers"][0]["command"] == ["/usr/bin/sshd"]
    run_all(kubelet, jobs, "dbg", list(pods))
    kubelet.succeed(jobs.namespace, "dbg-master-0")
    kubelet.fail(jobs.namespace, "dbg-worker-0", exit_code=1)
    wait_for(lambda: jobs.status("dbg")["aggregate"]["failed"] == 1, 10, "the failure seen")
    assert jobs.status("dbg")["phase"] == "Running"
    assert set(jobs.pods("dbg")) == {"dbg-master-0", "dbg-worker-0"}


def test_torchrun_args_and_elastic_scaling(jobs: Jobs, cluster: Any) -> None:
    jobs.create(
        pytorch_job(
            "tr",
            [("node", 2, "ExitCode")],
            torchrunConfig={
                "enabled": True,
                "maxRestarts": 3,
                "procPerNode": "gpu",
                "rdzvBackend": "c10d",
                "extraOptions": ["--monitor-interval=1"],
            },
            elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2},
        )
    )
    pods = jobs.wait_pods("tr", ["tr-node-0", "tr-node-1"])
    c = pods["tr-node-1"]["spec"]["containers"][0]
    uid = jobs.get("tr")["metadata"]["uid"]
    assert c["command"] == [
        "torchrun",
        "--nnodes=1:4",
        "--nproc-per-node=gpu",
        "--max-restarts=3",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=tr-node-0.tr:29400",
        f"--rdzv-id={uid}",
        "--monitor-interval=1",
        "train.py",
    ]
    cluster.kubectl("scale", "pytj/tr", "--replicas=4", "-n", jobs.namespace)
    jobs.wait_pods("tr", [f"tr-node-{i}" for i in range(4)])
    jobs.patch_spec("tr", {"elastic": {"expectedReplicas": 1}})
    jobs.wait_pods("tr", ["tr-node-0"])


def test_deleting_the_job_deletes_its_children(jobs: Jobs) -> None:
    jobs.create(pytorch_job("del", [("worker", 2, "OnFailure")]))
    jobs.wait_pods("del", ["del-worker-0", "del-worker-1"])
    wait_for(lambda: _has_service(jobs, "del"), 10, "the Service")
    jobs.client.delete(jobs.resource, "del", jobs.namespace, propagation="Foreground")
    wait_for(
        lambda: not jobs.pods("del") and not _has_service(jobs, "del"),
        30,
        "children garbage-collected",
    )
    wait_for(lambda: jobs.gone("del"), 30, "the job gone")


def _has_service(jobs: Jobs, name: str) -> bool:
    items, _ = jobs.client.list_all(SERVICES, jobs.namespace)
    return any(s["metadata"]["name"] == name for s in items)


def test_operator_killed_mid_job_duplicates_nothing_and_keeps_the_count(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess, restart_operator: Any
) -> None:
    jobs.create(pytorch_job("crash", [("worker", 2, "OnFailure")]))
    pods = jobs.wait_pods("crash", ["crash-worker-0", "crash-worker-1"])
    run_all(kubelet, jobs, "crash", list(pods))
    kubelet.fail(jobs.namespace, "crash-worker-1", exit_code=137)
    jobs.wait_new_pod("crash", "crash-worker-1", pods["crash-worker-1"]["metadata"]["uid"])
    operator.kill()
    new_op = restart_operator()
    new_op.wait_ready()
    kubelet.run(jobs.namespace, "crash-worker-1")
    jobs.wait_phase("crash", "Running")
    assert jobs.status("crash")["restartCount"] == 1
    assert sorted(jobs.pods("crash")) == ["crash-worker-0", "crash-worker-1"]


# Examples whose containers the doc leaves without a name and an image.
INCOMPLETE_EXAMPLES = {"env", "resources"}


@pytest.mark.parametrize("example", sorted(SPEC_EXAMPLES))
def test_every_seed_example_runs(jobs: Jobs, example: str) -> None:
    """Each example of the product doc, applied as the doc writes it (fragments
    completed minimally), is run by the operator to where it should get."""
    body = yaml.safe_load(SPEC_EXAMPLES[example])
    if example in DOC_FRAGMENTS:
        body = refused_for_nameless_container(jobs.create, body)
    jobs.create(body)
    name = body["metadata"]["name"]
    mode = body["spec"].get("runMode") or {}
    if example in INCOMPLETE_EXAMPLES:
        # The doc shows only part of the container (no name, no image): the
        # API server stores the job, and the operator fails it naming the field.
        jobs.wait_phase(name, "Failed", 30)
        failed = jobs.condition(name, "Failed")
        assert failed is not None and failed["reason"] == "InvalidSpec"
        assert "spec.containers[0].image: Required value" in failed["message"]
    elif (mode.get("pause") or {}).get("enabled"):
        jobs.wait_phase(name, "Paused", 30)
        assert not jobs.pods(name)
    elif (mode.get("debug") or {}).get("enabled"):
        jobs.wait_phase(name, "Running", 30)
    else:
        jobs.wait_phase(name, "Succeeded", 60)


def test_a_template_the_pod_api_refuses_fails_the_job_naming_it(jobs: Jobs) -> None:
    body = pytorch_job("bad", [("worker", 1, "OnFailure")])
    body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["image"] = ""
    jobs.create(body)
    jobs.wait_phase("bad", "Failed")
    failed = jobs.condition("bad", "Failed")
    assert failed is not None and failed["reason"] == "InvalidSpec"
    assert "replica worker-0" in failed["message"] and "image" in failed["message"]
    assert jobs.wait_event("bad", "InvalidSpec")[0] == "Warning"
