"""ColossalAIJob children, built from parsed jobs (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.api.colossalai import ColossalAIRunMode
from t9k_operator.builders import colossalai as b
from t9k_operator.builders.common import PodMode


def job(
    replicas: int = 2,
    proc: int = 1,
    torch_args: list[str] | None = None,
    ssh: dict[str, str] | None = None,
) -> b.Job:
    spec: dict[str, Any] = {
        "launcher": {
            "image": "hpcaitech/colossalai:0.3.0",
            "workingDir": "/workspace",
            "env": [{"name": "A", "value": "1"}],
            "resources": {"limits": {"cpu": "1"}},
        },
        "worker": {
            "replicas": replicas,
            "procPerWorker": proc,
            "command": ["train.py", "arg1"],
            "torchArgs": torch_args or [],
            "template": {
                "metadata": {"annotations": {"n": "v"}, "labels": {"l": "x"}},
                "spec": {"containers": [{"name": "worker", "image": "w", "command": ["python"]}]},
            },
        },
    }
    if ssh is not None:
        spec["ssh"] = ssh
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "ColossalAIJob",
            "metadata": {"name": "cj", "namespace": "ns", "uid": "u"},
            "spec": spec,
        }
    )


@pytest.mark.parametrize("replicas", [1, 3])
def test_hostfile_is_bare_host_names(replicas: int) -> None:
    expected = "".join(f"cj-worker-{i}.cj\n" for i in range(replicas))
    assert b.hostfile(job(replicas)) == expected
    assert b.hostfile_configmap(job(replicas))["data"] == {"hostfile": expected}


@pytest.mark.parametrize(("replicas", "proc"), [(1, 1), (3, 1), (1, 8), (3, 8)])
@pytest.mark.parametrize(
    ("torch_args", "extra"),
    [
        ([], []),
        (
            ["--max_restarts=3", "--rdzv_backend", "c10d", "--standalone"],
            ["--extra_launch_args=max_restarts=3,rdzv_backend=c10d,standalone"],
        ),
    ],
)
def test_launcher_command(
    replicas: int, proc: int, torch_args: list[str], extra: list[str]
) -> None:
    assert b.colossalai_command(job(replicas, proc, torch_args)) == [
        "colossalai",
        "run",
        f"--nproc_per_node={proc}",
        "--hostfile=/t9k/hostfile",
        "--master_addr=cj-worker-0.cj",
        "--master_port=29500",
        *extra,
        "train.py",
        "arg1",
    ]


def test_launcher_pod() -> None:
    pod = b.build_launcher(job())
    assert pod["metadata"]["name"] == "cj-launcher"
    assert pod["metadata"]["labels"]["t9k.dev/replica-type"] == "launcher"
    assert pod["metadata"]["labels"]["l"] == "x"
    assert pod["metadata"]["annotations"] == {
        "n": "v",
        "kubectl.kubernetes.io/default-container": "launcher",
    }
    assert pod["spec"]["restartPolicy"] == "Never"
    c = pod["spec"]["containers"][0]
    assert (c["image"], c["workingDir"]) == ("hpcaitech/colossalai:0.3.0", "/workspace")
    assert c["env"] == [{"name": "A", "value": "1"}]
    assert c["resources"] == {"limits": {"cpu": "1"}}
    assert c["command"][:2] == ["/bin/bash", "-c"]
    assert c["command"][2].rstrip().splitlines()[-1].startswith("exec colossalai run ")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert set(mounts) == {"/root/.ssh", "/t9k/hostfile"}


def test_workers_run_sshd_from_sshd_path_with_keys_at_auth_mount_path() -> None:
    j = job(ssh={"authMountPath": "/home/me/.ssh", "sshdPath": "/opt/bin/sshd"})
    pod = b.build_worker(j, 1)
    c = pod["spec"]["containers"][0]
    assert c["command"][:2] == ["/bin/sh", "-c"]
    assert c["command"][2].rstrip().splitlines()[-1] == (
        "exec /opt/bin/sshd -D -e -o AuthorizedKeysFile=/home/me/.ssh/authorized_keys"
    )
    assert "[ -x /opt/bin/sshd ] ||" in c["command"][2]
    assert "args" not in c
    assert {"name": "t9k-ssh", "mountPath": "/home/me/.ssh"} in c["volumeMounts"]
    setup = pod["spec"]["initContainers"][0]
    assert setup["name"] == "t9k-ssh-setup" and setup["image"] == "w"
    assert setup["env"] == [{"name": "T9K_IMAGE_FROM", "value": "spec.worker.template"}]
    assert setup["terminationMessagePolicy"] == "FallbackToLogsOnError"
    launcher_setup = b.build_launcher(j)["spec"]["initContainers"][0]
    assert launcher_setup["env"] == [{"name": "T9K_IMAGE_FROM", "value": "spec.launcher"}]
    assert {"name": "t9k-ssh", "mountPath": "/home/me/.ssh"} in setup["volumeMounts"]
    launcher = b.build_launcher(j)["spec"]["containers"][0]
    assert any(m["mountPath"] == "/home/me/.ssh" for m in launcher["volumeMounts"])
    assert 'ln -s /home/me/.ssh "$HOME/.ssh"' in launcher["command"][2]


def test_default_ssh_settings() -> None:
    c = b.build_worker(job(), 0)["spec"]["containers"][0]
    assert c["command"][2].rstrip().splitlines()[-1] == "exec /usr/sbin/sshd -D -e"
    assert b.auth_dir(job()) == "/root/.ssh"


def test_debug_commands_replace_sshd_and_launcher() -> None:
    assert b.DEBUG_COMMAND == ("sleep", "inf")
    debug = ColossalAIRunMode.model_fields["debug"].description or ""
    assert f"`{' '.join(b.DEBUG_COMMAND)}`" in debug  # what kubectl explain says
    assert b.build_worker(job(), 0, PodMode(command=("sleep", "inf")))["spec"]["containers"][0][
        "command"
    ] == ["sleep", "inf"]
    assert b.build_launcher(job(), PodMode(command=("sleep", "inf")))["spec"]["containers"][0][
        "command"
    ] == ["sleep", "inf"]


def test_each_pod_names_its_training_container_its_default() -> None:
    j = job()
    worker = b.build_worker(j, 0)["metadata"]["annotations"]
    assert worker == {"n": "v", "kubectl.kubernetes.io/default-container": "worker"}
    # The worker template's choice is the workers' alone: the launcher has one container.
    j.spec.worker.template["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/default-container": "sidecar"
    }
    assert b.build_worker(j, 0)["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/default-container": "sidecar"
    }
    assert b.build_launcher(j)["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/default-container": "launcher"
    }
