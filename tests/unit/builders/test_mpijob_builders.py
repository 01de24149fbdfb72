"""MPIJob children, built from parsed jobs (pure)."""

from __future__ import annotations

import shlex
from typing import Any

from t9k_operator.builders import mpijob as b
from t9k_operator.builders import ssh
from t9k_operator.builders.common import PodMode

OWNER = {
    "apiVersion": "batch.tensorstack.dev/v1beta1",
    "kind": "MPIJob",
    "name": "mpi",
    "uid": "u",
    "controller": True,
    "blockOwnerDeletion": True,
}


def job(**spec: Any) -> b.Job:
    worker: dict[str, Any] = {
        "replicas": 2,
        "extraMPIArgs": ["-N", "3", "--allow-run-as-root"],
        "cmd": ["./random_walk", "20"],
        "template": {
            "metadata": {"labels": {"l": "x"}},
            "spec": {
                "containers": [
                    {
                        "image": "img",
                        "workingDir": "/usr/local/code",
                        "command": ["ignored"],
                        "env": [
                            {"name": "NCCL_DEBUG", "value": "INFO"},
                            {"name": "PATH", "value": "/opt/bin:/usr/bin"},
                        ],
                        "resources": {
                            "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
                            "requests": {"cpu": "1", "nvidia.com/gpu": 1},
                        },
                    }
                ]
            },
        },
    }
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "MPIJob",
            "metadata": {"name": "mpi", "namespace": "ns", "uid": "u"},
            "spec": {"worker": worker, **spec},
        }
    )


def labels(type_: str, index: int) -> dict[str, str]:
    return {
        "l": "x",
        "app.kubernetes.io/managed-by": "t9k-operator",
        "t9k.dev/job-name": "mpi",
        "t9k.dev/job-kind": "MPIJob",
        "t9k.dev/replica-type": type_,
        "t9k.dev/replica-index": str(index),
        "t9k.dev/role": type_,
    }


