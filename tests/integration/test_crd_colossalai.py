"""The generated ColossalAIJob CRD on a real API server.

It must take every example of the product doc (and the shapes of real users'
files, e.g. a launcher of only image and workingDir and no ``spec.ssh``) as
written and store them unpruned, fill in the documented defaults, refuse bad
specs at admission with a message naming the field, accept a debug-mode job
without ``worker.command``, and serve kubectl's short names, categories,
printer columns and explain text.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from t9k_operator.api.colossalai import (
    CRD,
    MSG_AUTH_MOUNT_PATH,
    MSG_AUTH_MOUNT_PLACE,
    MSG_COMMAND_REQUIRED,
    MSG_ONE_LAYOUT,
    MSG_POD_NAME_LENGTH,
    MSG_RESUME_ARGS_NEED_COMMAND,
    MSG_SOME_LAYOUT,
    MSG_SSHD_PATH,
    ColossalAIJobObject,
    SSHConfig,
)
from tests.integration.cluster import Cluster, wait_for
from tests.integration.crd_helpers import (
    applied,
    install_crd,
    refused,
    stored_object,
)
from tests.unit.api.helpers import load
from tests.unit.api.test_colossalai_models import (
    IMAGE,
    SPEC_EXAMPLES,
    USER_EXAMPLES,
)

JOB = "colossalai-example"


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def stored(cluster: Cluster, namespace: str, name: str = JOB) -> dict[str, Any]:
    return stored_object(cluster, CRD, namespace, name)


def test_users_file_without_ssh_applies_with_the_default_paths(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    applied(cluster, namespace, USER_EXAMPLES["launcher-image-workdir"])
    obj = stored(cluster, namespace)
    assert obj["spec"]["launcher"] == {"image": IMAGE, "workingDir": "/workspace"}
    assert "ssh" not in obj["spec"]  # optional objects stay absent ...
    parsed = ColossalAIJobObject.from_dict(obj)
    assert parsed.spec.ssh == SSHConfig()  # ... and the operator uses the defaults
    assert parsed.spec.ssh.sshd_path == "/usr/sbin/sshd"
    assert parsed.spec.ssh.auth_mount_path == "/root/.ssh"
    # An empty spec.ssh gets both defaults from the server.
    with_ssh = load(USER_EXAMPLES["launcher-image-workdir"])
    with_ssh["spec"]["ssh"] = {}
    applied(cluster, namespace, yaml.safe_dump(with_ssh))
    assert stored(cluster, namespace)["spec"]["ssh"] == {
        "authMountPath": "/root/.ssh",
        "sshdPath": "/usr/sbin/sshd",
    }


def test_users_fields_are_kept(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, USER_EXAMPLES["full"])
    spec = stored(cluster, namespace)["spec"]
    assert spec["ssh"] == {
        "authMountPath": "/home/trainer/.ssh",
        "sshdPath": "/opt/openssh/sbin/sshd",
    }
    env = spec["launcher"]["env"]
    assert env[1]["valueFrom"]["secretKeyRef"] == {
        "name": "wandb",
        "key": "api-key",
        "optional": True,
    }
    assert env[2]["valueFrom"]["fieldRef"] == {"fieldPath": "metadata.name"}
    assert spec["launcher"]["resources"]["claims"] == [{"name": "shared"}]
    assert spec["worker"]["torchArgs"] == ["--max_restarts=0", "--rdzv_conf=timeout=900"]
    pod = spec["worker"]["template"]["spec"]
    assert pod["hostIPC"] is True
    assert pod["containers"][1]["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
    assert spec["runPolicy"] == {
        "cleanUpWorkers": True,
        "activeDeadlineSeconds": 86400,
        "backoffLimit": 1,
    }


def test_defaults_are_filled_by_the_server(cluster: Cluster, crd: None, namespace: str) -> None:
    text = SPEC_EXAMPLES["clean-up"].replace("    replicas: 2\n", "")
    applied(cluster, namespace, text.replace("    cleanUpWorkers: true\n", "    {}\n"))
    spec = stored(cluster, namespace)["spec"]
    worker = spec["worker"]
    assert (worker["replicas"], worker["procPerWorker"], worker["torchArgs"]) == (1, 1, [])
    assert spec["runPolicy"] == {"cleanUpWorkers": False}
    assert "backoffLimit" not in spec["runPolicy"]
    for absent in ("ssh", "scheduler", "runMode"):
        assert absent not in spec, absent
    assert spec["launcher"] == {"image": IMAGE}


def test_debug_job_without_command_is_accepted(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, SPEC_EXAMPLES["debug-2"])
    spec = stored(cluster, namespace)["spec"]
    assert "command" not in spec["worker"]
    assert spec["runMode"]["debug"] == {"enabled": True, "replicaSpecs": []}
    # Leaving debug mode needs worker.command.
    stderr = refused(
        cluster, namespace, SPEC_EXAMPLES["debug-2"].replace("enabled: true", "enabled: false")
    )
    assert "spec.worker.command" in stderr and MSG_COMMAND_REQUIRED in stderr
    leave = load(SPEC_EXAMPLES["debug-2"])
    leave["spec"]["runMode"]["debug"]["enabled"] = False
    leave["spec"]["worker"]["command"] = ["train.py"]
    applied(cluster, namespace, yaml.safe_dump(leave))


def test_kubectl_explain_shows_descriptions(cluster: Cluster, crd: None) -> None:
    def explain() -> str:
        proc = cluster.kubectl("explain", "colossalaijob.spec.ssh", check=False)
        return proc.stdout if proc.returncode == 0 and "sshdPath" in proc.stdout else ""

    out = wait_for(explain, 60, "kubectl explain colossalaijob.spec.ssh", 1)
    assert "authMountPath" in out and "absolute" in out
    worker = cluster.kubectl("explain", "caij.spec.worker").stdout
    for field in ("procPerWorker", "command", "torchArgs", "template"):
        assert field in worker, field
    debug = cluster.kubectl("explain", "caij.spec.runMode.debug").stdout
    assert "sleep inf" in debug
    policy = cluster.kubectl("explain", "caij.spec.runPolicy").stdout
    assert "cleanUpWorkers" in policy and "not acted on" in policy


# -- invalid specs are refused, naming the field -------------------------------------------------


def _job(
    spec: dict[str, Any],
    name: str = JOB,
    worker: dict[str, Any] | None = None,
    template: Any = None,
) -> str:
    """A job with ``spec`` over a minimal valid spec (None removes a field); ``worker``
    changes fields of spec.worker, ``template`` replaces its template."""
    base_worker: dict[str, Any] = {
        "replicas": 2,
        "command": ["train.py"],
        "template": {"spec": {"containers": [{"name": "worker", "image": IMAGE}]}},
    }
    if template is not None:
        base_worker["template"] = template
    base_worker.update(worker or {})
    body_spec: dict[str, Any] = {
        "launcher": {"image": IMAGE, "workingDir": "/workspace"},
        "worker": {k: v for k, v in base_worker.items() if v is not None},
        **spec,
    }
    body = {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": {k: v for k, v in body_spec.items() if v is not None},
    }
    return yaml.safe_dump(body)


_SSH = "spec.ssh"
_WORKER = "spec.worker"
_CONTAINERS = "spec.worker.template.spec.containers"

INVALID: dict[str, tuple[str, list[str]]] = {
    # spec.ssh: absolute paths only
    "sshd-path-relative": (
        _job({"ssh": {"sshdPath": "usr/sbin/sshd"}}),
        [f"{_SSH}.sshdPath", MSG_SSHD_PATH],
    ),
    "sshd-path-bare-name": (
        _job({"ssh": {"sshdPath": "sshd"}}),
        [f"{_SSH}.sshdPath", MSG_SSHD_PATH],
    ),
    "auth-mount-path-relative": (
        _job({"ssh": {"authMountPath": ".ssh"}}),
        [f"{_SSH}.authMountPath", MSG_AUTH_MOUNT_PATH],
    ),
    "auth-mount-path-home": (
        _job({"ssh": {"authMountPath": "~/.ssh"}}),
        [f"{_SSH}.authMountPath", MSG_AUTH_MOUNT_PATH],
    ),
    # sshd's StrictModes would refuse the key below a world-writable /tmp
    "auth-mount-path-in-tmp": (
        _job({"ssh": {"authMountPath": "/tmp/keys"}}),
        [f"{_SSH}.authMountPath", MSG_AUTH_MOUNT_PLACE],
    ),
    "auth-mount-path-dot-dot": (
        _job({"ssh": {"authMountPath": "/root/../tmp/.ssh"}}),
        [f"{_SSH}.authMountPath", MSG_AUTH_MOUNT_PLACE],
    ),
    "auth-mount-path-root": (
        _job({"ssh": {"authMountPath": "/"}}),
        [f"{_SSH}.authMountPath", MSG_AUTH_MOUNT_PLACE],
    ),
    "auth-mount-path-operator-own": (
        _job({"ssh": {"authMountPath": "/t9k/keys"}}),
        [f"{_SSH}.authMountPath", MSG_AUTH_MOUNT_PLACE],
    ),
    # spec.worker
    "proc-per-worker-zero": (
        _job({}, worker={"procPerWorker": 0}),
        [f"{_WORKER}.procPerWorker", "greater than or equal to 1"],
    ),
    "replicas-zero": (
        _job({}, worker={"replicas": 0}),
        [f"{_WORKER}.replicas", "greater than or equal to 1"],
    ),
    "no-container": (
        _job({}, template={"spec": {"containers": []}}),
        [_CONTAINERS, "at least 1 items"],
    ),
    "template-spec-without-containers": (
        _job({}, template={"spec": {"restartPolicy": "Never"}}),
        [_CONTAINERS, "Required value"],
    ),
    "template-without-spec": (
        _job({}, template={"metadata": {"labels": {"a": "b"}}}),
        ["spec.worker.template.spec", "Required value"],
    ),
    "no-template": (
        _job({}, worker={"template": None}),
        [f"{_WORKER}.template", "Required value"],
    ),
    # Neither layout whole: spec.launcher and spec.worker go together.
    "no-worker": (_job({"worker": None}), [MSG_SOME_LAYOUT]),
    "no-command": (
        _job({}, worker={"command": None}),
        [f"{_WORKER}.command", MSG_COMMAND_REQUIRED],
    ),
    "empty-command": (
        _job({}, worker={"command": []}),
        [f"{_WORKER}.command", MSG_COMMAND_REQUIRED],
    ),
    "no-command-paused": (
        _job({"runMode": {"pause": {"enabled": True}}}, worker={"command": None}),
        [f"{_WORKER}.command", MSG_COMMAND_REQUIRED],
    ),
    # spec.launcher
    "no-launcher": (_job({"launcher": None}), [MSG_SOME_LAYOUT]),
    "mixed-layouts": (_job({"torchConfig": {"script": ["train.py"]}}), [MSG_ONE_LAYOUT]),
    "launcher-without-image": (
        _job({"launcher": {"workingDir": "/workspace"}}),
        ["spec.launcher.image", "Required value"],
    ),
    "launcher-empty-image": (
        _job({"launcher": {"image": ""}}),
        ["spec.launcher.image", "at least 1 chars"],
    ),
    "env-without-name": (
        _job({"launcher": {"image": IMAGE, "env": [{"value": "x"}]}}),
        ["spec.launcher.env[0].name", "Required value"],
    ),
    "env-value-not-a-string": (
        _job({"launcher": {"image": IMAGE, "env": [{"name": "NUM", "value": 1}]}}),
        # Server-side apply's typed patch refuses it before validation does.
        ["spec.launcher.env[0].value", "string"],
    ),
    # runPolicy
    "backoff-limit-negative": (
        _job({"runPolicy": {"backoffLimit": -1}}),
        ["spec.runPolicy.backoffLimit", "greater than or equal to 0"],
    ),
    "deadline-zero": (
        _job({"runPolicy": {"activeDeadlineSeconds": 0}}),
        ["spec.runPolicy.activeDeadlineSeconds", "greater than or equal to 1"],
    ),
    # names
    "name-not-a-dns-1035-label": (_job({}, name="1st-job"), ["metadata.name", "DNS-1035"]),
    "name-too-long-for-the-launcher": (
        _job({}, name="c" + "x" * 54, worker={"replicas": 1}),
        ["metadata.name", MSG_POD_NAME_LENGTH],
    ),
    "name-too-long-for-the-last-worker": (
        _job({}, name="c" + "x" * 53, worker={"replicas": 11}),
        ["metadata.name", MSG_POD_NAME_LENGTH],
    ),
    # a resume's args alone would be dropped (the operator's scripts take none)
    "resume-args-without-command": (
        _job({"runMode": {"pause": {"resumeSpecs": [{"type": "worker", "args": ["--x"]}]}}}),
        ["spec.runMode.pause.resumeSpecs", MSG_RESUME_ARGS_NEED_COMMAND],
    ),
}


@pytest.mark.parametrize(
    "spec",
    [
        {"ssh": {"sshdPath": "/usr/bin/sshd", "authMountPath": "/home/u/.ssh"}},
        {
            "runMode": {
                "pause": {
                    "resumeSpecs": [
                        {"type": "launcher", "command": ["bash", "-c", "resume"], "args": ["x"]}
                    ]
                }
            }
        },
        {"runMode": {"debug": {"enabled": True}}, "worker": None},
        {"launcher": {"image": IMAGE, "env": [{"name": "A", "value": ""}], "resources": {}}},
    ],
)
def test_valid_variants_are_accepted(
    cluster: Cluster, crd: None, namespace: str, spec: dict[str, Any]
) -> None:
    worker = {"command": None} if "worker" in spec else None
    applied(
        cluster, namespace, _job({k: v for k, v in spec.items() if k != "worker"}, worker=worker)
    )


def test_longest_names_that_fit_are_accepted(cluster: Cluster, crd: None, namespace: str) -> None:
    for name, replicas in (("c" + "x" * 53, 10), ("c" + "x" * 52, 11)):
        applied(cluster, namespace, _job({}, name=name, worker={"replicas": replicas}))
        assert stored(cluster, namespace, name)["metadata"]["name"] == name
