"""An MPIJob trained for real, in either layout (spec.worker, or T9k's 2025
spec.mpiConfig and spec.replicaSpecs), and with the older layout's
processesPerWorker: the operator's worker and launcher pods run by the pod
host (``tests/integration/podhost``: the Debian root file system with its
stock sshd, the Service's DNS names, a network namespace per pod), and the
launcher's real Open MPI ``mpirun`` (Debian's openmpi-bin) starting an
``mpi4py`` all-reduce (python3-mpi4py) on both workers through their sshd
with the job's own key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders import mpijob as mb
from t9k_operator.builders import ssh
from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS, SECRETS
from t9k_operator.runtime.sshkeys import generate_keypair
from tests.integration.jobs import Jobs
from tests.integration.kubelet import MANUAL
from tests.integration.podhost import Node
from tests.integration.podhost.host import NO_HOST_KEYS, STOCK
from tests.kinds import kind_resource

ALLREDUCE = """\
import os, socket
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM)
print(f"rank {comm.Get_rank()}/{comm.Get_size()} on {socket.gethostname()} "
      f"sum={total} NCCL_DEBUG={os.environ.get('NCCL_DEBUG')} cwd={os.getcwd()} "
      f"report={os.environ.get('T9K_PROGRESS_URL')}", flush=True)
