"""MPIJob end to end on the local cluster, the operator as its ServiceAccount:
the children it creates, the outcome mpirun's exit decides (the manual's
Completed condition and phase), cleanUpWorkers, a job without cmd, debug mode,
and the t9k command (create, list, describe, wait, logs, pause, resume)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from t9k_operator.api import mpijob
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS, SECRETS, SERVICES
from tests.integration.cluster import Cluster, wait_for
from tests.integration.jobs import Jobs
from tests.integration.kubelet import MANUAL, Kubelet
from tests.integration.test_cli import T9K

pytestmark = pytest.mark.usefixtures("operator")

MPIJOB = resource_of(mpijob.CRD)


def mj(name: str, replicas: int = 2, *, manual: bool = True, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "worker": {
                "replicas": replicas,
                "extraMPIArgs": ["-N", "1"],
                "cmd": ["python3", "train.py"],
                "template": {
                    "metadata": {"annotations": dict(MANUAL) if manual else {}},
                    "spec": {"containers": [{"image": "mpi:4.1"}]},  # as the manual: no name
                },
            },
            "mca": {"btl": "^openib"},
            **spec,
        },
    }


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, MPIJOB)


def all_pods(name: str, workers: int) -> list[str]:
    return [f"{name}-launcher", *(f"{name}-worker-{i}" for i in range(workers))]


def run_all(jobs: Jobs, kubelet: Kubelet, name: str, workers: int) -> None:
    for p in jobs.wait_pods(name, all_pods(name, workers)):
        kubelet.run(jobs.namespace, p)
    jobs.wait_phase(name, "Running")


def condition(jobs: Jobs, name: str, type_: str) -> dict[str, Any]:
    return next(c for c in jobs.status(name)["conditions"] if c["type"] == type_)


def test_children_hostfile_key_and_the_mpirun_line(jobs: Jobs) -> None:
    jobs.create(mj("ch", 2, mpiHome="/usr/local"))
    pods = jobs.wait_pods("ch", all_pods("ch", 2))
    ns = jobs.namespace
    cm = jobs.client.get(CONFIGMAPS, "ch-hostfile", ns)
    assert cm["data"]["hostfile"] == "ch-worker-0.ch\nch-worker-1.ch\n"
    assert jobs.client.get(SECRETS, "ch-ssh", ns)["type"] == "Opaque"
    assert jobs.client.get(SERVICES, "ch", ns)["spec"]["clusterIP"] == "None"
    launcher = pods["ch-launcher"]["spec"]["containers"][0]
    assert launcher["name"] == "mpi-worker"
    assert launcher["command"][2].rstrip().splitlines()[-1] == (
        'exec mpirun "${forward[@]}" --hostfile /t9k/hostfile --prefix /usr/local '
        "--mca btl '^openib' -x PATH -N 1 python3 train.py"
    )
    worker = pods["ch-worker-1"]["spec"]["containers"][0]
    assert worker["command"][2].rstrip().endswith("exec /usr/sbin/sshd -D -e")


@pytest.mark.parametrize("clean", [False, True])
def test_mpirun_exit_0_completes_the_job(jobs: Jobs, kubelet: Kubelet, clean: bool) -> None:
    jobs.create(mj("ok", 2, runPolicy={"cleanUpWorkers": clean}))
    run_all(jobs, kubelet, "ok", 2)
    kubelet.terminate(jobs.namespace, "ok-launcher", exit_code=0)
    jobs.wait_phase("ok", "Succeeded")
    completed = condition(jobs, "ok", "Completed")
    assert (completed["status"], completed["reason"]) == ("True", "Completed")
    assert "mpirun exited 0" in completed["message"]
    assert condition(jobs, "ok", "Failed")["status"] == "False"
    left = {"ok-launcher"} if clean else set(all_pods("ok", 2))
    wait_for(lambda: set(jobs.pods("ok")) == left, 30, f"pods {left}")


def test_mpirun_failing_fails_the_job_and_completed_is_false(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(mj("bad", 2))
    run_all(jobs, kubelet, "bad", 2)
    kubelet.terminate(jobs.namespace, "bad-launcher", exit_code=3)
    jobs.wait_phase("bad", "Failed")
    assert condition(jobs, "bad", "Failed")["status"] == "True"
    completed = condition(jobs, "bad", "Completed")
    assert completed["status"] == "False" and "exit code 3" in completed["message"]
    assert jobs.status("bad")["restartCount"] == 0


def test_a_failed_worker_fails_the_job_at_once(jobs: Jobs, kubelet: Kubelet) -> None:
    jobs.create(mj("wf", 2))
    run_all(jobs, kubelet, "wf", 2)
    kubelet.fail(jobs.namespace, "wf-worker-1", exit_code=137)
    jobs.wait_phase("wf", "Failed")
    assert jobs.status("wf")["restartCount"] == 0


def test_a_job_without_cmd_fails_naming_it(jobs: Jobs) -> None:
    body = mj("nocmd", 1)
    del body["spec"]["worker"]["cmd"]
    jobs.create(body)
    jobs.wait_phase("nocmd", "Failed")
    assert "spec.worker.cmd" in condition(jobs, "nocmd", "Failed")["message"]
    assert jobs.pods("nocmd") == {}


def test_debug_mode_launcher_sleeps_workers_run_sshd(jobs: Jobs) -> None:
    body = mj("dbg", 1, runMode={"debug": {"enabled": True}})
    del body["spec"]["worker"]["cmd"]
    jobs.create(body)
    pods = jobs.wait_pods("dbg", all_pods("dbg", 1))
    assert pods["dbg-launcher"]["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    worker = pods["dbg-worker-0"]["spec"]["containers"][0]["command"]
    assert worker[2].rstrip().endswith("exec /usr/sbin/sshd -D -e")


def t9k(cluster: Cluster, namespace: str, *args: str) -> str:
    base = [str(T9K), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace]
    proc = subprocess.run([*base, *args], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_t9k_command(cluster: Cluster, namespace: str, jobs: Jobs, kubelet: Kubelet) -> None:
    out = t9k(
        cluster, namespace, "create", "mpi", "cli", "--image", "mpi:4.1", "--workers", "2",
        "--gpus", "1", "--annotation", "kwok.t9k.dev/run-duration=600s",
        "--", "python3", "train.py",
    )  # fmt: skip
    assert out.endswith("/cli created\n")
    spec = jobs.get("cli")["spec"]
    assert spec["worker"]["cmd"] == ["python3", "train.py"]
    assert spec["worker"]["extraMPIArgs"] == ["-N", "1"]
    t9k(cluster, namespace, "wait", "cli", "--for", "Running", "--timeout", "60s")
    row = t9k(cluster, namespace, "list").splitlines()[1].split()
    assert row[:3] == ["cli", "MPIJob", "Running"]
    assert "Kind:        MPIJob" in t9k(cluster, namespace, "describe", "cli")
    t9k(cluster, namespace, "pause", "cli")
    jobs.wait_phase("cli", "Paused")
    t9k(cluster, namespace, "resume", "cli")
    wait_for(lambda: jobs.status("cli").get("phase") in ("Resuming", "Running"), 60, "resumed")
