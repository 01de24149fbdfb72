"""PyTorchTrainingJob pods and Service, built from parsed jobs (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.api.specs import ElasticConfig
from t9k_operator.builders import common
from t9k_operator.builders import pytorch as b
from t9k_operator.builders.common import PodMode


def job(specs: list[dict[str, Any]], **spec: Any) -> b.Job:
    return b.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "PyTorchTrainingJob",
            "metadata": {"name": "tj", "namespace": "ns", "uid": "uid-1"},
            "spec": {"replicaSpecs": specs, **spec},
        }
    )


def rs(type_: str, n: int, **container: Any) -> dict[str, Any]:
    c = {
        "name": "pytorch",
        "image": "img",
        "command": ["python"],
        "args": ["train.py"],
        **container,
    }
    return {
        "type": type_,
        "replicas": n,
        "restartPolicy": "OnFailure",
        "template": {
            "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
            "spec": {
                "initContainers": [{"name": "init", "image": "i"}],
                "containers": [c],
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            },
        },
    }


def env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["spec"]["containers"][0].get("env", [])}


def test_plain_mode_env_master_first() -> None:
    j = job([rs("worker", 2), rs("master", 1)])
    assert b.master_replica(j) == ("master", 0)
    assert b.world_size(j) == 3
    ranks = {(t, i): b.rank(j, t, i) for t, i in [("master", 0), ("worker", 0), ("worker", 1)]}
    assert ranks == {("master", 0): 0, ("worker", 0): 1, ("worker", 1): 2}
    pod = b.build_pod(j, "worker", 1)
    assert env(pod) == {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": "tj-master-0.tj",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "3",
        "RANK": "2",
    }
    assert pod["metadata"]["name"] == "tj-worker-1"
    assert pod["spec"]["hostname"] == "tj-worker-1" and pod["spec"]["subdomain"] == "tj"
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["containers"][0]["command"] == ["python"]
    assert pod["spec"]["containers"][0]["args"] == ["train.py"]


def test_without_master_type_the_first_replica_is_master() -> None:
    j = job([rs("node", 3)])
    assert b.master_replica(j) == ("node", 0)
    assert env(b.build_pod(j, "node", 0))["MASTER_ADDR"] == "tj-node-0.tj"
    assert env(b.build_pod(j, "node", 0))["RANK"] == "0"
    assert b.build_pod(j, "node", 0)["metadata"]["labels"][common.ROLE] == "master"
    assert b.build_pod(j, "node", 2)["metadata"]["labels"][common.ROLE] == "worker"


def test_master_port_from_named_container_port() -> None:
    j = job([rs("master", 1, ports=[{"name": "pytorchjob-port", "containerPort": 30000}])])
    assert env(b.build_pod(j, "master", 0))["MASTER_PORT"] == "30000"


def test_template_is_kept_and_operator_fields_added() -> None:
    j = job([rs("worker", 1)])
    pod = b.build_pod(j, "worker", 0)
    meta = pod["metadata"]
    assert meta["labels"]["team"] == "a"
    assert meta["labels"][common.MANAGED_BY] == "t9k-operator"
    assert meta["labels"][common.JOB_NAME] == "tj"
    assert meta["labels"][common.REPLICA_TYPE] == "worker"
    assert meta["labels"][common.REPLICA_INDEX] == "0"
    assert meta["annotations"] == {
        "note": "x",
        "kubectl.kubernetes.io/default-container": "pytorch",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "PyTorchTrainingJob",
            "name": "tj",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert pod["spec"]["initContainers"][0]["name"] == "init"
    # The job's own template is not modified.
    assert "hostname" not in j.spec.replica_specs[0].template["spec"]


def test_torchrun_command() -> None:
    j = job(
        [rs("worker", 4)],
        torchrunConfig={
            "enabled": True,
            "maxRestarts": 10,
            "procPerNode": "gpu",
            "rdzvBackend": "c10d",
            "extraOptions": ["--log-dir=/tmp/logs"],
        },
    )
    pod = b.build_pod(j, "worker", 2)
    c = pod["spec"]["containers"][0]
    assert c["command"] == [
        "torchrun",
        "--nnodes=4",
        "--nproc-per-node=gpu",
        "--max-restarts=10",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=tj-worker-0.tj:29400",
        "--rdzv-id=uid-1",
        "--log-dir=/tmp/logs",
        "train.py",
    ]
    assert "args" not in c
    assert "RANK" not in env(pod) and env(pod)["PYTHONUNBUFFERED"] == "1"
    ports = {p["name"]: p["port"] for p in b.build_service(j)["spec"]["ports"]}
    assert ports == {"master": 23456, "c10d": 29400}


def test_the_training_container_is_the_pods_default_unless_the_template_names_one() -> None:
    specs = [rs("worker", 1)]
    specs[0]["template"]["spec"]["containers"] = [
        {"name": "sidecar", "image": "s"},
        {"name": "pytorch", "image": "p"},
    ]
    meta = b.build_pod(job(specs), "worker", 0)["metadata"]
    assert meta["annotations"]["kubectl.kubernetes.io/default-container"] == "pytorch"
    specs[0]["template"]["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/default-container": "sidecar"
    }
    meta = b.build_pod(job(specs), "worker", 0)["metadata"]
    assert meta["annotations"] == {"kubectl.kubernetes.io/default-container": "sidecar"}


def test_torchrun_training_container_named_python() -> None:
    specs = [rs("worker", 1)]
    specs[0]["template"]["spec"]["containers"] = [
        {"name": "sidecar", "image": "s", "args": ["x"]},
        {"name": "python", "image": "p", "args": ["-m", "training.module"]},
    ]
    j = job(specs, torchrunConfig={"enabled": True, "rdzvBackend": "etcd"})
    c = b.build_pod(j, "worker", 0)["spec"]["containers"]
    assert c[0] == {"name": "sidecar", "image": "s", "args": ["x"]}
    assert c[1]["command"] == [
        "torchrun",
        "--nnodes=1",
        "--nproc-per-node=1",
        "--rdzv-backend=etcd",
        "--rdzv-id=uid-1",
        "-m",
        "training.module",
    ]


@pytest.mark.parametrize(("expected", "count"), [(7, 7), (4, 4), (10, 10)])
def test_elastic_follows_expected_within_bounds(expected: int, count: int) -> None:
    j = job(
        [rs("worker", 1)],
        torchrunConfig={"enabled": True},
        elastic={
            "enabled": True,
            "minReplicas": 4,
            "maxReplicas": 10,
            "expectedReplicas": expected,
        },
    )
    assert b.replica_counts(j)[0][1] == count
    cmd = b.build_pod(j, "worker", 0)["spec"]["containers"][0]["command"]
    assert "--nnodes=4:10" in cmd


@pytest.mark.parametrize(
    ("expected", "replicas", "count"),
    [(2, 1, 4), (20, 1, 10), (7, 1, 7), (None, 12, 10), (None, 2, 4), (None, 6, 6)],
)
def test_the_clamp_holds_even_for_bounds_admission_would_refuse(
    expected: int | None, replicas: int, count: int
) -> None:
    """An object stored before the CRD's rules was never admitted; the clamp
    still keeps the count within [minReplicas, maxReplicas] = [4, 10], taking
    the replicas when expectedReplicas is unset."""
    unchecked = ElasticConfig.model_construct(
        enabled=True, min_replicas=4, max_replicas=10, expected_replicas=expected
    )
    assert unchecked.clamp(replicas) == count
    assert ElasticConfig.model_construct(enabled=False, max_replicas=2).clamp(7) == 7


def test_debug_and_resume_modes() -> None:
    j = job([rs("worker", 1)], torchrunConfig={"enabled": True})
    debug = b.build_pod(
        j, "worker", 0, PodMode(("sleep", "inf"), skip_init_containers=True, debug=True)
    )
    c = debug["spec"]["containers"][0]
    assert c["command"] == ["sleep", "inf"] and "args" not in c
    assert "initContainers" not in debug["spec"]
    resumed = b.build_pod(j, "worker", 0, PodMode(("python",), ("resume.py",)))
    c = resumed["spec"]["containers"][0]
    assert (c["command"], c["args"]) == (["python"], ["resume.py"])


def test_resume_args_without_a_command_take_effect_in_torchrun_mode() -> None:
    """The seed: a resume's command and args are what the replica runs. In torchrun
    mode the template's args (the script and its arguments) follow the torchrun
    line; a resume's args alone replace them there, not dropped."""
    j = job([rs("worker", 2)], torchrunConfig={"enabled": True})
    normal = b.build_pod(j, "worker", 1)["spec"]["containers"][0]
    resumed = b.build_pod(j, "worker", 1, PodMode(args=("train.py", "--resume", "ckpt")))
    c = resumed["spec"]["containers"][0]
    assert c["command"] == [*normal["command"][:-1], "train.py", "--resume", "ckpt"]
    assert c["command"][0] == "torchrun" and "args" not in c
    # Without torchrun, resume args replace the template's args after its command.
    plain = job([rs("worker", 2)])
    c = b.build_pod(plain, "worker", 1, PodMode(args=("train.py", "--resume")))["spec"][
        "containers"
    ][0]
    assert (c["command"], c["args"]) == (["python"], ["train.py", "--resume"])


def test_operator_env_overrides_user_env_of_the_same_name() -> None:
    j = job([rs("worker", 2, env=[{"name": "RANK", "value": "9"}, {"name": "A", "value": "1"}])])
    assert env(b.build_pod(j, "worker", 1))["RANK"] == "1"
    assert env(b.build_pod(j, "worker", 1))["A"] == "1"


def test_headless_service() -> None:
    svc = b.build_service(job([rs("worker", 1)]))
    assert svc["metadata"]["name"] == "tj"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {
        common.MANAGED_BY: "t9k-operator",
        common.JOB_NAME: "tj",
        common.JOB_KIND: "PyTorchTrainingJob",
    }


def test_a_resumed_replica_gets_the_checkpointed_step_in_its_training_container() -> None:
    j = job([rs("master", 1, env=[{"name": "T9K_RESUME_STEP", "value": "mine"}]), rs("worker", 1)])
    for type_ in ("master", "worker"):
        pod = b.build_pod(j, type_, 0, PodMode(resume_step=420))
        assert env(pod)["T9K_RESUME_STEP"] == "420"  # the operator's, over the template's
        assert "env" not in pod["spec"]["initContainers"][0]
    assert "T9K_RESUME_STEP" not in env(b.build_pod(j, "worker", 0))
