"""MSJob end to end on the local cluster, the operator as its ServiceAccount."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from t9k_operator.api import msjob
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import PODS, SERVICES
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs, in_phase, settled
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.unit.api.test_msjob_models import SPEC_EXAMPLES

pytestmark = pytest.mark.usefixtures("operator")

MSJOB = resource_of(msjob.CRD)


def role(replicas: int, policy: str = "Never", port: int | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "mindspore",
        "image": "mindspore:2.3",
        "env": [{"name": "GLOG_v", "value": "1"}],
    }
    if port:
        container["ports"] = [{"name": "msjob-port", "containerPort": port}]
    return {
        "replicas": replicas,
        "restartPolicy": policy,
        "template": {
            "metadata": {"annotations": dict(MANUAL)},
            "spec": {"containers": [container]},
        },
    }


def msjob(name: str, roles: dict[str, dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mindspore.gitee.com/v1",
        "kind": "MSJob",
        "metadata": {"name": name},
        "spec": {"msReplicaSpecs": roles, **spec},
    }


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, MSJOB)


def env(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0]["env"]
    }


def kf_condition(jobs: Jobs, name: str, type_: str) -> str | None:
    for c in jobs.status(name).get("conditions") or []:
        if c["type"] == type_:
            return str(c["status"])
    return None


def test_selectors_written_for_the_mindspore_operator_still_match(jobs: Jobs) -> None:
    jobs.create(msjob("sel", {"Scheduler": role(1), "Worker": role(2)}))
    jobs.wait_pods("sel", ["sel-scheduler-0", "sel-worker-0", "sel-worker-1"])
    for selector, want in (
        ("replica-type=worker,job-name=sel", ["sel-worker-0", "sel-worker-1"]),
        (
            "training.kubeflow.org/replica-type=worker,training.kubeflow.org/replica-index=1,"
            "training.kubeflow.org/job-name=sel",
            ["sel-worker-1"],
        ),
        (
            "group-name=mindspore.gitee.com,replica-type=scheduler,replica-index=0",
            ["sel-scheduler-0"],
        ),
    ):
        items, _ = jobs.client.list_all(PODS, jobs.namespace, label_selector=selector)
        assert sorted(p["metadata"]["name"] for p in items) == want, selector


@pytest.mark.parametrize("port", [None, 3333])
def test_env_of_every_role_and_the_scheduler_first(jobs: Jobs, port: int | None) -> None:
    jobs.create(msjob("ms", {"Scheduler": role(1, port=port), "PS": role(1), "Worker": role(2)}))
    pods = jobs.wait_pods("ms", ["ms-scheduler-0", "ms-ps-0", "ms-worker-0", "ms-worker-1"])
    expected_port = str(port or 2222)
    svc = jobs.client.get(SERVICES, "ms-scheduler", jobs.namespace)
    ip = svc["spec"]["clusterIP"]
    assert svc["spec"]["ports"][0]["port"] == int(expected_port)
    sched = env(pods["ms-scheduler-0"])
    assert sched["MS_ROLE"] == "MS_SCHED"
    assert sched["MS_SCHED_HOST"] == {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}
    assert (sched["MS_SCHED_PORT"], sched["MS_WORKER_NUM"], sched["MS_SERVER_NUM"]) == (
        expected_port,
        "2",
        "1",
    )
    assert sched["MS_NODE_ID"] == "ms-scheduler-0" and sched["GLOG_v"] == "1"
    for pod, ms_role in (("ms-ps-0", "MS_PSERVER"), ("ms-worker-1", "MS_WORKER")):
        e = env(pods[pod])
        assert e["MS_ROLE"] == ms_role
        assert (e["MS_SCHED_HOST"], e["MS_SCHED_PORT"]) == (ip, expected_port)
        assert (e["MS_WORKER_NUM"], e["MS_SERVER_NUM"], e["MS_NODE_ID"]) == ("2", "1", pod)
    created = {p: pods[p]["metadata"]["creationTimestamp"] for p in pods}
    assert created["ms-scheduler-0"] <= min(created.values())


@pytest.mark.parametrize(
    ("policy", "finish", "phase"),
    [
        ("", ["ms-worker-0"], "Succeeded"),
        ("AllWorkers", ["ms-worker-0"], None),
        ("AllWorkers", ["ms-worker-0", "ms-worker-1"], "Succeeded"),
    ],
)
def test_success_policies(
    jobs: Jobs, kubelet: Kubelet, policy: str, finish: list[str], phase: str | None
) -> None:
    jobs.create(msjob("ms", {"Scheduler": role(1), "Worker": role(2)}, successPolicy=policy))
    pods = jobs.wait_pods("ms", ["ms-scheduler-0", "ms-worker-0", "ms-worker-1"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    jobs.wait_phase("ms", "Running")
    for p in finish:
        kubelet.succeed(jobs.namespace, p)
    if phase is None:
        wait_for(
            lambda: jobs.status("ms")["replicaStatuses"]["Worker"]["succeeded"] == 1,
            10,
            "the worker's success counted",
        )
        assert jobs.status("ms")["phase"] == "Running"
    else:
        jobs.wait_phase("ms", phase)
        assert kf_condition(jobs, "ms", "Succeeded") == "True"
        assert kf_condition(jobs, "ms", "Created") == "True"


def test_a_ps_failure_fails_the_job(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(msjob("ms", {"Scheduler": role(1), "PS": role(1), "Worker": role(1)}))
    pods = jobs.wait_pods("ms", ["ms-scheduler-0", "ms-ps-0", "ms-worker-0"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    kubelet.fail(jobs.namespace, "ms-ps-0", exit_code=1)
    jobs.wait_phase("ms", "Failed")
    assert kf_condition(jobs, "ms", "Failed") == "True"
    assert jobs.status("ms")["replicaStatuses"]["PS"]["failed"] == 1


def test_with_dynamic_workers_a_failed_worker_does_not_fail_the_job(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess
) -> None:
    roles = {"Scheduler": role(1), "Worker": role(2)}
    jobs.create(msjob("dyn", roles, enableDynamicWorker=True))
    pods = jobs.wait_pods("dyn", ["dyn-scheduler-0", "dyn-worker-0", "dyn-worker-1"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    jobs.wait_phase("dyn", "Running")
    kubelet.fail(jobs.namespace, "dyn-worker-1", exit_code=1)
    job = settled(
        jobs,
        "dyn",
        "the worker's failure counted",
        lambda j: j["status"]["replicaStatuses"]["Worker"]["failed"] == 1,
        operator=operator,
    )
    assert job["status"]["phase"] == "Running"
    assert kf_condition(jobs, "dyn", "Failed") is None
    failed = jobs.pods("dyn")["dyn-worker-1"]  # restartPolicy Never: left as it ended
    assert failed["metadata"]["uid"] == pods["dyn-worker-1"]["metadata"]["uid"]
    assert failed["status"]["phase"] == "Failed"
    kubelet.succeed(jobs.namespace, "dyn-worker-0")  # the default success policy: Worker 0
    jobs.wait_phase("dyn", "Succeeded")
    assert kf_condition(jobs, "dyn", "Succeeded") == "True"


def test_with_dynamic_workers_the_scheduler_still_fails_the_job(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    jobs.create(msjob("dyn", {"Scheduler": role(1), "Worker": role(1)}, enableDynamicWorker=True))
    pods = jobs.wait_pods("dyn", ["dyn-scheduler-0", "dyn-worker-0"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    kubelet.fail(jobs.namespace, "dyn-scheduler-0", exit_code=1)
    jobs.wait_phase("dyn", "Failed")
    assert kf_condition(jobs, "dyn", "Failed") == "True"


@pytest.mark.parametrize(
    ("policy", "restarts"),
    [("OnFailure", True), ("ExitCode", True), ("Always", True), ("Never", False)],
)
def test_restart_policies(jobs: Jobs, kubelet: Kubelet, policy: str, restarts: bool) -> None:
    jobs.create(msjob("ms", {"Scheduler": role(1), "Worker": role(1, policy)}))
    pods = jobs.wait_pods("ms", ["ms-scheduler-0", "ms-worker-0"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    kubelet.fail(jobs.namespace, "ms-worker-0", exit_code=137)
    if restarts:
        jobs.wait_new_pod("ms", "ms-worker-0", pods["ms-worker-0"]["metadata"]["uid"])
        assert jobs.status("ms")["restartCount"] == 1
    else:
        jobs.wait_phase("ms", "Failed")


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        (None, {"ms-worker-0"}),
        ("Running", {"ms-worker-0"}),
        ("All", set()),
        ("None", {"ms-scheduler-0", "ms-worker-0"}),
    ],
)
def test_clean_pod_policy(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess, policy: str | None, left: set[str]
) -> None:
    run_policy = {"cleanPodPolicy": policy} if policy else {}
    jobs.create(msjob("ms", {"Scheduler": role(1), "Worker": role(1)}, runPolicy=run_policy))
    pods = jobs.wait_pods("ms", ["ms-scheduler-0", "ms-worker-0"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    kubelet.succeed(jobs.namespace, "ms-worker-0")
    jobs.wait_phase("ms", "Succeeded")
    # The cleanup pass has run and the pods it deleted are gone: what is left stays.
    settled(jobs, "ms", "phase Succeeded", in_phase("Succeeded"), operator=operator)
    assert set(jobs.pods("ms")) == left


def test_the_seed_example_runs_to_the_end(jobs: Jobs) -> None:
    body = yaml.safe_load(SPEC_EXAMPLES[sorted(SPEC_EXAMPLES)[0]])
    jobs.create(body)
    jobs.wait_phase(body["metadata"]["name"], "Succeeded", 60)


def test_a_finished_msjob_is_deleted_its_ttl_after_it_finished(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    """runPolicy.ttlSecondsAfterFinished, as Kubeflow's controllers act on it:
    the job goes that long after its completion, and its children with it."""
    run_policy = {"ttlSecondsAfterFinished": 3, "cleanPodPolicy": "None"}
    jobs.create(msjob("ms", {"Scheduler": role(1), "Worker": role(1)}, runPolicy=run_policy))
    pods = jobs.wait_pods("ms", ["ms-scheduler-0", "ms-worker-0"])
    for p in pods:
        kubelet.run(jobs.namespace, p)
    kubelet.succeed(jobs.namespace, "ms-worker-0")
    done = jobs.wait_phase("ms", "Succeeded")
    assert not any(r == "FieldNotActedOn" for _, r, _ in jobs.events("ms"))

    def gone() -> bool:
        try:
            jobs.get("ms")
        except NotFound:
            return True
        return False

    wait_for(gone, 20, "the job deleted after its ttl")
    wait_for(lambda: not jobs.pods("ms"), 30, "its pods gone with it")
    assert done.get("completionTime")
