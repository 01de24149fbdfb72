"""ColossalAIJob in T9k's 2025 layout (spec.torchConfig, spec.replicaSpecs): the
same job as the older layout's builds the same workers, hostfile and command; the
launcher pod comes from the launcher entry's template; the kind reads both alike."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.colossalai import (
    MSG_ONE_LAYOUT,
    MSG_SCRIPT_REQUIRED,
    MSG_SOME_LAYOUT,
)
from t9k_operator.builders import colossalai as b
from t9k_operator.builders.common import NORMAL, PodMode
from t9k_operator.kinds.colossalai import ColossalAIKind
from t9k_operator.kinds.view import Role

KIND = ColossalAIKind()
WORKER_TEMPLATE = {
    "metadata": {"annotations": {"n": "v"}, "labels": {"l": "x"}},
    "spec": {"containers": [{"name": "worker", "image": "w", "command": ["python"]}]},
}
OLDER: dict[str, Any] = {
    "launcher": {"image": "l", "workingDir": "/workspace"},
    "worker": {
        "replicas": 3,
        "procPerWorker": 2,
        "command": ["train.py", "arg1"],
        "torchArgs": ["--max_restarts=3"],
        "template": WORKER_TEMPLATE,
    },
}
LAUNCHER_TEMPLATE = {
    "metadata": {"labels": {"who": "launcher"}},
    "spec": {
        "containers": [
            {"name": "side", "image": "s"},
            {"name": "launcher", "image": "l", "workingDir": "/workspace"},
        ],
        "volumes": [{"name": "code", "emptyDir": {}}],
    },
}
LAYOUT_2025: dict[str, Any] = {
    "torchConfig": {
        "procPerWorker": 2,
        "script": ["train.py", "arg1"],
        "extraArgs": ["--max_restarts=3"],
    },
    "replicaSpecs": [
        {"type": "launcher", "template": LAUNCHER_TEMPLATE},
        {"type": "worker", "replicas": 3, "template": WORKER_TEMPLATE},
    ],
}


def job(spec: dict[str, Any]) -> b.Job:
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "ColossalAIJob",
            "metadata": {"name": "cj", "namespace": "ns", "uid": "u"},
            "spec": copy.deepcopy(spec),
        }
    )


def test_both_layouts_build_the_same_workers_hostfile_and_command() -> None:
    older, new = job(OLDER), job(LAYOUT_2025)
    assert b.hostfile(new) == "cj-worker-0.cj\ncj-worker-1.cj\ncj-worker-2.cj\n"
    assert b.colossalai_command(new) == [
        "colossalai",
        "run",
        "--nproc_per_node=2",
        "--hostfile=/t9k/hostfile",
        "--master_addr=cj-worker-0.cj",
        "--master_port=29500",
        "--extra_launch_args=max_restarts=3",
        "train.py",
        "arg1",
    ]
    assert b.colossalai_command(older) == b.colossalai_command(new)
    for i in range(3):
        older_pod, new_pod = b.build_worker(older, i), b.build_worker(new, i)
        assert image_from(older_pod) == "spec.worker.template"
        assert image_from(new_pod) == "spec.replicaSpecs[1].template"
        assert without_image_from(new_pod) == without_image_from(older_pod)


def image_from(pod: dict[str, Any]) -> str:
    (setup,) = pod["spec"]["initContainers"]
    return str(next(e["value"] for e in setup["env"] if e["name"] == "T9K_IMAGE_FROM"))


def without_image_from(pod: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    for c in out["spec"]["initContainers"]:
        c["env"] = [e for e in c["env"] if e["name"] != "T9K_IMAGE_FROM"]
    return out


def test_the_launcher_pod_is_its_templates() -> None:
    pod = b.build_launcher(job(LAYOUT_2025))
    assert pod["metadata"]["name"] == "cj-launcher"
    assert pod["metadata"]["labels"]["who"] == "launcher"
    assert pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == "launcher"
    spec = pod["spec"]
    assert spec["hostname"] == "cj-launcher" and spec["subdomain"] == "cj"
    assert spec["restartPolicy"] == "Never"
    side, launcher = spec["containers"]
    assert side == {"name": "side", "image": "s"}
    assert launcher["image"] == "l" and launcher["workingDir"] == "/workspace"
    assert launcher["command"][:2] == ["/bin/bash", "-c"]
    assert launcher["command"][2].rstrip().splitlines()[-1] == (
        "exec colossalai run --nproc_per_node=2 --hostfile=/t9k/hostfile "
        "--master_addr=cj-worker-0.cj --master_port=29500 "
        "--extra_launch_args=max_restarts=3 train.py arg1"
    )
    assert launcher["volumeMounts"] == [
        {
            "name": "t9k-hostfile",
            "mountPath": "/t9k/hostfile",
            "subPath": "hostfile",
            "readOnly": True,
        },
        {"name": "t9k-ssh", "mountPath": "/root/.ssh"},
    ]
    assert {"name": "code", "emptyDir": {}} in spec["volumes"]
    assert [v["name"] for v in spec["volumes"]][-3:] == ["t9k-hostfile", "t9k-ssh-key", "t9k-ssh"]
    (setup,) = spec["initContainers"]
    assert setup["image"] == "l"
    assert {"name": "T9K_IMAGE_FROM", "value": "spec.replicaSpecs[0].template"} in setup["env"]


@pytest.mark.parametrize("launcher", [None, {"type": "launcher"}])
def test_a_launcher_without_its_container_gets_one_of_the_workers_image(
    launcher: dict[str, Any] | None,
) -> None:
    worker = {"type": "worker", "replicas": 2, "template": WORKER_TEMPLATE}
    specs = [worker] if launcher is None else [launcher, worker]
    j = job({**LAYOUT_2025, "replicaSpecs": specs})
    (container,) = b.build_launcher(j)["spec"]["containers"]
    assert container["name"] == "launcher" and container["image"] == "w"
    assert "workingDir" not in container
    assert KIND.view(j).spec_error is None


def test_debug_mode_runs_its_command_in_the_launcher_container() -> None:
    pod = b.build_launcher(job(LAYOUT_2025), PodMode(command=("sleep", "inf")))
    assert pod["spec"]["containers"][1]["command"] == ["sleep", "inf"]


def test_the_kind_views_both_layouts_alike() -> None:
    older, new = KIND.view(job(OLDER)), KIND.view(job(LAYOUT_2025))
    assert new.roles == (Role("launcher", 1, "Never"), Role("worker", 3, "Never")) == older.roles
    assert new.spec_error is None and older.spec_error is None
    assert new.asks == older.asks
    gpus = {"limits": {"nvidia.com/gpu": "1"}}
    tpl = {"spec": {"containers": [{"name": "worker", "image": "w", "resources": gpus}]}}
    with_gpus = copy.deepcopy(LAYOUT_2025)
    with_gpus["replicaSpecs"][1]["template"] = tpl
    assert KIND.gpus(job(with_gpus)) == 3
    assert b.build_worker(job(LAYOUT_2025), 0, NORMAL)["metadata"]["name"] == "cj-worker-0"


def test_restart_policy_is_stored_but_not_acted_on() -> None:
    spec = copy.deepcopy(LAYOUT_2025)
    spec["replicaSpecs"][1]["restartPolicy"] = {"policy": "OnFailure", "limit": 3}
    stored = {"spec": spec}
    assert KIND.fields_not_acted_on(stored) == ["spec.replicaSpecs[].restartPolicy"]
    assert KIND.fields_not_acted_on({"spec": LAYOUT_2025}) == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({**LAYOUT_2025, "launcher": OLDER["launcher"]}, MSG_ONE_LAYOUT),
        ({**LAYOUT_2025, "worker": OLDER["worker"]}, MSG_ONE_LAYOUT),
        ({**OLDER, "torchConfig": LAYOUT_2025["torchConfig"]}, MSG_ONE_LAYOUT),
        ({**OLDER, "replicaSpecs": LAYOUT_2025["replicaSpecs"]}, MSG_ONE_LAYOUT),
        ({}, MSG_SOME_LAYOUT),
        ({"torchConfig": LAYOUT_2025["torchConfig"]}, MSG_SOME_LAYOUT),
        ({"replicaSpecs": LAYOUT_2025["replicaSpecs"]}, MSG_SCRIPT_REQUIRED),
    ],
)
def test_a_mixed_or_missing_layout_is_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        job(spec)
    assert message in str(info.value)


def test_a_launcher_needing_the_workers_image_where_they_name_none_is_a_spec_error() -> None:
    imageless = {"spec": {"containers": [{"name": "worker"}]}}
    j = job({**LAYOUT_2025, "replicaSpecs": [{"type": "worker", "template": imageless}]})
    assert KIND.view(j).spec_error == (
        "spec.replicaSpecs[0].template: the launcher takes the image of the workers' "
        "container, which names none: name it, or give the launcher a container named launcher"
    )
    given = {"type": "launcher", "template": LAUNCHER_TEMPLATE}
    j = job({**LAYOUT_2025, "replicaSpecs": [given, {"type": "worker", "template": imageless}]})
    assert KIND.view(j).spec_error is None
