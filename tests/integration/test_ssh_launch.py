"""The ssh launch path of DeepSpeedJob and ColossalAIJob, run as kubelet runs it.

Each pod is built by the operator's own builders and run by the pod host
(``tests/integration/podhost``): volumes laid out as kubelet lays them out
(the Secret on a world-writable tmpfs behind ``..data`` symlinks, read-only
mounts, modes), one root file system per container over this machine's
Debian with its stock ``/etc/ssh/sshd_config`` (``StrictModes`` at its
default, nothing overridden anywhere here), the runtime's default
capabilities, a network namespace and address per pod, and the Service's DNS
names. The launchers are stand-ins that take the real ones' path to the
workers: pdsh over OpenSSH for ``deepspeed``, Fabric for ``colossalai run``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders import colossalai as cb
from t9k_operator.builders import deepspeed as db
from t9k_operator.builders import ssh
from t9k_operator.builders.common import PodMode
from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS, SECRETS
from t9k_operator.runtime.sshkeys import generate_keypair
from tests.integration import test_mpijob_launch as mpijob_launch
from tests.integration.jobs import Jobs
from tests.integration.kubelet import MANUAL
from tests.integration.podhost import Image, Node
from tests.integration.podhost.host import NO_HOST_KEYS, STOCK
from tests.integration.test_colossalai_job import COLOSSALAI
from tests.integration.test_deepspeed_job import DEEPSPEED
from tests.kinds import KINDS, kind_table, per_kind

LAUNCHERS = Path(__file__).with_name("launchers")
DEEPSPEED_IMAGE = STOCK.derive(
    "deepspeed", files={"/usr/local/bin/deepspeed": ((LAUNCHERS / "deepspeed").read_text(), 0o755)}
)
COLOSSALAI_IMAGE = STOCK.derive(
    "colossalai",
    files={
        "/usr/local/bin/colossalai": (
            (LAUNCHERS / "colossalai")
            .read_text()
            .replace("/usr/bin/env python3", sys.executable, 1),
            0o755,
        )
    },
)


def ds_job(replicas: int, **config: Any) -> db.Job:
    return db.Job.from_dict(ds_raw(replicas, **config))


def ds_raw(replicas: int, **config: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "DeepSpeedJob",
        "metadata": {"name": "ds", "namespace": "ns", "uid": "uid-ds"},
        "spec": {
            "config": {"run": {"python": ["train.py", "--epochs", "2"]}, **config},
            "worker": {
                "replicas": replicas,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "worker",
                                "image": "deepspeed",
                                "env": [
                                    {"name": "NCCL_DEBUG", "value": "INFO"},
                                    {
                                        "name": "MY_POD",
                                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                                    },
                                ],
                            }
                        ]
                    }
                },
            },
        },
    }


def cj_job(replicas: int, auth: str = "/root/.ssh", sshd: str = "/usr/sbin/sshd") -> cb.Job:
    return cb.Job.from_dict(cj_raw(replicas, auth, sshd))


def cj_raw(replicas: int, auth: str, sshd: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "ColossalAIJob",
        "metadata": {"name": "cj", "namespace": "ns", "uid": "uid-cj"},
        "spec": {
            "ssh": {"authMountPath": auth, "sshdPath": sshd},
            "launcher": {
                "image": "colossalai",
                "workingDir": "/workspace",
                "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
            },
            "worker": {
                "replicas": replicas,
                "procPerWorker": 8,
                "command": ["train.py", "--config", "c.py"],
                "torchArgs": ["--max_restarts=3"],
                "template": {"spec": {"containers": [{"name": "worker", "image": "colossalai"}]}},
            },
        },
    }


def secret_for(job: cb.Job, auth: str = ssh.DEFAULT_AUTH_DIR) -> dict[str, Any]:
    private, public = generate_keypair(f"t9k/{job.namespace}/{job.name}")
    return ssh.ssh_secret(job, private, public, auth)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.close()


def ds_node(node: Node, job: db.Job) -> Node:
    node.add(db.ssh_secret(job, *_keys(job)))
    node.add(db.hostfile_configmap(job))
    return node


def _keys(job: db.Job) -> tuple[str, str]:
    return generate_keypair(f"t9k/ns/{job.name}")


# ------------------------------------------------------------------ DeepSpeed


def test_deepspeed_trains_on_a_stock_image(node: Node) -> None:
    job = ds_job(2, slotsPerWorker=8)
    ds_node(node, job)
    # worker-1's image has no host keys at all: they are made at start.
    w1 = node.run_pod(db.build_pod(job, 1), NO_HOST_KEYS)
    w0 = node.run_pod(db.build_pod(job, 0), DEEPSPEED_IMAGE)
    assert w0.wait("worker", 60) == 0, w0.logs("worker")
    log = w0.logs("worker")
    # pdsh ran a rank on every host of the hostfile, with worker-0's environment.
    for host in ("ds-worker-0", "ds-worker-1"):
        assert re.search(
            rf"^{host}: rank on {host} master=10\.244\.77\.\d+ NCCL_DEBUG=INFO "
            r"args: train\.py --epochs 2$",
            log,
            re.M,
        ), log
    assert "t9k: ssh to ds-worker-1.ds works" in log
    # sshd's own log reaches the containers' stderr.
    assert "Server listening on 0.0.0.0 port 22." in log
    assert "generating them" in w1.logs("worker")
    assert "Server listening on 0.0.0.0 port 22." in w1.logs("worker")


@pytest.mark.parametrize("disable_env", [False, True])
def test_deepspeed_custom_command_trains_and_the_environment_file_follows_the_switch(
    node: Node, disable_env: bool
) -> None:
    custom = (
        "if [ -e /root/.deepspeed_env ]; then echo env file; else echo no env file; fi; "
        "deepspeed --hostfile=/t9k/hostfile custom.py --x 1"
    )
    raw = ds_raw(2, customCommand=custom)
    raw["spec"]["disableCustomEnv"] = disable_env
    job = db.Job.from_dict(raw)
    ds_node(node, job)
    node.run_pod(db.build_pod(job, 1), STOCK)
    w0 = node.run_pod(db.build_pod(job, 0), DEEPSPEED_IMAGE)
    assert w0.wait("worker", 60) == 0, w0.logs("worker")
    log = w0.logs("worker")
    assert re.search(r"^no env file$" if disable_env else r"^env file$", log, re.M), log
    # the custom command, not config.run, reached every host of the hostfile
    for host in ("ds-worker-0", "ds-worker-1"):
        assert re.search(rf"^{host}: rank on {host} .* args: custom\.py --x 1$", log, re.M), log
    if not disable_env:  # the file carried worker-0's environment to the ranks
        assert re.search(r"^ds-worker-1: rank on .* NCCL_DEBUG=INFO ", log, re.M), log


def test_deepspeed_key_files_are_private_and_the_secret_is_not_in_the_training_container(
    node: Node,
) -> None:
    job = ds_job(1)
    ds_node(node, job)
    w = node.run_pod(db.build_pod(job, 0, PodMode(("sleep", "inf"), debug=True)), STOCK)
    out = w.exec(
        "worker",
        [
            "sh",
            "-c",
            "stat -c '%a %u %n' /root/.ssh /root/.ssh/*; "
            "ls /t9k; ls -la /root/.deepspeed_env 2>&1 || true",
        ],
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:5] == [
        "700 0 /root/.ssh",
        "600 0 /root/.ssh/authorized_keys",
        "600 0 /root/.ssh/config",
        "600 0 /root/.ssh/id_ed25519",
        "600 0 /root/.ssh/id_ed25519.pub",
    ]
    assert lines[5] == "hostfile"  # /t9k holds the hostfile only: no key Secret mount
    # The Secret itself, in the init container only, read-only with 0400 files.
    vol = next(v for v in w.pod["spec"]["volumes"] if v["name"] == ssh.KEY_VOLUME)
    assert vol["secret"]["defaultMode"] == 0o400


def test_deepspeed_debug_default_command_lets_replicas_ssh_to_each_other(node: Node) -> None:
    raw = ds_raw(2)
    raw["spec"]["runMode"] = {"debug": {"enabled": True}}
    job = db.Job.from_dict(raw)
    ds_node(node, job)
    pods = [
        node.run_pod(db.build_pod(job, i, PodMode(db.DEBUG_COMMAND, debug=True)), NO_HOST_KEYS)
        for i in (0, 1)
    ]
    for i, p in enumerate(pods):
        other = f"ds-worker-{1 - i}.ds"
        out = p.exec(
            "worker",
            [
                "/bin/bash",
                "-c",
                f"for t in $(seq 50); do ssh {other} hostname && exit 0; sleep 0.2; done; exit 1",
            ],
        )
        assert out.returncode == 0, (out.stderr, p.logs("worker"))
        assert out.stdout.strip() == f"ds-worker-{1 - i}"


def test_deepspeed_wait_names_the_host_and_the_last_error(node: Node) -> None:
    job = ds_job(3)
    ds_node(node, job)
    node.run_pod(db.build_pod(job, 1), STOCK)
    # worker-2 runs sshd with another job's key: ssh is refused.
    other_raw = ds_raw(3)
    other_raw["metadata"]["name"] = "other"
    other = db.Job.from_dict(other_raw)
    node.add(db.ssh_secret(other, *_keys(other)))
    pod2 = db.build_pod(job, 2)
    for v in pod2["spec"]["volumes"]:
        if v["name"] == ssh.KEY_VOLUME:
            v["secret"]["secretName"] = "other-ssh"
    node.run_pod(pod2, STOCK)
    w0 = node.run_pod(
        db.build_pod(job, 0),
        DEEPSPEED_IMAGE,
        env={"T9K_SSH_WAIT_TIMEOUT": "7", "T9K_SSH_REPORT_INTERVAL": "2"},
    )
    assert w0.wait("worker", 60) == 1
    log = w0.logs("worker")
    assert re.search(
        r"t9k: still waiting for ssh to ds-worker-2\.ds after \d+s: "
        r"root@ds-worker-2\.ds: Permission denied \(publickey[^)]*\)\.",
        log,
    ), log
    assert re.search(
        r"t9k: gave up after 7s waiting for ssh to ds-worker-2\.ds; last error: "
        r"root@ds-worker-2\.ds: Permission denied \(publickey[^)]*\)\.",
        log,
    ), log
    assert "rank on" not in log  # deepspeed never ran


def test_deepspeed_wait_for_a_host_that_does_not_resolve(node: Node) -> None:
    job = ds_job(2)
    ds_node(node, job)
    w0 = node.run_pod(
        db.build_pod(job, 0),
        DEEPSPEED_IMAGE,
        env={"T9K_SSH_WAIT_TIMEOUT": "3", "T9K_SSH_REPORT_INTERVAL": "1"},
    )
    assert w0.wait("worker", 60) == 1
    assert re.search(
        r"gave up after 3s waiting for ssh to ds-worker-1\.ds; last error: "
        r"ssh: Could not resolve hostname ds-worker-1\.ds",
        w0.logs("worker"),
    )


def test_the_old_layout_is_refused_by_a_stock_sshd(node: Node) -> None:
    """The pod host reproduces the defect: the Secret mounted straight at
    /root/.ssh (as the operator did before) is refused under StrictModes."""
    job = ds_job(2)
    ds_node(node, job)

    def old_layout(pod: dict[str, Any]) -> dict[str, Any]:
        spec = pod["spec"]
        spec["initContainers"] = [
            c for c in spec["initContainers"] if c["name"] != ssh.SETUP_CONTAINER
        ]
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] != ssh.AUTH_VOLUME]
        for v in spec["volumes"]:
            if v["name"] == ssh.KEY_VOLUME:
                v["secret"]["defaultMode"] = 0o600
        for m in spec["containers"][0]["volumeMounts"]:
            if m["name"] == ssh.AUTH_VOLUME:
                m.update(name=ssh.KEY_VOLUME, readOnly=True)
        return pod

    w1 = node.run_pod(old_layout(db.build_pod(job, 1)), STOCK)
    w0 = node.run_pod(
        old_layout(db.build_pod(job, 0)), DEEPSPEED_IMAGE, env={"T9K_SSH_WAIT_TIMEOUT": "3"}
    )
    assert w0.wait("worker", 60) == 1
    log = w0.logs("worker")  # worker-0 is the first host it tries: itself
    assert "Authentication refused: bad ownership or modes for directory /root/.ssh" in log
    assert re.search(
        r"gave up after 3s waiting for ssh to ds-worker-0\.ds; last error: "
        r"root@ds-worker-0\.ds: Permission denied \(publickey",
        log,
    ), log
    assert "Server listening" in w1.logs("worker")


def test_an_image_without_bash_fails_at_once_with_a_clear_message(node: Node) -> None:
    job = ds_job(1)
    ds_node(node, job)
    no_bash = STOCK.derive("no-bash", remove=["/bin/bash"])
    w = node.run_pod(db.build_pod(job, 0), no_bash)
    assert w.phase == "Failed"
    assert "t9k: this image has no /bin/bash" in w.logs(ssh.SETUP_CONTAINER)


def test_an_image_without_pdsh_or_deepspeed_says_so(node: Node) -> None:
    job = ds_job(1)
    ds_node(node, job)
    no_pdsh = DEEPSPEED_IMAGE.derive("no-pdsh", remove=["/usr/bin/pdsh"])
    w = node.run_pod(db.build_pod(job, 0), no_pdsh)
    assert w.wait("worker", 30) == 1
    assert "t9k: pdsh is not on PATH in this image" in w.logs("worker")
    w = node.run_pod(
        db.build_pod(ds_job(1), 0)
        | {"metadata": {**db.build_pod(job, 0)["metadata"], "name": "ds-worker-0b"}},
        STOCK,
    )
    assert w.wait("worker", 30) == 1
    assert "t9k: deepspeed is not on PATH in this image" in w.logs("worker")


# ------------------------------------------------------------------ ColossalAI

AUTH_CASES = [
    ("/root/.ssh", "/usr/sbin/sshd", STOCK),
    ("/home/trainer/.ssh", "/usr/sbin/sshd", STOCK),
    # sshd installed somewhere else, and the key outside any home directory
    (
        "/etc/t9k-keys",
        "/opt/openssh/sbin/sshd",
        STOCK.derive("sshd-in-opt", symlinks={"/opt/openssh/sbin/sshd": "/usr/sbin/sshd"}),
    ),
]


@pytest.mark.parametrize(("auth", "sshd", "worker_image"), AUTH_CASES)
def test_colossalai_trains_on_a_stock_image(
    node: Node, auth: str, sshd: str, worker_image: Image
) -> None:
    job = cj_job(2, auth, sshd)
    node.add(secret_for(job, auth))
    node.add(cb.hostfile_configmap(job))
    workers = [
        node.run_pod(
            cb.build_worker(job, i),
            worker_image.derive(f"{worker_image.name}-ws", dirs={"/workspace": 0o755}),
        )
        for i in (0, 1)
    ]
    launcher = node.run_pod(cb.build_launcher(job), COLOSSALAI_IMAGE)
    assert_colossalai_ran(launcher, workers)


def assert_colossalai_ran(launcher: Any, workers: list[Any]) -> None:
    """The launcher of job ``cj`` (two workers, 8 processes each, train.py
    --config c.py in /workspace, torchrun's max_restarts=3) ran torchrun on
    each worker through its sshd, and ended well."""
    assert launcher.wait("launcher", 90) == 0, launcher.logs("launcher")
    log = launcher.logs("launcher")
    for rank in (0, 1):
        assert (
            f"node_rank={rank} nnodes=2 on cj-worker-{rank} in /workspace "
            "master=cj-worker-0.cj:29500 nproc=8 extra=max_restarts=3 "
            "cmd=train.py --config c.py"
        ) in log, log
    for w in workers:
        assert "Server listening on 0.0.0.0 port 22." in w.logs("worker")


def test_colossalai_launcher_reports_a_missing_worker(node: Node) -> None:
    job = cj_job(2)
    node.add(secret_for(job))
    node.add(cb.hostfile_configmap(job))
    node.run_pod(cb.build_worker(job, 0), STOCK)
    launcher = node.run_pod(
        cb.build_launcher(job),
        COLOSSALAI_IMAGE,
        env={"T9K_SSH_WAIT_TIMEOUT": "4", "T9K_SSH_REPORT_INTERVAL": "1"},
    )
    assert launcher.wait("launcher", 60) == 1
    log = launcher.logs("launcher")
    assert "t9k: ssh to cj-worker-0.cj works" in log
    assert re.search(
        r"t9k: still waiting for ssh to cj-worker-1\.cj after \d+s: "
        r"ssh: Could not resolve hostname cj-worker-1\.cj",
        log,
    ), log
    assert "gave up after 4s waiting for ssh to cj-worker-1.cj; last error: ssh: Could" in log


def test_colossalai_auth_dir_below_a_world_writable_directory_fails_clearly(node: Node) -> None:
    job = cj_job(1, "/data/keys")
    node.add(secret_for(job, "/data/keys"))
    node.add(cb.hostfile_configmap(job))
    image = STOCK.derive("world-writable-data", dirs={"/data": 0o777})
    w = node.run_pod(cb.build_worker(job, 0), image)
    assert w.phase == "Failed"
    assert (
        "sshd will refuse the job key at /data/keys: its parent /data (mode 777, owner uid 0)"
        " may be written by others"
    ) in w.logs(ssh.SETUP_CONTAINER)


# ------------------------------------------------ through the real operator


def _objects_from_the_cluster(admin: KubeClient, namespace: str, job: str) -> list[dict[str, Any]]:
    secret = admin.get(SECRETS, f"{job}-ssh", namespace)
    hostfile = admin.get(CONFIGMAPS, f"{job}-hostfile", namespace)
    root_ca = admin.get(CONFIGMAPS, "kube-root-ca.crt", namespace)
    return [secret, hostfile, root_ca]


@pytest.mark.usefixtures("operator")
def test_pods_the_operator_created_train_on_a_stock_image(
    admin: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """A DeepSpeedJob and a ColossalAIJob submitted to the local cluster: the
    pods, Secrets and ConfigMaps exactly as the API server stored them (after
    admission and defaulting, the ServiceAccount volume included) run here."""
    ds = ds_raw(2)
    ds["metadata"] = {"name": "ds"}
    ds["spec"]["worker"]["template"]["metadata"] = {"annotations": dict(MANUAL)}
    cj = cj_raw(2, "/home/trainer/.ssh", "/usr/sbin/sshd")
    cj["metadata"] = {"name": "cj"}
    cj["spec"]["worker"]["template"]["metadata"] = {"annotations": dict(MANUAL)}
    Jobs(admin, namespace, DEEPSPEED).create(ds)
    Jobs(admin, namespace, COLOSSALAI).create(cj)
    ds_pods = Jobs(admin, namespace, DEEPSPEED).wait_pods("ds", ["ds-worker-0", "ds-worker-1"])
    cj_pods = Jobs(admin, namespace, COLOSSALAI).wait_pods(
        "cj", ["cj-worker-0", "cj-worker-1", "cj-launcher"]
    )
    objects = [
        *_objects_from_the_cluster(admin, namespace, "ds"),
        *_objects_from_the_cluster(admin, namespace, "cj"),
    ]
    node = Node(tmp_path, namespace, objects)
    try:
        worker_image = STOCK.derive("workspace", dirs={"/workspace": 0o755})
        node.run_pod(ds_pods["ds-worker-1"], NO_HOST_KEYS)
        w0 = node.run_pod(ds_pods["ds-worker-0"], DEEPSPEED_IMAGE)
        for i in (0, 1):
            node.run_pod(cj_pods[f"cj-worker-{i}"], worker_image)
        launcher = node.run_pod(cj_pods["cj-launcher"], COLOSSALAI_IMAGE)
        assert w0.wait("worker", 60) == 0, w0.logs("worker")
        assert re.search(r"^ds-worker-1: rank on ds-worker-1 ", w0.logs("worker"), re.M)
        assert launcher.wait("launcher", 90) == 0, launcher.logs("launcher")
        assert "node_rank=1 nnodes=2 on cj-worker-1 in /workspace" in launcher.logs("launcher")
    finally:
        node.close()


LAUNCHED: dict[str, str] = kind_table("SSH_LAUNCH_TEST")
"""each kind whose replicas talk over ssh -> the test here that trains through its
launch path (its ``SSH_LAUNCH_TEST`` in tests/kinds/<kind>.py)."""


def test_every_ssh_kind_has_its_launch_path_run_here() -> None:
    per_kind(LAUNCHED, f"{__name__}.LAUNCHED", [k.crd.kind for k in KINDS if k.uses_ssh])
    here = {**globals(), **vars(mpijob_launch)}  # MPIJob's launch path has a module of its own
    assert [test for test in LAUNCHED.values() if not callable(here.get(test))] == []