def key_volumes() -> list[dict[str, Any]]:
    return [
        {"name": "t9k-ssh-key", "secret": {"secretName": "mpi-ssh", "defaultMode": 0o400}},
        {"name": "t9k-ssh", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]


def test_the_hostfile_names_each_worker_by_its_service_name() -> None:
    assert b.hostfile(job()) == "mpi-worker-0.mpi\nmpi-worker-1.mpi\n"
    cm = b.hostfile_configmap(job())
    assert cm["metadata"]["name"] == "mpi-hostfile"
    assert cm["data"] == {"hostfile": "mpi-worker-0.mpi\nmpi-worker-1.mpi\n"}


def test_mpirun_gets_the_hostfile_prefix_mca_env_extra_args_then_cmd() -> None:
    j = job(mca={"btl": "^openib", "pml": "ob1"}, mpiHome="/usr/local")
    assert b.mpirun_command(j) == [
        "mpirun",
        "--hostfile",
        "/t9k/hostfile",
        "--prefix",
        "/usr/local",
        "--mca",
        "btl",
        "^openib",
        "--mca",
        "pml",
        "ob1",
        "-x",
        "PATH",
        "-x",
        "NCCL_DEBUG",
        "-N",
        "3",
        "--allow-run-as-root",
        "./random_walk",
        "20",
    ]
    assert b.mpirun_command(job())[:5] == ["mpirun", "--hostfile", "/t9k/hostfile", "-x", "PATH"]


def test_the_launcher_script_waits_for_ssh_then_execs_mpirun_as_root_if_root() -> None:
    script = b.launcher_script(job(mpiHome="/usr"))
    lines = script.splitlines()
    assert lines[-1] == 'exec mpirun "${forward[@]}" ' + shlex.join(
        b.mpirun_command(job(mpiHome="/usr"))[1:]
    )
    assert (
        'if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 '
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi" in lines
    )
    assert (
        ': "${OMPI_MCA_orte_keep_fqdn_hostnames:=1}"; export OMPI_MCA_orte_keep_fqdn_hostnames'
        in lines
    )
    assert (
        ': "${OMPI_MCA_plm_rsh_no_tree_spawn:=1}"; export OMPI_MCA_plm_rsh_no_tree_spawn' in lines
    )
    assert 'if [ -n "${LD_LIBRARY_PATH:-}" ]; then forward=(-x LD_LIBRARY_PATH); fi' in lines
    assert (
        'for name in $(compgen -e); do case "$name" in T9K_PROGRESS_*) forward+=(-x "$name");; '
        "esac; done"
    ) in lines
    wait = ssh.wait_for_hosts_lines()
    start = lines.index(wait[0])
    assert lines[start : start + len(wait)] == wait
    assert "$$" not in script


def test_a_worker_runs_sshd_in_its_mpi_worker_container() -> None:
    pod = b.build_worker(job(), 1)
    assert pod["metadata"] == {
        "name": "mpi-worker-1",
        "namespace": "ns",
        "labels": labels("worker", 1),
        "ownerReferences": [OWNER],
    }
    spec = pod["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == (
        "mpi-worker-1",
        "mpi",
        "Never",
    )
    (c,) = spec["containers"]
    assert c == {
        "name": "mpi-worker",  # the manual's nameless container
        "image": "img",
        "workingDir": "/usr/local/code",
        "command": ["/bin/sh", "-c", ssh.sshd_foreground_script("/usr/sbin/sshd")],
        "env": [
            {"name": "NCCL_DEBUG", "value": "INFO"},
            {"name": "PATH", "value": "/opt/bin:/usr/bin"},
        ],
        "resources": {
            "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
            "requests": {"cpu": "1", "nvidia.com/gpu": 1},
        },
        "volumeMounts": [{"name": "t9k-ssh", "mountPath": "/root/.ssh"}],
    }
    assert [i["name"] for i in spec["initContainers"]] == ["t9k-ssh-setup"]
    assert spec["volumes"] == key_volumes()


def test_a_worker_with_its_own_sshd_and_key_place() -> None:
    pod = b.build_worker(job(ssh={"sshdPath": "/opt/sbin/sshd", "sshAuthMountPath": "/etc/k"}), 0)
    c = pod["spec"]["containers"][0]
    assert c["command"] == [
        "/bin/sh",
        "-c",
        ssh.sshd_foreground_script(
            "/opt/sbin/sshd", " -o AuthorizedKeysFile=/etc/k/authorized_keys"
        ),
    ]
    assert c["volumeMounts"] == [{"name": "t9k-ssh", "mountPath": "/etc/k"}]


def test_the_launcher_runs_mpirun_from_the_whole_template() -> None:
    pod = b.build_launcher(job())
    assert pod["metadata"] == {
        "name": "mpi-launcher",
        "namespace": "ns",
        "labels": labels("launcher", 0),
        "ownerReferences": [OWNER],
    }
    spec = pod["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == (
        "mpi-launcher",
        "mpi",
        "Never",
    )
    (c,) = spec["containers"]
    assert c == {
        "name": "mpi-worker",
        "image": "img",
        "workingDir": "/usr/local/code",
        "command": ["/bin/bash", "-c", b.launcher_script(job())],
        "env": [
            {"name": "NCCL_DEBUG", "value": "INFO"},
            {"name": "PATH", "value": "/opt/bin:/usr/bin"},
        ],
        "resources": {
            "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
            "requests": {"cpu": "1", "nvidia.com/gpu": 1},
        },
        "volumeMounts": [
            {
                "name": "t9k-hostfile",
                "mountPath": "/t9k/hostfile",
                "subPath": "hostfile",
                "readOnly": True,
            },
            {"name": "t9k-ssh", "mountPath": "/root/.ssh"},
        ],
    }
    assert spec["volumes"] == [
        {"name": "t9k-hostfile", "configMap": {"name": "mpi-hostfile"}},
        *key_volumes(),
    ]
    # bash is checked for: the launcher's script needs it.
    assert "/bin/bash" in spec["initContainers"][0]["command"][2]


def test_debug_mode_the_launcher_sleeps_and_workers_run_sshd() -> None:
    debug = PodMode(b.DEBUG_COMMAND, debug=True)
    assert b.build_launcher(job(), debug)["spec"]["containers"][0]["command"] == ["sleep", "inf"]
    assert b.build_worker(job(), 0, debug)["spec"]["containers"][0]["command"] == [
        "/bin/sh",
        "-c",
        ssh.sshd_foreground_script("/usr/sbin/sshd"),
    ]
    # A command the job gives is run as given, by either.
    mine = PodMode(("sleep", "inf"), debug=True)
    assert b.build_worker(job(), 0, mine)["spec"]["containers"][0]["command"] == ["sleep", "inf"]


def test_the_service_opens_ssh() -> None:
    svc = b.build_service(job())
    assert svc["metadata"]["name"] == "mpi"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"] == [{"name": "ssh", "port": 22, "targetPort": 22}]
