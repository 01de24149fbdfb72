"""``t9k create``'s jobs (sdk/build.py): each kind's from the same flags, checked
by the kind's own model, and the flags the model or the kind refuses."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.registry import KINDS
from t9k_operator.sdk import BadJob, JobRequest, Unsupported, build_job
from t9k_operator.sdk.views import gpus_requested


def request(kind: str = "pytorch", **overrides: Any) -> JobRequest:
    fields: dict[str, Any] = {
        "kind": kind,
        "name": "train",
        "image": "img:1",
        "command": ["python", "train.py", "--lr", "0.1"],
        "workers": 3,
        "gpus": 2,
    }
    return JobRequest(**{**fields, **overrides})


def templates(obj: Any) -> list[dict[str, Any]]:
    """Every pod template in a spec (the values of its ``template`` keys)."""
    if isinstance(obj, list):
        return [t for item in obj for t in templates(item)]
    if not isinstance(obj, dict):
        return []
    found = [obj["template"]] if isinstance(obj.get("template"), dict) else []
    return found + [t for key, value in obj.items() if key != "template" for t in templates(value)]


@pytest.mark.parametrize("kind", KINDS, ids=[k.cli_name for k in KINDS])
def test_every_kind_is_built_valid_with_its_workers_and_gpus(kind: JobKind[Any]) -> None:
    job = build_job(request(kind.cli_name, annotations={"a": "b"}))
    assert (job["apiVersion"], job["kind"]) == (kind.crd.api_version, kind.crd.kind)
    kind.model.from_dict(job)  # the kind's own model accepts it
    stored = kind.model.from_dict(
        {**job, "metadata": {**job["metadata"], "namespace": "ns", "uid": "1"}}
    )
    replicas = {role.type.lower(): role.replicas for role in kind.view(stored).roles}
    assert replicas["worker"] == 3
    assert gpus_requested(job) == 6
    assert templates(job["spec"])
    for template in templates(job["spec"]):
        assert template["metadata"]["annotations"] == {"a": "b"}


def test_pytorch_runs_the_command_or_torchrun_with_the_script() -> None:
    plain = build_job(request("pytorch"))
    (spec,) = plain["spec"]["replicaSpecs"]
    container = spec["template"]["spec"]["containers"][0]
    assert container["name"] == "pytorch"
    assert container["command"] == ["python", "train.py", "--lr", "0.1"]
    assert "torchrunConfig" not in plain["spec"]
    torchrun = build_job(request("pytorch", torchrun=True))
    container = torchrun["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert torchrun["spec"]["torchrunConfig"] == {"enabled": True, "procPerNode": "2"}
    assert "command" not in container and container["args"] == ["train.py", "--lr", "0.1"]


def test_tensorflow_workers_run_the_command_and_worker_0_decides() -> None:
    job = build_job(request("tensorflow"))
    (spec,) = job["spec"]["replicaSpecs"]
    assert (spec["type"], spec["replicas"], spec["restartPolicy"]) == ("worker", 3, "OnFailure")
    container = spec["template"]["spec"]["containers"][0]
    assert container["name"] == "tensorflow"
    assert container["command"] == ["python", "train.py", "--lr", "0.1"]


def test_the_launchers_get_the_script_and_a_slot_per_gpu() -> None:
    ds = build_job(request("deepspeed"))["spec"]
    assert ds["config"] == {"slotsPerWorker": 2, "run": {"python": ["train.py", "--lr", "0.1"]}}
    ds_exec = build_job(request("deepspeed", command=["./run.sh"], gpus=0))["spec"]
    assert ds_exec["config"] == {"slotsPerWorker": 1, "run": {"exec": ["./run.sh"]}}
    cai = build_job(request("colossalai"))["spec"]
    assert cai["worker"]["procPerWorker"] == 2
    assert cai["worker"]["command"] == ["train.py", "--lr", "0.1"]
    assert cai["launcher"] == {"image": "img:1"}
    ms = build_job(request("mindspore", queue="q", priority=3))["spec"]
    assert set(ms["msReplicaSpecs"]) == {"Scheduler", "Worker"}
    assert "resources" not in ms["msReplicaSpecs"]["Scheduler"]["template"]["spec"]["containers"][0]
    assert ms["runPolicy"]["schedulingPolicy"] == {"queue": "q", "priorityClass": "t9k-priority-3"}


def test_queue_priority_and_tensorboard() -> None:
    spec = build_job(request("deepspeed", queue="research", priority=7, tensorboard="logs/run1"))[
        "spec"
    ]
    assert spec["scheduler"] == {"t9kScheduler": {"queue": "research", "priority": 7}}
    assert spec["tensorboardSpec"]["trainingLogFilesets"] == ["t9k://pvc/logs/run1"]
    whole = build_job(request("pytorch", tensorboard="logs"))["spec"]["tensorboardSpec"]
    assert whole["trainingLogFilesets"] == ["t9k://pvc/logs"]


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        ({"command": []}, BadJob, "a command is needed after --"),
        ({"workers": 0}, BadJob, "--workers must be at least 1"),
        ({"gpus": -1}, BadJob, "--gpus must not be negative"),
        ({"priority": 5}, BadJob, "--priority needs --queue"),
        ({"priority": 500, "queue": "q"}, BadJob, "priority: Input should be less than or equal"),
        ({"name": "Not_A_Name"}, BadJob, "invalid PyTorchTrainingJob Not_A_Name"),
        ({"kind": "jax"}, BadJob, "unknown kind 'jax'"),
        ({"kind": "deepspeed", "torchrun": True}, BadJob, "--torchrun is for pytorch jobs"),
        (
            {"kind": "mindspore", "tensorboard": "logs"},
            Unsupported,
            "an MSJob has no tensorboardSpec",
        ),
        ({"tensorboard": "logs/../etc"}, BadJob, "tensorboardSpec"),
    ],
)
def test_what_the_flags_cannot_make(
    overrides: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(".", r"\.")):
        build_job(request(**{"kind": "pytorch", **overrides}))
