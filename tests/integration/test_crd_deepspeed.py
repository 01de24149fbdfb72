"""The generated DeepSpeedJob CRD on a real API server.

It must take every example of the product doc (and the shapes of real users'
files) as written and store them unpruned, refuse bad specs at admission with
a message naming the field, accept a debug-mode job without ``config``, and
serve kubectl's short names, categories, printer columns and scale.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from t9k_operator.api.deepspeed import (
    CRD,
    MSG_POD_NAME_LENGTH,
    MSG_RESERVED_MOUNTS,
    MSG_RESUME_ARGS_NEED_COMMAND,
    MSG_RUN_REQUIRED,
    DeepSpeedJobObject,
)
from t9k_operator.api.deepspeed_config import (
    MSG_LAUNCHER_PDSH,
    MSG_RESERVED_ARGS,
)
from t9k_operator.api.specs import (
    MSG_ELASTIC_BOUNDS_REQUIRED,
    MSG_ELASTIC_EXPECTED,
    MSG_ELASTIC_MIN_MAX,
)
from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import Invalid, KubeClient
from tests.integration.cluster import Cluster, wait_for
from tests.integration.crd_helpers import (
    applied,
    assert_stored_as_sent,
    install_crd,
    refused,
    refused_for_nameless_container,
    stored_object,
)
from tests.manual_examples import MANUALS_2025, whole_jobs
from tests.unit.api.helpers import load
from tests.unit.api.test_deepspeed_models import (
    IMAGE,
    SPEC_EXAMPLES,
    USER_EXAMPLES,
)

JOB = "deepspeed-example"
RESOURCE = resource_of(CRD)


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def stored(cluster: Cluster, namespace: str, name: str = JOB) -> dict[str, Any]:
    return stored_object(cluster, CRD, namespace, name)


def test_users_template_fields_are_kept(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, USER_EXAMPLES["full"])
    spec = stored(cluster, namespace)["spec"]
    assert spec["config"]["otherArgs"] == ["--master_port=12346", "--no_ssh_check"]
    assert spec["config"]["run"]["python"][0] == "/workspace/train.py"
    pod = spec["worker"]["template"]["spec"]
    assert pod["hostIPC"] is True
    trainer = pod["containers"][0]
    assert trainer["workingDir"] == "/workspace"
    assert trainer["securityContext"]["capabilities"]["add"] == ["IPC_LOCK", "SYS_RESOURCE"]
    assert trainer["resources"]["limits"]["rdma/rdma_shared_device_a"] == 1
    assert trainer["volumeMounts"][1] == {
        "mountPath": "/workspace",
        "name": "code",
        "subPath": "project",
    }
    assert pod["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}
    # A sidecar may mount /root/.ssh: only the training container may not.
    assert pod["containers"][1]["volumeMounts"][0]["mountPath"] == "/root/.ssh"


def test_defaults_are_filled_by_the_server(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, SPEC_EXAMPLES["basic"])
    spec = stored(cluster, namespace)["spec"]
    config = spec["config"]
    assert (config["localRank"], config["autotune"], config["otherArgs"]) == (True, "none", [])
    # The doc's slotPerWorker stays as sent, and no slotsPerWorker default hides it.
    assert config["slotPerWorker"] == 1 and "slotsPerWorker" not in config
    assert "restartPolicy" not in spec["worker"]
    assert "runPolicy" not in spec  # optional objects stay absent
    applied(cluster, namespace, SPEC_EXAMPLES["scheduler"].replace("    replicas: 4\n", ""))
    assert stored(cluster, namespace)["spec"]["worker"]["replicas"] == 1


def test_debug_job_without_config_is_accepted(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, SPEC_EXAMPLES["debug-2"])
    spec = stored(cluster, namespace)["spec"]
    assert "config" not in spec
    assert spec["runMode"]["debug"] == {"enabled": True, "replicaSpecs": []}
    # Leaving debug mode needs config.run.
    stderr = refused(
        cluster, namespace, SPEC_EXAMPLES["debug-2"].replace("enabled: true", "enabled: false")
    )
    assert "spec.config.run" in stderr and MSG_RUN_REQUIRED in stderr
    leave = load(SPEC_EXAMPLES["debug-2"])
    leave["spec"]["runMode"]["debug"]["enabled"] = False
    leave["spec"]["config"] = {"run": {"exec": ["sleep", "1"]}}
    applied(cluster, namespace, yaml.safe_dump(leave))


def test_kubectl_get_and_scale(cluster: Cluster, crd: None, namespace: str) -> None:
    elastic = load(SPEC_EXAMPLES["basic"])
    elastic["spec"]["elastic"] = {
        "enabled": True,
        "minReplicas": 2,
        "maxReplicas": 8,
        "expectedReplicas": 4,
    }
    applied(cluster, namespace, yaml.safe_dump(elastic))
    header = cluster.kubectl("get", "dsj", "-n", namespace).stdout.splitlines()[0].split()
    assert header == [
        "NAME",
        "PHASE",
        "REASON",
        "READY",
        "REPLICAS",
        "RESTARTS",
        "PROGRESS",
        "ETA",
        "AGE",
    ]
    cluster.kubectl("scale", "dsj", JOB, "-n", namespace, "--replicas=6")
    assert stored(cluster, namespace)["spec"]["elastic"]["expectedReplicas"] == 6
    proc = cluster.kubectl("scale", "dsj", JOB, "-n", namespace, "--replicas=9", check=False)
    assert proc.returncode != 0
    assert MSG_ELASTIC_EXPECTED in proc.stderr
    assert stored(cluster, namespace)["spec"]["elastic"]["expectedReplicas"] == 6


def test_kubectl_explain_shows_descriptions(cluster: Cluster, crd: None) -> None:
    def explain() -> str:
        proc = cluster.kubectl("explain", "deepspeedjob.spec.config", check=False)
        return proc.stdout if proc.returncode == 0 and "slotsPerWorker" in proc.stdout else ""

    out = wait_for(explain, 60, "kubectl explain deepspeedjob.spec.config", 1)
    assert "slotPerWorker" in out and "otherArgs" in out
    debug = cluster.kubectl("explain", "dsj.spec.runMode.debug").stdout
    assert "/usr/sbin/sshd -D" in debug


# -- invalid specs are refused, naming the field -------------------------------------------------


def _job(spec: dict[str, Any], name: str = JOB, containers: list[Any] | None = None) -> str:
    if containers is None:
        containers = [{"name": "worker", "image": IMAGE}]
    body = {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": {
            "config": {"run": {"python": "train.py"}},
            "worker": {"replicas": 4, "template": {"spec": {"containers": containers}}},
            **spec,
        },
    }
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    return yaml.safe_dump(body)


def _mounting(path: str, name: str | None = "worker") -> dict[str, Any]:
    container: dict[str, Any] = {
        "image": IMAGE,
        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "x", "mountPath": path}],
    }
    if name is not None:
        container["name"] = name
    return container


_ELASTIC = {"enabled": True, "minReplicas": 2, "maxReplicas": 4, "expectedReplicas": 3}
_RUN = "spec.config.run"
_ARGS = "spec.config.otherArgs"
_MOUNTS = "spec.worker.template.spec.containers"

INVALID: dict[str, tuple[str, list[str]]] = {
    # config.run: more or fewer than one of python, module and exec
    "run-python-and-module": (
        _job({"config": {"run": {"python": "a.py", "module": "m"}}}),
        [_RUN, "must have at most 1"],
    ),
    "run-all-three": (
        _job({"config": {"run": {"python": "a.py", "module": "m", "exec": ["x"]}}}),
        [_RUN, "must have at most 1"],
    ),
    "run-exec-list-of-numbers": (
        _job({"config": {"run": {"exec": ["train", 3]}}}),
        # Server-side apply's typed patch refuses it before validation does.
        [f"{_RUN}.exec[1]", "string"],
    ),
    # outside debug mode config.run is required
    "no-config": (_job({"config": None}), [_RUN, MSG_RUN_REQUIRED]),
    "config-without-run": (_job({"config": {"slotsPerWorker": 2}}), [_RUN, MSG_RUN_REQUIRED]),
    "no-config-debug-disabled": (
        _job({"config": None, "runMode": {"debug": {"enabled": False}}}),
        [_RUN, MSG_RUN_REQUIRED],
    ),
    "no-config-paused": (
        _job({"config": None, "runMode": {"pause": {"enabled": True}}}),
        [_RUN, MSG_RUN_REQUIRED],
    ),
    # config fields
    "slots-zero": (
        _job({"config": {"run": {"python": "a"}, "slotsPerWorker": 0}}),
        ["spec.config.slotsPerWorker", "greater than or equal to 1"],
    ),
    "slot-alias-zero": (
        _job({"config": {"run": {"python": "a"}, "slotPerWorker": 0}}),
        ["spec.config.slotPerWorker", "greater than or equal to 1"],
    ),
    "bad-autotune": (
        _job({"config": {"run": {"python": "a"}, "autotune": "yes"}}),
        ["spec.config.autotune", "Unsupported value"],
    ),
    # worker
    "bad-restart-policy": (
        _job({"worker": {"restartPolicy": "Sometimes", "template": {}}}),
        ["spec.worker.restartPolicy", "Unsupported value"],
    ),
    "template-restart-policy-unknown": (
        _job(
            {
                "worker": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Sometimes",
                            "containers": [{"name": "worker", "image": "i"}],
                        }
                    }
                }
            }
        ),
        ["spec.worker.template.spec.restartPolicy", "Unsupported value"],
    ),
    "negative-replicas": (
        _job({"worker": {"replicas": -1, "template": {}}}),
        ["spec.worker.replicas", "greater than or equal to 0"],
    ),
    "no-template": (_job({"worker": {"replicas": 1}}), ["spec.worker.template", "Required value"]),
    "no-worker": (_job({"worker": None}), ["spec.worker", "Required value"]),
    # elastic
    "elastic-without-bounds": (
        _job({"elastic": {"enabled": True}}),
        ["spec.elastic", MSG_ELASTIC_BOUNDS_REQUIRED],
    ),
    "min-above-max": (
        _job({"elastic": {**_ELASTIC, "minReplicas": 5}}),
        ["spec.elastic.minReplicas", MSG_ELASTIC_MIN_MAX],
    ),
    "expected-above-max": (
        _job({"elastic": {**_ELASTIC, "expectedReplicas": 5}}),
        ["spec.elastic.expectedReplicas", MSG_ELASTIC_EXPECTED],
    ),
    "expected-below-min": (
        _job({"elastic": {**_ELASTIC, "expectedReplicas": 1}}),
        ["spec.elastic.expectedReplicas", MSG_ELASTIC_EXPECTED],
    ),
    # runPolicy
    "bad-clean-up-policy": (
        _job({"runPolicy": {"cleanUpPolicy": "Some"}}),
        ["spec.runPolicy.cleanUpPolicy", "Unsupported value"],
    ),
    # names
    "name-not-a-dns-1035-label": (_job({}, name="1st-job"), ["metadata.name", "DNS-1035"]),
    "name-too-long-for-pod-names": (
        _job({}, name="d" + "x" * 54),
        ["metadata.name", MSG_POD_NAME_LENGTH],
    ),
    "name-too-long-for-elastic-max": (
        _job(
            {
                "elastic": {
                    "enabled": True,
                    "minReplicas": 1,
                    "maxReplicas": 101,
                    "expectedReplicas": 4,
                }
            },
            name="d" + "x" * 52,
        ),
        ["metadata.name", MSG_POD_NAME_LENGTH],
    ),
}
for _arg in (
    "--no_local_rank",
    "--autotuning",
    "--autotuning=tune",
    "--module",
    "--no_python",
    "--hostfile",
    "--hostfile=/etc/hosts",
):
    INVALID[f"other-args{_arg}"] = (
        _job({"config": {"run": {"python": "a.py"}, "otherArgs": ["--master_port=1", _arg]}}),
        [_ARGS, MSG_RESERVED_ARGS],
    )
for _i, _args in enumerate(
    (
        ["--launcher", "openmpi"],
        ["--launcher=mvapich"],
        ["--master_port=1", "--launcher", "slurm", "-m"],
        ["--launcher"],
        ["--launcher", "pdsh", "--launcher", "pdsh"],
        ["--launcher=pdsh", "--launcher", "mpich"],
    )
):
    # Seed 000: DeepSpeedJob supports only pdsh.
    INVALID[f"launcher-not-pdsh-{_i}"] = (
        _job({"config": {"run": {"python": "a.py"}, "otherArgs": _args}}),
        [_ARGS, MSG_LAUNCHER_PDSH],
    )
INVALID["resume-args-without-command"] = (
    _job({"runMode": {"pause": {"resumeSpecs": [{"type": "worker", "args": ["--resume"]}]}}}),
    ["spec.runMode.pause.resumeSpecs", MSG_RESUME_ARGS_NEED_COMMAND],
)
for _path in ("/root/.ssh", "/root/.ssh/config", "/t9k/hostfile", "/root/.deepspeed_env"):
    INVALID[f"mount{_path}-worker"] = (
        _job({}, containers=[{"name": "sidecar", "image": IMAGE}, _mounting(_path)]),
        [_MOUNTS, MSG_RESERVED_MOUNTS],
    )
    INVALID[f"mount{_path}-first"] = (
        _job({}, containers=[_mounting(_path, "main"), {"name": "sidecar", "image": IMAGE}]),
        [_MOUNTS, MSG_RESERVED_MOUNTS],
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"config": {"run": {"python": "a.py"}, "otherArgs": ["--master_port", "12346"]}},
        {"config": {"run": {"python": ["a.py", "--x"]}, "otherArgs": ["--hostfiles", "-m"]}},
        {"config": {"run": {"python": "a.py"}, "otherArgs": ["--launcher", "pdsh", "-m"]}},
        {"config": {"run": {"python": "a.py"}, "otherArgs": ["--launcher=PDSH"]}},
        {
            "config": {"run": {"python": "a.py"}},
            "runMode": {
                "pause": {"resumeSpecs": [{"type": "worker", "command": ["a"], "args": ["b"]}]}
            },
        },
        {"config": None, "runMode": {"debug": {"enabled": True}}},
        {"config": {"slotsPerWorker": 2}, "runMode": {"debug": {"enabled": True}}},
    ],
)
def test_valid_variants_are_accepted(
    cluster: Cluster, crd: None, namespace: str, spec: dict[str, Any]
) -> None:
    applied(cluster, namespace, _job(spec))


def test_reserved_paths_may_be_mounted_outside_the_training_container(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    containers = [_mounting("/root/.ssh", "sidecar"), _mounting("/t9k/data", "worker")]
    applied(cluster, namespace, _job({}, containers=containers))
    pod = stored(cluster, namespace)["spec"]["worker"]["template"]["spec"]
    assert pod["containers"] == containers


def test_longest_name_that_fits_is_accepted(cluster: Cluster, crd: None, namespace: str) -> None:
    name = "d" + "x" * 53  # 54 + len("-worker-3") == 63
    applied(cluster, namespace, _job({}, name=name))
    assert stored(cluster, namespace, name)["metadata"]["name"] == name


# -- the 2025 manual's examples, read from the manual itself --------------------------

MANUAL_FILES = ("deepspeedjob.md", "deepspeedjob-api.md")
"""T9k's 2025 DeepSpeedJob pages (shared/specs/t9k-2025 beside the clone)."""
SPELLINGS = ("DeepSpeedJob", "DeepspeedJob")
"""The kind as the manual spells it (its first example writes ``DeepspeedJob``)."""
MANUAL_OUTCOMES = {
    "创建 DeepSpeedJob": "misspelt kind",
    "资源配置": "nameless container",
    "环境变量": "nameless container",
}
"""Each whole job of the manual, by its section, and what the API server does with
it as written: it refuses the first, whose kind is spelt ``DeepspeedJob`` (the
server itself checks a custom resource's kind against its CRD's, whatever the
CRD says), and stores it unpruned once that is corrected; it refuses the
fragments for their container without a name, which the Pod API requires
(crd_helpers.DOC_FRAGMENTS)."""


