"""MPIJob's 2025 layout on the local cluster, the operator as its ServiceAccount.

Every whole MPIJob of T9k's 2025 manual (``shared/specs/t9k-2025/mpijob.md``
and ``mpijob-api.md`` beside the clone, read at test time, applied unchanged)
is accepted and stored with none of its fields pruned; the operator makes the
pods the guide describes (the worker's container named worker, the
launcher running mpirun in the worker's image), and fails an example that
names no program by ``spec.mpiConfig.script``. A job that mixes the two
layouts, or has neither, is refused at admission naming the fields.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from t9k_operator.api.mpijob import CRD, MSG_MIXED_LAYOUTS, MSG_NO_LAYOUT
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient
from t9k_operator.sdk import Client
from tests.integration.cluster import Cluster, wait_for
from tests.integration.crd_helpers import applied, assert_stored_as_sent, refused, stored_object
from tests.integration.jobs import Jobs
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.test_cli import Run, log_lines
from tests.unit.api.helpers import load
from tests.unit.api.test_mpijob_models import JOB, MANUALS_2025, SPEC_EXAMPLES_2025

pytestmark = [
    pytest.mark.usefixtures("operator"),
    pytest.mark.skipif(
        not all(p.exists() for p in MANUALS_2025), reason="shared/specs is not beside the clone"
    ),
]
IMAGE = "t9kpublic/mpi-tutorial:2021022-2"
WORKERS = [f"{JOB}-worker-{i}" for i in range(4)]
GPU = {"nvidia.com/gpu": 1}


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, resource_of(CRD))


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


@pytest.mark.parametrize("name", sorted(SPEC_EXAMPLES_2025))
def test_each_2025_example_is_stored_unpruned_and_run_as_the_guide_says(
    cluster: Cluster, namespace: str, jobs: Jobs, name: str
) -> None:
    text = SPEC_EXAMPLES_2025[name]
    applied(cluster, namespace, text)
    assert_stored_as_sent(load(text), stored_object(cluster, CRD, namespace, JOB))
    sent = load(text)["spec"]
    if "mpiConfig" not in sent:
        # the resources and env examples name no program: the job fails saying where
        status = jobs.wait_phase(JOB, "Failed")
        failed = next(c for c in status["conditions"] if c["type"] == "Failed")
        assert "spec.mpiConfig.script is empty" in failed["message"], failed
        assert jobs.pods(JOB) == {}
        return
    pods = jobs.wait_pods(JOB, [f"{JOB}-launcher", *WORKERS])
    worker = container(pods[f"{JOB}-worker-3"], "worker")
    template = sent["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert worker["image"] == IMAGE and worker["workingDir"] == "/usr/local/code"
    assert worker["resources"] == template["resources"]
    assert "/usr/sbin/sshd" in worker["command"][2]
    # the launcher's template is empty: the operator's, of the worker's image
    launcher = container(pods[f"{JOB}-launcher"], "worker")
    assert launcher["image"] == IMAGE
    assert launcher["command"][2].rstrip().splitlines()[-1] == (
        'exec mpirun "${forward[@]}" --hostfile /t9k/hostfile --prefix /usr/local '
        "--mca btl '^openib' -x PATH -N 3 --enable-recovery --max-restarts 100 "
        "--allow-run-as-root -bind-to none ./random_walk 20 40 2"
    )


def _job(spec: dict[str, Any]) -> str:
    body = {"apiVersion": CRD.api_version, "kind": CRD.kind, "metadata": {"name": JOB}}
    return yaml.safe_dump({**body, "spec": spec})


TEMPLATE = {"spec": {"containers": [{"name": "worker", "image": IMAGE}]}}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {
                "mpiConfig": {"script": ["./prog"]},
                "replicaSpecs": [{"type": "worker", "template": TEMPLATE}],
                "worker": {"cmd": ["./prog"], "template": TEMPLATE},
            },
            MSG_MIXED_LAYOUTS,
        ),
        (
            {"mca": {"btl": "^openib"}, "replicaSpecs": [{"type": "worker", "template": TEMPLATE}]},
            MSG_MIXED_LAYOUTS,
        ),
        ({"mpiConfig": {"script": ["./prog"]}}, MSG_NO_LAYOUT),
    ],
)
def test_a_job_of_both_layouts_or_neither_is_refused_naming_the_fields(
    cluster: Cluster, namespace: str, spec: dict[str, Any], message: str
) -> None:
    stderr = refused(cluster, namespace, _job(spec))
    assert message in " ".join(stderr.split()), stderr


def test_t9k_and_the_sdk_read_a_2025_job(cluster: Cluster, namespace: str) -> None:
    """kubectl's columns, t9k list (GPUs: the operator's launcher is of the workers'
    template), describe and logs (the launcher's container, named worker) and the SDK
    read the 2025 layout as they read the older one."""
    t9k = Run(cluster, namespace)
    notes = {"kwok.t9k.dev/run-duration": "60s"}
    template = {
        "metadata": {"annotations": notes},
        "spec": {
            "containers": [
                {"name": "worker", "image": IMAGE, "resources": {"limits": GPU, "requests": GPU}}
            ]
        },
    }
    body = {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": "new"},
        "spec": {
            "mpiConfig": {"script": ["./prog"]},
            "replicaSpecs": [
                {"type": "worker", "replicas": 2, "template": template},
                {"type": "launcher", "template": {}},
            ],
        },
    }
    t9k.ok("submit", "-f", "-", input_=yaml.safe_dump(body))
    t9k.ok("wait", "new", "--for", "Running", "--timeout", "60s")

    def allocated() -> list[str] | None:
        row = t9k.ok("list").splitlines()[1].split()
        return row if row[5] == "3" else None

    row = wait_for(allocated, 30, "the job's 3 GPUs allocated")
    assert row[:6] == ["new", "MPIJob", "Running", "-", "3", "3"]
    assert "GPUs:        3 requested, 3 allocated" in t9k.ok("describe", "new")
    launcher = log_lines("new-launcher", "worker")
    assert launcher and t9k.ok("logs", "new").splitlines() == launcher
    with Client(str(cluster.kubeconfig), namespace=namespace) as sdk:
        assert [line.pod for line in sdk.logs("new")] == ["new-launcher"] * len(launcher)
    got = cluster.kubectl("get", "mpij", "new", "-n", namespace).stdout.split()
    assert got[:3] == ["NAME", "PHASE", "REASON"] and got[got.index("new") + 1] == "Running"


def restarting(name: str, launcher_limit: int | None) -> dict[str, Any]:
    """A 2025 job of 2 workers run by the test's kubelet; its launcher entry (its own
    pod of the workers' image) restarts on failure ``launcher_limit`` times (None:
    left to the defaults, OnFailure with limit 0)."""
    template = {
        "metadata": {"annotations": dict(MANUAL)},
        "spec": {"containers": [{"name": "worker", "image": IMAGE}]},
    }
    own = {**template, "spec": {"containers": [{"name": "launcher", "image": IMAGE}]}}
    launcher: dict[str, Any] = {"type": "launcher", "template": own}
    if launcher_limit is not None:
        launcher["restartPolicy"] = {"policy": "OnFailure", "limit": launcher_limit}
    return {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": {
            "mpiConfig": {"script": ["./prog"]},
            "replicaSpecs": [{"type": "worker", "replicas": 2, "template": template}, launcher],
        },
    }


def test_the_restart_policy_recreates_a_failed_launcher_within_its_limit(
    jobs: Jobs, kubelet: Kubelet
) -> None:
    jobs.create(restarting("rs", 1))
    pods = jobs.wait_pods("rs", ["rs-launcher", "rs-worker-0", "rs-worker-1"])
    for pod in pods:
        kubelet.run(jobs.namespace, pod)
    kubelet.fail(jobs.namespace, "rs-launcher", exit_code=3)
    again = jobs.wait_new_pod("rs", "rs-launcher", pods["rs-launcher"]["metadata"]["uid"])
    assert container(again, "launcher")["command"][0] == "/bin/bash"
    kubelet.run(jobs.namespace, "rs-launcher")
    kubelet.fail(jobs.namespace, "rs-launcher", exit_code=3)  # its one restart spent
    jobs.wait_phase("rs", "Failed")
    assert jobs.status("rs")["restartCount"] == 1


def test_by_default_a_failed_launcher_fails_the_job_at_once(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(restarting("once", None))
    for pod in jobs.wait_pods("once", ["once-launcher", "once-worker-0", "once-worker-1"]):
        kubelet.run(jobs.namespace, pod)
    kubelet.fail(jobs.namespace, "once-launcher", exit_code=3)
    jobs.wait_phase("once", "Failed")
    assert jobs.status("once")["restartCount"] == 0
