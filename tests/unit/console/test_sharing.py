"""The console's informers share equal parts of the objects they cache
(console/sharing.py): the rows, the Job page and the GPUs page are what they
are from the full objects, nothing read is lost, and equal parts are one."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from hack.bench.console import world
from t9k_operator.cli import render
from t9k_operator.console import gpus
from t9k_operator.console.detail import job_detail
from t9k_operator.console.sharing import SubtreeTable, console_transform
from t9k_operator.informers import transform_for
from t9k_operator.kinds.registry import KINDS
from t9k_operator.resources import PODS, Resource
from t9k_operator.sdk import views
from tests.unit.cli import fixtures as f
from tests.unit.console.helpers import board_of

Obj = Mapping[str, Any]

STAMP = "2026-03-01T11:00:07Z"


def _resource(kind: str) -> Resource:
    return next(k.resource for k in KINDS if k.crd.kind == kind)


def _noisy_container(container: dict[str, Any]) -> dict[str, Any]:
    return {
        **container,
        "command": ["torchrun", "--nproc-per-node=2"],
        "args": ["train.py", "--epochs=90"],
        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "RANK", "value": "0"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 10},
        "ports": [{"containerPort": 23456, "name": "pt", "protocol": "TCP"}],
    }


def _realistic_job(job: dict[str, Any], n: int) -> dict[str, Any]:
    """``job`` as the API server returns it: managed fields, a uid, templates
    with commands, environment and mounts."""
    out = copy.deepcopy(job)
    meta = out["metadata"]
    meta.update(uid=f"0000-{n}", resourceVersion=str(100 + n), generation=2)
    meta["managedFields"] = [{"manager": "t9k", "operation": "Update", "time": STAMP}]
    meta.setdefault("annotations", {})["t9k.dev/owner"] = "alice"

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "containers":
                    value[k] = [_noisy_container(c) for c in v]
                else:
                    visit(v)
        elif isinstance(value, list):
            for v in value:
                visit(v)

    visit(out["spec"])
    return out


def _realistic_pod(pod: dict[str, Any], n: int) -> dict[str, Any]:
    """``pod`` with what a kubelet and the API server add: owner, uid,
    volumes, probes, conditions, container states (one restarted)."""
    out = copy.deepcopy(pod)
    meta, spec, status = out["metadata"], out["spec"], out["status"]
    labels = meta.get("labels") or {}
    meta.update(uid=f"pod-{n}", resourceVersion=str(500 + n), creationTimestamp=STAMP)
    meta["managedFields"] = [{"manager": "kubelet", "operation": "Update", "time": STAMP}]
    if labels.get("t9k.dev/job-name"):
        meta["ownerReferences"] = [
            {"kind": labels["t9k.dev/job-kind"], "name": labels["t9k.dev/job-name"]}
        ]
    spec["containers"] = [_noisy_container(c) for c in spec["containers"]]
    spec["initContainers"] = [
        {"name": "init", "image": "busybox", "env": [{"name": "FROM", "value": "x"}]}
    ]
    spec["volumes"] = [{"name": "data", "emptyDir": {}}]
    status.setdefault(
        "conditions", [{"type": "Ready", "status": "True", "lastTransitionTime": STAMP}]
    )
    if status["phase"] == "Running":
        status.setdefault(
            "containerStatuses",
            [
                {
                    "name": c["name"],
                    "ready": True,
                    "restartCount": 1,
                    "state": {"running": {"startedAt": STAMP}},
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                }
                for c in spec["containers"]
            ],
        )
    return out


def _world(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Obj], list[Obj]]:
    """The bench's jobs and pods, as the API server returns them (untransformed)."""
    monkeypatch.setattr(world, "JOB_TRANSFORM", lambda obj: obj)
    monkeypatch.setattr(world, "POD_TRANSFORM", lambda obj: obj)
    jobs: list[Obj] = [world.job(i, "Pending" if i % 3 else "Running") for i in range(4)]
    pods: list[Obj] = [p for i in range(4) for p in world.pods(i)]
    return jobs, pods