"""
IMAGE = STOCK.derive(
    "mpi", files={"/workspace/allreduce.py": (ALLREDUCE, 0o644)}, dirs={"/workspace": 0o755}
)


def mpi_raw(cmd: list[str], auth: str = "/root/.ssh") -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "mpi", "namespace": "ns", "uid": "uid-mpi"},
        "spec": {
            "ssh": {"sshAuthMountPath": auth},
            "mca": {"btl": "self,tcp"},
            "mpiHome": "/usr",
            "worker": {
                "replicas": 2,
                "extraMPIArgs": ["-N", "1"],
                "cmd": cmd,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "mpi-worker",
                                "image": "mpi",
                                "workingDir": "/workspace",
                                "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                            }
                        ]
                    }
                },
            },
        },
    }


def mpi_2025_raw(cmd: list[str]) -> dict[str, Any]:
    """The job of :func:`mpi_raw` in the 2025 layout (spec.mpiConfig, spec.replicaSpecs),
    its launcher left to the operator (an empty template)."""
    older = mpi_raw(cmd)["spec"]
    template = older["worker"]["template"]
    template["spec"]["containers"][0]["name"] = "worker"
    return {
        **mpi_raw(cmd),
        "spec": {
            "ssh": older["ssh"],
            "mpiConfig": {
                "mca": older["mca"],
                "home": older["mpiHome"],
                "extraArgs": older["worker"]["extraMPIArgs"],
                "script": cmd,
            },
            "replicaSpecs": [
                {"type": "worker", "replicas": 2, "template": template},
                {"type": "launcher", "replicas": 1, "template": {}},
            ],
        },
    }


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.close()


def start(node: Node, job: mb.Job, env: dict[str, str] | None = None) -> Any:
    auth = mb.auth_dir(job)
    node.add(ssh.ssh_secret(job, *generate_keypair("t9k/ns/mpi"), auth))
    node.add(mb.hostfile_configmap(job))
    node.run_pod(mb.build_worker(job, 0), IMAGE)
    node.run_pod(
        mb.build_worker(job, 1), IMAGE.derive("mpi-no-host-keys", remove=NO_HOST_KEYS.remove)
    )
    return node.run_pod(mb.build_launcher(job), IMAGE, env=env)


@pytest.mark.parametrize("auth", ["/root/.ssh", "/etc/t9k-keys"])
def test_mpirun_all_reduces_across_two_workers_over_ssh(node: Node, auth: str) -> None:
    job = mb.Job.from_dict(mpi_raw(["/usr/bin/python3", "allreduce.py"], auth))
    launcher = start(node, job)
    assert launcher.wait("mpi-worker", 120) == 0, launcher.logs("mpi-worker")
    log = launcher.logs("mpi-worker")
    # one rank per worker (-N 1), each on its own pod, the sum over both ranks,
    # the container's env exported (-x) and the launcher's working directory kept.
    for rank in (0, 1):
        assert f"rank {rank}/2 on mpi-worker-{rank} sum=3 NCCL_DEBUG=INFO cwd=/workspace" in log, (
            log
        )
    assert "t9k: ssh to mpi-worker-1.mpi works" in log


def test_the_2025_layout_all_reduces_across_two_workers_over_ssh(node: Node) -> None:
    job = mb.Job.from_dict(mpi_2025_raw(["/usr/bin/python3", "allreduce.py"]))
    launcher = start(node, job)
    assert launcher.wait("worker", 120) == 0, launcher.logs("worker")
    log = launcher.logs("worker")
    for rank in (0, 1):
        assert f"rank {rank}/2 on mpi-worker-{rank} sum=3 NCCL_DEBUG=INFO cwd=/workspace" in log, (
            log
        )


def test_processes_per_worker_starts_that_many_ranks_on_each_worker(node: Node) -> None:
    raw = mpi_raw(["/usr/bin/python3", "allreduce.py"])
    raw["spec"]["worker"].update(extraMPIArgs=[], processesPerWorker=2)
    launcher = start(node, mb.Job.from_dict(raw))
    assert launcher.wait("mpi-worker", 120) == 0, launcher.logs("mpi-worker")
    log = launcher.logs("mpi-worker")
    # 2 ranks on each of the 2 workers: the sum of 1..4
    for rank, worker in ((0, 0), (1, 0), (2, 1), (3, 1)):
        assert f"rank {rank}/4 on mpi-worker-{worker} sum=10" in log, log


def test_mpirun_exit_code_is_the_launchers(node: Node) -> None:
    job = mb.Job.from_dict(mpi_raw(["/usr/bin/python3", "-c", "import sys; sys.exit(3)"]))
    launcher = start(node, job)
    assert launcher.wait("mpi-worker", 120) not in (0, None), launcher.logs("mpi-worker")


def test_the_launcher_says_when_a_worker_never_answers(node: Node) -> None:
    job = mb.Job.from_dict(mpi_raw(["/usr/bin/python3", "allreduce.py"]))
    node.add(ssh.ssh_secret(job, *generate_keypair("t9k/ns/mpi")))
    node.add(mb.hostfile_configmap(job))
    node.run_pod(mb.build_worker(job, 0), IMAGE)
    launcher = node.run_pod(
        mb.build_launcher(job),
        IMAGE,
        env={"T9K_SSH_WAIT_TIMEOUT": "3", "T9K_SSH_REPORT_INTERVAL": "1"},
    )
    assert launcher.wait("mpi-worker", 60) == 1
    log = launcher.logs("mpi-worker")
    assert "gave up after 3s waiting for ssh to mpi-worker-1.mpi" in log, log


@pytest.mark.usefixtures("operator")
@pytest.mark.parametrize(("layout", "container"), [("older", "mpi-worker"), ("2025", "worker")])
def test_pods_the_operator_created_all_reduce(
    admin: KubeClient, namespace: str, tmp_path: Path, layout: str, container: str
) -> None:
    """An MPIJob submitted to the local cluster, in either layout: its pods, Secret and
    hostfile exactly as the API server stored them (after admission and defaulting, the
    ServiceAccount volume included) run here, and mpirun all-reduces."""
    cmd = ["/usr/bin/python3", "allreduce.py"]
    body = mpi_raw(cmd) if layout == "older" else mpi_2025_raw(cmd)
    body["metadata"] = {"name": "mpi"}
    spec = body["spec"]
    template = (
        spec["worker"]["template"] if layout == "older" else spec["replicaSpecs"][0]["template"]
    )
    template["metadata"] = {"annotations": dict(MANUAL)}
    jobs = Jobs(admin, namespace, kind_resource("MPIJob"))
    jobs.create(body)
    pods = jobs.wait_pods("mpi", ["mpi-worker-0", "mpi-worker-1", "mpi-launcher"])
    objects = [
        admin.get(SECRETS, "mpi-ssh", namespace),
        admin.get(CONFIGMAPS, "mpi-hostfile", namespace),
        admin.get(CONFIGMAPS, "kube-root-ca.crt", namespace),
    ]
    node = Node(tmp_path, namespace, objects)
    try:
        for i in (0, 1):
            node.run_pod(pods[f"mpi-worker-{i}"], IMAGE)
        launcher = node.run_pod(pods["mpi-launcher"], IMAGE)
        assert launcher.wait(container, 120) == 0, launcher.logs(container)
        assert "rank 1/2 on mpi-worker-1 sum=3" in launcher.logs(container)
    finally:
        node.close()
