"""MPIJob's two layouts built alike: the 2025 layout (spec.mpiConfig,
spec.replicaSpecs) and the older layout's shorthand (processesPerWorker,
processRecovery), each read into the one MPIRun the builders and the kind use."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.mpijob import MSG_MIXED_LAYOUTS, MSG_NO_LAYOUT
from t9k_operator.builders import mpijob as b
from t9k_operator.kinds.registry import by_kind
from t9k_operator.kinds.view import Role

KIND = by_kind("MPIJob")
WORKER_TEMPLATE = {
    "spec": {
        "containers": [
            {"name": "side", "image": "side"},
            {
                "name": "worker",
                "image": "mpi:4",
                "command": ["ignored"],
                "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                "resources": {"limits": {"nvidia.com/gpu": 2}},
            },
        ]
    }
}


def parse(spec: dict[str, Any]) -> b.Job:
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "MPIJob",
            "metadata": {"name": "mpi", "namespace": "ns", "uid": "u"},
            "spec": spec,
        }
    )


def job_2025(*launcher: dict[str, Any], **config: Any) -> b.Job:
    worker = {"type": "worker", "replicas": 2, "template": WORKER_TEMPLATE}
    return parse(
        {
            "mpiConfig": {
                "mca": {"btl": "^openib"},
                "home": "/usr/local",
                "extraArgs": ["-N", "3", "-bind-to", "none"],
                "script": ["./random_walk", "20"],
                **config,
            },
            "replicaSpecs": [worker, *launcher],
        }
    )


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in pod["spec"]["containers"] if c["name"] == name]
    assert len(found) == 1, pod["spec"]["containers"]
    return found[0]


def test_the_2025_layout_runs_mpirun_with_mpi_config_as_given() -> None:
    assert b.mpirun_command(job_2025()) == [
        *("mpirun", "--hostfile", "/t9k/hostfile", "--prefix", "/usr/local"),
        *("--mca", "btl", "^openib", "-x", "PATH", "-x", "NCCL_DEBUG"),
        *("-N", "3", "-bind-to", "none", "./random_walk", "20"),
    ]
    assert b.hostfile(job_2025()) == "mpi-worker-0.mpi\nmpi-worker-1.mpi\n"


def test_the_2025_workers_run_sshd_in_the_container_named_worker() -> None:
    pod = b.build_worker(job_2025(), 1)
    assert pod["metadata"]["name"] == "mpi-worker-1"
    worker = container(pod, "worker")
    assert worker["command"][:2] == ["/bin/sh", "-c"] and "sshd" in worker["command"][2]
    assert container(pod, "side") == {"name": "side", "image": "side"}


@pytest.mark.parametrize("launcher", [(), ({"type": "launcher", "replicas": 1, "template": {}},)])
def test_an_empty_or_missing_launcher_is_the_operators_of_the_workers_template(
    launcher: tuple[dict[str, Any], ...],
) -> None:
    pod = b.build_launcher(job_2025(*launcher))
    assert pod["metadata"]["name"] == "mpi-launcher"
    c = container(pod, "worker")
    assert c["image"] == "mpi:4" and c["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert c["command"][:2] == ["/bin/bash", "-c"]
    assert c["command"][2].splitlines()[-1].startswith('exec mpirun "${forward[@]}" --hostfile')
    hostfile = {
        "name": "t9k-hostfile",
        "mountPath": "/t9k/hostfile",
        "subPath": "hostfile",
        "readOnly": True,
    }
    assert hostfile in c["volumeMounts"]


def test_a_launcher_naming_a_launcher_container_runs_mpirun_in_it() -> None:
    own = {
        "type": "launcher",
        "restartPolicy": {"policy": "OnFailure", "limit": 2},
        "template": {
            "spec": {
                "containers": [
                    {"name": "log", "image": "busybox"},
                    {"name": "launcher", "image": "mpi-launcher:4", "env": [{"name": "A"}]},
                ]
            }
        },
    }
    j = job_2025(own)
    pod = b.build_launcher(j)
    c = container(pod, "launcher")
    assert c["image"] == "mpi-launcher:4" and "resources" not in c
    assert "exec mpirun" in c["command"][2]
    assert container(pod, "log") == {"name": "log", "image": "busybox"}
    # mpirun exports the variables of the container it runs in
    assert b.exported(j) == ["PATH", "A"]
    # each type's restartPolicy is its role's; their limits are the job's
    view = KIND.view(j)
    assert view.roles == (Role("launcher", 1, "OnFailure", 2), Role("worker", 2, "OnFailure", 0))
    assert view.backoff_limit == 2


def test_a_lone_nameless_container_is_named_after_its_type() -> None:
    nameless = {"spec": {"containers": [{"image": "mpi:4"}]}}
    j = parse(
        {
            "mpiConfig": {"script": ["./prog"]},
            "replicaSpecs": [
                {"type": "worker", "template": nameless},
                {"type": "launcher", "template": nameless},
            ],
        }
    )
    assert [c["name"] for c in b.build_worker(j, 0)["spec"]["containers"]] == ["worker"]
    assert [c["name"] for c in b.build_launcher(j)["spec"]["containers"]] == ["launcher"]


def test_a_2025_job_without_a_script_fails_naming_it() -> None:
    j = parse({"replicaSpecs": [{"type": "worker", "template": WORKER_TEMPLATE}]})
    error = KIND.view(j).spec_error
    assert error is not None and error.startswith("spec.mpiConfig.script is empty")


def older(**worker: Any) -> b.Job:
    template = {"spec": {"containers": [{"name": "mpi-worker", "image": "mpi:4"}]}}
    return parse({"worker": {"replicas": 2, "cmd": ["./prog"], "template": template, **worker}})


def test_processes_per_worker_is_mpirun_n_and_the_hostfiles_slots() -> None:
    j = older(processesPerWorker=4, extraMPIArgs=["-bind-to", "none"])
    assert b.mpirun_command(j)[5:] == ["-N", "4", "-bind-to", "none", "./prog"]
    assert b.hostfile(j) == "mpi-worker-0.mpi slots=4\nmpi-worker-1.mpi slots=4\n"


@pytest.mark.parametrize(
    ("recovery", "args"),
    [
        ({"enable": True, "limit": 3}, ["--enable-recovery", "--max-restarts", "3"]),
        ({"enable": True}, ["--enable-recovery", "--max-restarts", "0"]),
        ({"enable": False, "limit": 3}, []),
    ],
)
def test_process_recovery_is_mpiruns_and_no_pod_restarts(
    recovery: dict[str, Any], args: list[str]
) -> None:
    j = older(processRecovery=recovery)
    assert b.mpirun_command(j)[5:] == [*args, "./prog"]
    view = KIND.view(j)
    assert view.roles == (Role("launcher", 1, "Never"), Role("worker", 2, "Never"))
    assert view.backoff_limit == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {
                "worker": {"template": WORKER_TEMPLATE},
                "replicaSpecs": [{"type": "worker", "template": WORKER_TEMPLATE}],
            },
            MSG_MIXED_LAYOUTS,
        ),
        (
            {
                "mpiHome": "/usr",
                "replicaSpecs": [{"type": "worker", "template": WORKER_TEMPLATE}],
            },
            MSG_MIXED_LAYOUTS,
        ),
        ({"mpiConfig": {"script": ["./prog"]}}, MSG_NO_LAYOUT),
        ({}, MSG_NO_LAYOUT),
    ],
)
def test_a_job_of_both_layouts_or_neither_is_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message[:40]):
        parse(spec)


def test_a_2025_templates_metadata_the_operator_does_not_act_on_is_named_by_its_path() -> None:
    meta = {"namespace": "elsewhere", "labels": {"a": "b"}}
    stored = {
        "spec": {
            "replicaSpecs": [
                {"type": "worker", "template": {**WORKER_TEMPLATE, "metadata": meta}},
                {"type": "launcher", "template": {}},
            ]
        }
    }
    assert KIND.fields_not_acted_on(stored) == ["spec.replicaSpecs[0].template.metadata.namespace"]