def _full(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Obj], list[Obj]]:
    full = [
        _realistic_job(j, n) for n, j in enumerate([f.MNIST, f.LLM, f.MS, f.MNIST_CHECKPOINTED])
    ]
    full[3]["metadata"]["name"] = "mnist-checkpointed"  # beside MNIST, which it is
    jobs: list[Obj] = list(full)
    pods: list[Obj] = [_realistic_pod(p, n) for n, p in enumerate(f.PODS)]
    more_jobs, more_pods = _world(monkeypatch)
    return jobs + more_jobs, pods + more_pods


def _through(
    transforms: Any, jobs: Sequence[Obj], pods: Sequence[Obj]
) -> tuple[list[Obj], list[Obj]]:
    """Each object as an informer of its resource caches it, then typed as
    the console's handlers type a job (a list's items lack their kind)."""
    cached_jobs: list[Obj] = [
        {
            "apiVersion": j["apiVersion"],
            "kind": j["kind"],
            **transforms(_resource(j["kind"]))(copy.deepcopy(dict(j))),
        }
        for j in jobs
    ]
    cached_pods: list[Obj] = [transforms(PODS)(copy.deepcopy(dict(p))) for p in pods]
    return cached_jobs, cached_pods


def _rows(jobs: Sequence[Obj], pods: Sequence[Obj]) -> list[tuple[str, tuple[str, ...]]]:
    return [(r.key, r.cells) for r in board_of(jobs, pods).rows()]


def test_the_rows_from_the_shared_objects_are_those_from_the_full_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs, pods = _full(monkeypatch)
    kinds = {j["kind"] for j in jobs}
    assert {"PyTorchTrainingJob", "DeepSpeedJob", "MSJob"} <= kinds
    shared_jobs, shared_pods = _through(console_transform, jobs, pods)
    full_rows = _rows(jobs, pods)
    assert len(full_rows) == len(jobs)
    assert any(cells[5] not in ("0", "-") for _, cells in full_rows)  # GPU jobs among them
    assert _rows(shared_jobs, shared_pods) == full_rows


def test_the_job_and_gpus_pages_show_what_they_showed(monkeypatch: pytest.MonkeyPatch) -> None:
    jobs, pods = _full(monkeypatch)
    before = _through(transform_for, jobs, pods)
    after = _through(console_transform, jobs, pods)
    for (job, job_pods), (was, was_pods) in zip(_pairs(*after), _pairs(*before), strict=True):
        assert job_detail(job, job_pods, [], f.NOW) == job_detail(was, was_pods, [], f.NOW)
    # Nothing dropped: the cached objects are equal to the operator's own.
    assert after == before
    monkeypatch.setattr(views, "now_utc", lambda: f.NOW)
    assert gpus.gpu_view(_pairs(*after), f.NODES) == gpus.gpu_view(_pairs(*before), f.NODES)


def _pairs(jobs: Sequence[Obj], pods: Sequence[Obj]) -> list[tuple[Obj, list[Obj]]]:
    board = board_of(jobs, pods)
    found = [board.job(key) for key, _ in _rows(jobs, pods)]
    return [(j, list(p)) for j, p in (x for x in found if x is not None)]


def test_equal_parts_are_one_object_and_the_input_is_not_changed() -> None:
    table = SubtreeTable()
    job = _realistic_job(f.MNIST, 1)
    kept = copy.deepcopy(job)
    first = table.share(job, look_up=False)
    second = table.share(copy.deepcopy(job), look_up=False)
    assert first == second == kept and job == kept
    assert first is not second and first["metadata"] is not second["metadata"]
    assert first["spec"] is second["spec"]
    assert "&id" not in render.dump([first], "yaml")  # a shared part is written in full
    master, worker = first["spec"]["replicaSpecs"]
    assert master["template"] is worker["template"]  # the same template, held once


def test_values_equal_as_numbers_but_not_as_json_stay_apart() -> None:
    table = SubtreeTable()
    one, true, real = (table.share({"v": v}) for v in (1, True, 1.0))
    assert [type(x["v"]) for x in (one, true, real)] == [int, bool, float]
    assert table.share(["a", "b"]) is not table.share({"a": "b"})
    assert table.share({"a": "b"}) is table.share({"a": "b"})


def test_the_table_is_bounded() -> None:
    table = SubtreeTable(limit=10)
    for n in range(100):
        table.share({"n": str(n)})
    assert len(table) <= 10
    again = table.share({"n": "99"})
    assert again == {"n": "99"}
