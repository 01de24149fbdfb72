"""ColossalAIJob end to end on the local cluster, the operator as its ServiceAccount."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from t9k_operator.api import colossalai
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS
from tests.integration.cluster import wait_for
from tests.integration.crd_helpers import DOC_FRAGMENTS, refused_for_nameless_container
from tests.integration.jobs import Jobs, in_phase, provide_claims, settled
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.operator_process import OperatorProcess
from tests.unit.api.test_colossalai_models import SPEC_EXAMPLES

pytestmark = pytest.mark.usefixtures("operator")

COLOSSALAI = resource_of(colossalai.CRD)


def cj(
    name: str,
    replicas: int,
    *,
    proc: int = 1,
    torch_args: list[str] | None = None,
    manual: bool = True,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "ColossalAIJob",
        "metadata": {"name": name},
        "spec": {
            "launcher": {"image": "hpcaitech/colossalai:0.3.0", "workingDir": "/workspace"},
            "worker": {
                "replicas": replicas,
                "procPerWorker": proc,
                "command": ["train.py", "arg1"],
                "torchArgs": torch_args or [],
                "template": {
                    "metadata": {"annotations": dict(MANUAL) if manual else {}},
                    "spec": {
                        "containers": [{"name": "worker", "image": "hpcaitech/colossalai:0.3.0"}]
                    },
                },
            },
            **spec,
        },
    }


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, COLOSSALAI)


def all_pods(name: str, workers: int) -> list[str]:
    return [f"{name}-launcher", *(f"{name}-worker-{i}" for i in range(workers))]


def run_all(jobs: Jobs, kubelet: Kubelet, name: str, workers: int) -> None:
    for p in jobs.wait_pods(name, all_pods(name, workers)):
        kubelet.run(jobs.namespace, p)
    jobs.wait_phase(name, "Running")


@pytest.mark.parametrize(("replicas", "proc"), [(1, 1), (3, 8)])
@pytest.mark.parametrize("torch_args", [[], ["--max_restarts=3"]])
def test_hostfile_and_launcher_command(
    jobs: Jobs, replicas: int, proc: int, torch_args: list[str]
) -> None:
    jobs.create(cj("lc", replicas, proc=proc, torch_args=torch_args))
    pods = jobs.wait_pods("lc", all_pods("lc", replicas))
    cm = jobs.client.get(CONFIGMAPS, "lc-hostfile", jobs.namespace)
    assert cm["data"]["hostfile"] == "".join(f"lc-worker-{i}.lc\n" for i in range(replicas))
    script = pods["lc-launcher"]["spec"]["containers"][0]["command"][2]
    extra = " --extra_launch_args=max_restarts=3" if torch_args else ""
    assert script.rstrip().splitlines()[-1] == (
        f"exec colossalai run --nproc_per_node={proc} --hostfile=/t9k/hostfile "
        f"--master_addr=lc-worker-0.lc --master_port=29500{extra} train.py arg1"
    )


def test_ssh_at_auth_mount_path_and_sshd_from_sshd_path(jobs: Jobs) -> None:
    jobs.create(cj("sh", 1, ssh={"authMountPath": "/home/me/.ssh", "sshdPath": "/opt/sshd"}))
    pods = jobs.wait_pods("sh", all_pods("sh", 1))
    worker = pods["sh-worker-0"]["spec"]["containers"][0]
    assert (
        worker["command"][-1]
        .rstrip()
        .endswith("exec /opt/sshd -D -e -o AuthorizedKeysFile=/home/me/.ssh/authorized_keys")
    )
    for pod in pods.values():
        mounts = pod["spec"]["containers"][0]["volumeMounts"]
        assert {"name": "t9k-ssh", "mountPath": "/home/me/.ssh"} in mounts
        assert pod["spec"]["initContainers"][0]["name"] == "t9k-ssh-setup"


@pytest.mark.parametrize(("launcher_code", "phase"), [(0, "Succeeded"), (1, "Failed")])
def test_outcome_follows_the_launcher(
    jobs: Jobs, kubelet: Kubelet, launcher_code: int, phase: str
) -> None:
    jobs.create(cj("oc", 2))
    run_all(jobs, kubelet, "oc", 2)
    kubelet.terminate(jobs.namespace, "oc-launcher", exit_code=launcher_code)
    jobs.wait_phase("oc", phase)
    assert jobs.status("oc")["restartCount"] == 0


def test_a_failed_worker_fails_the_job_at_once(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(cj("wf", 2))
    run_all(jobs, kubelet, "wf", 2)
    uid = jobs.pods("wf")["wf-worker-1"]["metadata"]["uid"]
    kubelet.fail(jobs.namespace, "wf-worker-1", exit_code=137)
    jobs.wait_phase("wf", "Failed")
    failed = jobs.condition("wf", "Failed")
    assert failed is not None and "wf-worker-1" in failed["message"]
    assert jobs.pods("wf")["wf-worker-1"]["metadata"]["uid"] == uid  # never restarted


@pytest.mark.parametrize(
    ("clean", "left"), [(True, {"cu-launcher"}), (False, set(all_pods("cu", 2)))]
)
def test_clean_up_workers(
    jobs: Jobs, kubelet: Kubelet, operator: OperatorProcess, clean: bool, left: set[str]
) -> None:
    jobs.create(cj("cu", 2, runPolicy={"cleanUpWorkers": clean}))
    run_all(jobs, kubelet, "cu", 2)
    kubelet.succeed(jobs.namespace, "cu-launcher")
    jobs.wait_phase("cu", "Succeeded")
    # The cleanup pass has run and the pods it deleted are gone: what is left stays.
    settled(jobs, "cu", "phase Succeeded", in_phase("Succeeded"), operator=operator)
    assert set(jobs.pods("cu")) == left


def test_pause_resume_and_debug(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(cj("pz", 1))
    jobs.wait_pods("pz", all_pods("pz", 1))
    jobs.patch_spec("pz", {"runMode": {"pause": {"enabled": True}}})
    jobs.wait_phase("pz", "Paused")
    wait_for(lambda: not jobs.pods("pz"), 10, "pods deleted while paused")
    jobs.patch_spec("pz", {"runMode": {"pause": {"enabled": False}}})
    jobs.wait_pods("pz", all_pods("pz", 1))
    jobs.create(cj("dbg", 1, runMode={"debug": {"enabled": True}}))
    pods = jobs.wait_pods("dbg", all_pods("dbg", 1))
    for pod in pods.values():
        assert pod["spec"]["containers"][0]["command"] == ["sleep", "inf"]


@pytest.mark.parametrize("example", sorted(SPEC_EXAMPLES))
def test_every_seed_example_runs(jobs: Jobs, example: str) -> None:
    body = yaml.safe_load(SPEC_EXAMPLES[example])
    provide_claims(jobs, body["spec"]["worker"]["template"])
    if example in DOC_FRAGMENTS:
        body = refused_for_nameless_container(jobs.create, body)
    jobs.create(body)
    name = body["metadata"]["name"]
    mode = body["spec"].get("runMode") or {}
    containers = body["spec"]["worker"]["template"]["spec"]["containers"]
    if not (body["spec"].get("launcher") or {}).get("image") or not all(
        c.get("image") for c in containers
    ):
        jobs.wait_phase(name, "Failed", 30)  # the doc's fragment names no image
    elif (mode.get("pause") or {}).get("enabled"):
        jobs.wait_phase(name, "Paused", 30)
    elif (mode.get("debug") or {}).get("enabled"):
        jobs.wait_phase(name, "Running", 30)
    else:
        jobs.wait_phase(name, "Succeeded", 60)