def manual_2025() -> dict[str, str]:
    """Every whole DeepSpeedJob of the 2025 manual, by its section; none when the
    manual is not beside the clone (its test then skips: a failure under CI=true)."""
    found: dict[str, str] = {}
    for name in MANUAL_FILES:
        if (MANUALS_2025 / name).is_file():
            found.update(whole_jobs(MANUALS_2025 / name, SPELLINGS))
    return found


def test_the_2025_manual_is_there_with_the_examples_this_test_knows() -> None:
    missing = [n for n in MANUAL_FILES if not (MANUALS_2025 / n).is_file()]
    if missing:
        pytest.skip(f"the 2025 manual is not beside the clone: {MANUALS_2025}: {missing}")
    assert sorted(manual_2025()) == sorted(MANUAL_OUTCOMES)


@pytest.mark.parametrize("section", sorted(MANUAL_OUTCOMES))
def test_each_example_of_the_2025_manual_applies_unchanged(
    admin: KubeClient, crd: None, namespace: str, section: str
) -> None:
    examples = manual_2025()
    if section not in examples:
        pytest.skip(f"the 2025 manual is not beside the clone: {MANUALS_2025}")
    sent = yaml.safe_load(examples[section])
    if MANUAL_OUTCOMES[section] == "nameless container":
        refused_for_nameless_container(lambda body: admin.create(RESOURCE, body, namespace), sent)
        return
    with pytest.raises(Invalid) as refused:
        admin.create(RESOURCE, copy.deepcopy(sent), namespace)
    assert 'kind: Invalid value: "DeepspeedJob": must be DeepSpeedJob' in refused.value.message
    sent["kind"] = CRD.kind  # the one change: everything else as the manual writes it
    admin.create(RESOURCE, copy.deepcopy(sent), namespace)
    obj = admin.get(RESOURCE, sent["metadata"]["name"], namespace)
    assert_stored_as_sent(sent, obj)  # nothing pruned, the template as sent
    assert DeepSpeedJobObject.from_dict(obj).spec.launch_given
