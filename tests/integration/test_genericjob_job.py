"""GenericJob end to end on the local cluster, the operator as its
ServiceAccount: the pods and per-replica Services it creates with the
variables filled in, its success and failure rules, a replica type's own
restart limit, a template variable the job lacks failing the job with a
condition naming the field and the variable, and the t9k command and the SDK
on a GenericJob."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.api import genericjob
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient
from t9k_operator.resources import PODS, SERVICES
from t9k_operator.sdk import Client
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.test_cli import Run, log_lines, runs_for

pytestmark = pytest.mark.usefixtures("operator")

GENERICJOB = resource_of(genericjob.CRD)


def role(type_: str, replicas: int, policy: str = "Never", limit: int = 0, **c: Any) -> Any:
    container = {"name": "main", "image": "debian:12", "command": ["sleep", "1"], **c}
    return {
        "type": type_,
        "replicas": replicas,
        "restartPolicy": {"policy": policy, "limit": limit},
        "template": {
            "metadata": {"annotations": dict(MANUAL)},
            "spec": {"containers": [container]},
        },
    }


def gj(name: str, roles: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": name},
        "spec": {"replicaSpecs": roles, **spec},
    }


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, GENERICJOB)


def test_pods_and_services_carry_the_filled_in_addresses(
    jobs: Jobs, admin: KubeClient, namespace: str
) -> None:
    client = role(
        "client",
        2,
        args=["$(service.server[0].host):$(service.port[msg])", "$(type)-$(rank)", "$(HOME)"],
        env=[{"name": "N", "value": "$(replicas[client])"}],
    )
    jobs.create(
        gj(
            "addr",
            [role("server", 1), client],
            service={"ports": [{"name": "msg", "port": 5000}]},
        )
    )
    pods = jobs.wait_pods("addr", ["addr-client-0", "addr-client-1", "addr-server-0"])
    c1 = pods["addr-client-1"]["spec"]["containers"][0]
    assert c1["args"] == ["addr-server-0:5000", "client-1", "$(HOME)"]
    assert c1["env"][0] == {"name": "N", "value": "2"}  # (the progress reporter's follow)
    services = {
        s["metadata"]["name"]: s
        for s in admin.list(SERVICES, namespace)["items"]
        if s["metadata"]["name"].startswith("addr")
    }
    assert sorted(services) == ["addr", "addr-client-0", "addr-client-1", "addr-server-0"]
    one = services["addr-server-0"]["spec"]
    assert one["clusterIP"] == "None" and one["ports"][0]["port"] == 5000
    assert one["selector"]["t9k.dev/replica-index"] == "0"


def test_the_rules_decide_the_end(jobs: Jobs, admin: KubeClient, namespace: str) -> None:
    kubelet = Kubelet(admin)
    jobs.create(
        gj(
            "rules",
            [role("server", 1), role("client", 2)],
            successRules=[{"server": [0]}],
            failureRules=[{"client": [0, 1]}],
        )
    )
    pods = ["rules-client-0", "rules-client-1", "rules-server-0"]
    jobs.wait_pods("rules", pods)
    for pod in pods:
        kubelet.run(namespace, pod)
    jobs.wait_phase("rules", "Running")
    kubelet.fail(namespace, "rules-client-0")  # one of the rule's two: not yet
    wait_for(lambda: (jobs.status("rules").get("aggregate") or {}).get("failed") == 1, 20, "seen")
    assert jobs.status("rules")["phase"] == "Running"
    kubelet.succeed(namespace, "rules-server-0")
    done = jobs.wait_phase("rules", "Succeeded")
    assert "server-0" in next(c for c in done["conditions"] if c["type"] == "Completed")["message"]


def test_the_failure_rule_fails_the_job_once_all_its_replicas_failed(
    jobs: Jobs, admin: KubeClient, namespace: str
) -> None:
    kubelet = Kubelet(admin)
    jobs.create(
        gj("fails", [role("server", 1), role("client", 2)], failureRules=[{"client": [0, 1]}])
    )
    pods = ["fails-client-0", "fails-client-1", "fails-server-0"]
    jobs.wait_pods("fails", pods)
    for pod in pods:
        kubelet.run(namespace, pod)
    jobs.wait_phase("fails", "Running")
    kubelet.fail(namespace, "fails-client-0")
    kubelet.fail(namespace, "fails-client-1")
    failed = jobs.wait_phase("fails", "Failed")
    message = next(c for c in failed["conditions"] if c["type"] == "Failed")["message"]
    assert "client-0, client-1" in message


def test_a_type_restarts_within_its_own_limit(
    jobs: Jobs, admin: KubeClient, namespace: str
) -> None:
    kubelet = Kubelet(admin)
    jobs.create(gj("limit", [role("worker", 1, "OnFailure", 1)]))
    first = jobs.wait_pods("limit", ["limit-worker-0"])["limit-worker-0"]
    kubelet.run(namespace, "limit-worker-0")
    kubelet.fail(namespace, "limit-worker-0")
    jobs.wait_new_pod("limit", "limit-worker-0", first["metadata"]["uid"], 30)
    kubelet.run(namespace, "limit-worker-0")
    kubelet.fail(namespace, "limit-worker-0")
    failed = jobs.wait_phase("limit", "Failed")
    assert failed["tasks"][0]["restartCount"] == 1
    message = next(c for c in failed["conditions"] if c["type"] == "Failed")["message"]
    assert "reached, not restarting" in message


def test_a_variable_the_job_lacks_fails_it_naming_field_and_variable(jobs: Jobs) -> None:
    jobs.create(gj("novar", [role("worker", 1, args=["$(service.port[http])"])]))
    failed = jobs.wait_phase("novar", "Failed")
    cond = next(c for c in failed["conditions"] if c["type"] == "Failed")
    assert cond["reason"] == "InvalidSpec"
    assert cond["message"].startswith(
        "spec.replicaSpecs[0].template.spec.containers[0].args[0]: $(service.port[http]):"
    ), cond["message"]
    assert not jobs.all_pods("novar")


def test_the_t9k_command_and_the_sdk_on_a_genericjob(
    cluster: Cluster, namespace: str, admin: KubeClient
) -> None:
    """`t9k create generic`, list, describe, logs, pause, resume, wait; and the
    SDK's view of the job."""
    t9k = Run(cluster, namespace)
    out = t9k.ok(
        "create", "generic", "gen", "--image", "t:1", "--workers", "2", "--gpus", "1",
        *runs_for(30), "--", "python", "x.py",
    )  # fmt: skip
    assert out == "genericjob.batch.tensorstack.dev/gen created\n"
    t9k.ok("wait", "gen", "--for", "Running", "--timeout", "60s")
    row = wait_for(
        lambda: next(
            (r.split() for r in t9k.ok("list").splitlines()[1:] if r.split()[5:6] == ["2"]), None
        ),
        30,
        "both GPUs allocated",
    )
    assert row[:6] == ["gen", "GenericJob", "Running", "-", "2", "2"]
    described = t9k.ok("describe", "gen")
    assert "Kind:        GenericJob" in described
    # worker-0's (the first replica), its container's (the only one)
    assert t9k.ok("logs", "gen").splitlines() == log_lines("gen-worker-0", "main")
    assert t9k.ok("pause", "gen") == "genericjob.batch.tensorstack.dev/gen paused\n"
    t9k.ok("wait", "gen", "--for", "Paused", "--timeout", "60s")
    wait_for(lambda: not admin.list_all(PODS, namespace)[0], 30, "the paused job's pods deleted")
    t9k.ok("resume", "gen")
    t9k.ok("wait", "gen", "--for", "Running", "--timeout", "60s")
    with Client(str(cluster.kubeconfig), namespace=namespace) as client:
        job = client.get("gen", "generic")
        assert job["kind"] == "GenericJob"
    done = t9k("wait", "gen", "--for", "Succeeded", "--timeout", "90s")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "genericjob.batch.tensorstack.dev/gen succeeded\n"
