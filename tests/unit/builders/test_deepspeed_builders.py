"""DeepSpeedJob children, built from parsed jobs (pure)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.deepspeed import DeepSpeedRunMode, effective_slots, effective_worker_count
from t9k_operator.builders import deepspeed as b
from t9k_operator.builders.common import PodMode
from t9k_operator.kinds.deepspeed import DeepSpeedKind, spec_error


def job(replicas: int = 2, config: dict[str, Any] | None = None, **spec: Any) -> b.Job:
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "DeepSpeedJob",
            "metadata": {"name": "ds", "namespace": "ns", "uid": "uid-1"},
            "spec": {
                "config": config
                if config is not None
                else {"run": {"python": "/t9k/mnt/train.py"}},
                "worker": {
                    "replicas": replicas,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "sidecar", "image": "s"},
                                {
                                    "name": "worker",
                                    "image": "deepspeed/deepspeed:v072",
                                    "env": [{"name": "A", "value": "1"}],
                                    "volumeMounts": [{"name": "code", "mountPath": "/t9k/mnt"}],
                                },
                            ]
                        }
                    },
                },
                **spec,
            },
        }
    )


@pytest.mark.parametrize(
    ("replicas", "slots", "expected"),
    [
        (1, 1, "ds-worker-0.ds slots=1\n"),
        (1, 8, "ds-worker-0.ds slots=8\n"),
        (4, 1, "".join(f"ds-worker-{i}.ds slots=1\n" for i in range(4))),
        (4, 8, "".join(f"ds-worker-{i}.ds slots=8\n" for i in range(4))),
    ],
)
def test_hostfile_bytes(replicas: int, slots: int, expected: str) -> None:
    j = job(replicas, {"slotsPerWorker": slots, "run": {"python": "t.py"}})
    assert b.hostfile(j) == expected
    cm = b.hostfile_configmap(j)
    assert cm["metadata"]["name"] == "ds-hostfile"
    assert cm["data"] == {"hostfile": expected}


def test_seed_spelling_slot_per_worker_and_precedence() -> None:
    assert b.hostfile(job(1, {"slotPerWorker": 4, "run": {"python": "t"}})).endswith("slots=4\n")
    both = job(1, {"slotPerWorker": 4, "slotsPerWorker": 2, "run": {"python": "t"}})
    assert effective_slots(both.spec) == 2 and b.hostfile(both).endswith("slots=2\n")
    assert b.hostfile(job(1, {"run": {"python": "t"}})) == "ds-worker-0.ds slots=1\n"


@pytest.mark.parametrize(
    ("config", "tail"),
    [
        ({"run": {"python": "train.py --epochs 3"}}, ["train.py", "--epochs", "3"]),
        ({"run": {"python": ["train.py", "--lr", "0.1"]}}, ["train.py", "--lr", "0.1"]),
        ({"run": {"module": "pkg.train --x"}}, ["--module", "pkg.train", "--x"]),
        ({"run": {"exec": ["./bin/train", "-v"]}}, ["--no_python", "./bin/train", "-v"]),
    ],
)
def test_run_forms(config: dict[str, Any], tail: list[str]) -> None:
    assert b.deepspeed_command(job(2, config)) == ["deepspeed", "--hostfile=/t9k/hostfile", *tail]


@pytest.mark.parametrize("autotune", ["none", "run", "tune"])
def test_local_rank_autotune_and_other_args(autotune: str) -> None:
    cfg = {
        "localRank": False,
        "autotune": autotune,
        "otherArgs": ["--master_port", "12346"],
        "run": {"python": "t.py"},
    }
    flags = [] if autotune == "none" else [f"--autotuning={autotune}"]
    assert b.deepspeed_command(job(1, cfg)) == [
        "deepspeed",
        "--hostfile=/t9k/hostfile",
        "--no_local_rank",
        *flags,
        "--master_port",
        "12346",
        "t.py",
    ]


def test_ssh_secret() -> None:
    s = b.ssh_secret(job(), "PRIVATE", "ssh-ed25519 AAAA job")
    assert s["metadata"]["name"] == "ds-ssh"
    assert s["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    data = s["stringData"]
    assert data["id_ed25519"] == "PRIVATE"
    assert data["authorized_keys"] == data["id_ed25519.pub"] == "ssh-ed25519 AAAA job"
    assert "StrictHostKeyChecking no" in data["config"]
    assert "UserKnownHostsFile /dev/null" in data["config"]


def test_pods_mount_key_and_hostfile_in_the_training_container() -> None:
    j = job(3)
    pod = b.build_pod(j, 1)
    sidecar, worker = pod["spec"]["containers"]
    assert "volumeMounts" not in sidecar
    mounts = {m["mountPath"]: m for m in worker["volumeMounts"]}
    assert mounts["/root/.ssh"] == {"name": "t9k-ssh", "mountPath": "/root/.ssh"}
    assert mounts["/t9k/hostfile"]["subPath"] == "hostfile"
    assert mounts["/t9k/mnt"]["name"] == "code"
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    # The Secret is mounted only in the setup init container, which copies the
    # keys into the memory-backed emptyDir the training container mounts.
    assert vols["t9k-ssh-key"]["secret"] == {"secretName": "ds-ssh", "defaultMode": 0o400}
    assert vols["t9k-ssh"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Mi"}
    assert vols["t9k-hostfile"]["configMap"] == {"name": "ds-hostfile"}
    setup = pod["spec"]["initContainers"][0]
    assert setup["name"] == "t9k-ssh-setup" and setup["image"] == worker["image"]
    # Where its image comes from, and its log as its termination message: what
    # the job's condition says when it fails (kinds/pods.py).
    assert setup["env"] == [{"name": "T9K_IMAGE_FROM", "value": "spec.worker.template"}]
    assert setup["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert {m["name"]: m["mountPath"] for m in setup["volumeMounts"]} == {
        "t9k-ssh-key": "/t9k/ssh-key",
        "t9k-ssh": "/root/.ssh",
    }
    assert worker["command"][:2] == ["/bin/bash", "-c"]
    assert worker["command"][2].rstrip().splitlines()[-1] == "exec /usr/sbin/sshd -D -e"
    assert "exec deepspeed" not in worker["command"][2]
    assert pod["spec"]["hostname"] == "ds-worker-1" and pod["spec"]["subdomain"] == "ds"


def test_worker_zero_launches() -> None:
    script = b.build_pod(job(2), 0)["spec"]["containers"][1]["command"][2]
    assert script.rstrip().endswith("exec deepspeed --hostfile=/t9k/hostfile /t9k/mnt/train.py")
    assert "T9K_SSH_WAIT_TIMEOUT:=300" in script
    assert "gave up after" in script
    assert b.build_pod(job(2), 0)["metadata"]["labels"]["t9k.dev/role"] == "launcher"


def test_debug_pod_runs_sshd() -> None:
    assert b.DEBUG_COMMAND == ("/usr/sbin/sshd", "-D")
    debug = DeepSpeedRunMode.model_fields["debug"].description or ""
    assert f"`{' '.join(b.DEBUG_COMMAND)}`" in debug  # what kubectl explain says
    pod = b.build_pod(job(2), 0, PodMode(command=b.DEBUG_COMMAND, debug=True))
    command = pod["spec"]["containers"][1]["command"]
    # /usr/sbin/sshd -D, after making a stock image ready for it, logging to stderr
    assert command[:2] == ["/bin/bash", "-c"]
    assert command[2].rstrip().splitlines()[-1] == "exec /usr/sbin/sshd -D -e"
    assert "ssh-keygen -A" in command[2] and "mkdir -p /run/sshd" in command[2]
    own_sshd = ("/usr/sbin/sshd", "-D", "-p", "2222")
    own = b.build_pod(job(2), 0, PodMode(command=own_sshd, debug=True))
    assert own["spec"]["containers"][1]["command"] == ["/usr/sbin/sshd", "-D", "-p", "2222"]


def test_elastic_worker_count_and_hostfile_follow_expected() -> None:
    elastic = {"enabled": True, "minReplicas": 1, "maxReplicas": 3, "expectedReplicas": 3}
    j = job(2, elastic=elastic)
    assert effective_worker_count(j.spec) == 3
    assert b.hostfile(j).count("\n") == 3


# -- spec.config.customCommand and spec.disableCustomEnv ---------------------------------

CUSTOM = "cd /t9k/mnt && deepspeed --hostfile=/t9k/hostfile --num_gpus=2 train.py --lr '1e-4'"
ENV_FILE_WRITE = ': > "/root/.deepspeed_env"'


def launcher_script(j: b.Job) -> str:
    return str(b.build_pod(j, 0)["spec"]["containers"][1]["command"][2])


def test_a_custom_command_is_what_worker_zero_launches_through_bash() -> None:
    j = job(2, {"customCommand": CUSTOM, "slotsPerWorker": 2})
    script = launcher_script(j)
    last = script.rstrip().splitlines()[-1]
    assert last == (
        "exec /bin/bash -c 'cd /t9k/mnt && deepspeed --hostfile=/t9k/hostfile --num_gpus=2 "
        "train.py --lr '\"'\"'1e-4'\"'\"''"
    )
    # the command may be anything: deepspeed and pdsh are not required of the image,
    # ssh still is (worker-0 waits until every worker answers it)
    assert "command -v deepspeed" not in script and "command -v pdsh" not in script
    assert "command -v ssh " in script and "gave up after" in script
    assert ENV_FILE_WRITE in script
    # slotsPerWorker still makes the hostfile
    assert b.hostfile(j) == "ds-worker-0.ds slots=2\nds-worker-1.ds slots=2\n"
    worker = b.build_pod(j, 1)["spec"]["containers"][1]["command"][2]
    assert worker.rstrip().splitlines()[-1] == "exec /usr/sbin/sshd -D -e"


def test_a_custom_command_voids_the_other_options() -> None:
    config = {
        "customCommand": "deepspeed --hostfile=/t9k/hostfile t.py",
        "run": {"module": "pkg.train"},
        "localRank": False,
        "autotune": "tune",
        "otherArgs": ["--master_port=12346"],
    }
    last = launcher_script(job(2, config)).rstrip().splitlines()[-1]
    assert last == "exec /bin/bash -c 'deepspeed --hostfile=/t9k/hostfile t.py'"


@pytest.mark.parametrize("config", [None, {"customCommand": CUSTOM}])
def test_disable_custom_env_leaves_the_environment_file_unwritten(
    config: dict[str, Any] | None,
) -> None:
    default = launcher_script(job(2, config))
    assert ENV_FILE_WRITE in default
    assert 'printf \'%s=%s\\n\' "$name" "$value" >> "/root/.deepspeed_env"' in default
    disabled = launcher_script(job(2, config, disableCustomEnv=True))
    assert ".deepspeed_env" not in disabled
    assert disabled.rstrip().splitlines()[-1] == default.rstrip().splitlines()[-1]
    assert "gave up after" in disabled  # still waits for every worker before launching
    off = launcher_script(job(2, config, disableCustomEnv=False))
    assert off == default


def _stored(config: dict[str, Any]) -> dict[str, Any]:
    raw = job(1).model_dump(by_alias=True, exclude_none=True)
    raw["spec"]["config"] = config
    return raw


def test_options_a_custom_command_voids_are_said_in_a_warning() -> None:
    kind = DeepSpeedKind()
    # as the API server stores them: its defaults filled in
    defaults = {"localRank": True, "autotune": "none", "otherArgs": []}
    assert kind.fields_not_acted_on(_stored({"customCommand": "c", **defaults})) == []
    assert kind.fields_not_acted_on(_stored({"run": {"python": "t.py"}, "autotune": "tune"})) == []
    voided = {
        "customCommand": "c",
        "slotsPerWorker": 2,
        "run": {"python": "t.py"},
        "localRank": False,
        "autotune": "run",
        "otherArgs": ["--master_port=1"],
    }
    assert kind.fields_not_acted_on(_stored(voided)) == [
        f"spec.config.{key} (spec.config.customCommand replaces it)"
        for key in ("run", "localRank", "autotune", "otherArgs")
    ]


def test_a_custom_command_is_enough_to_train_and_may_not_be_empty() -> None:
    j = job(2, {"customCommand": "deepspeed t.py"})
    assert j.spec.launch_given
    assert spec_error(j.spec) is None
    with pytest.raises(ValidationError, match="customCommand"):
        job(2, {"customCommand": "", "run": {"python": "t.py"}})
    with pytest.raises(ValidationError, match=r"unless spec\.config\.customCommand"):
        job(2, {"slotsPerWorker": 1})
