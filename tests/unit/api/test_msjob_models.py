"""The MSJob models against the MindSpore operator doc (seed 004).

``SPEC_EXAMPLES`` holds the doc's data-parallel example exactly as written
(comments included): ms-operator users must be able to apply it unchanged.
``STATUS_EXAMPLES`` holds a Kubeflow-style status as ms-operator reports it,
and one with the operator's own bookkeeping fields. ``INVALID_SPECS`` are
specs the models (and, in tests/integration/test_crd_msjob.py, the API
server) must refuse, each with the text the error must contain.
tests/integration/test_crd_msjob.py applies the same documents to a real API
server.
"""

# The doc's example is kept verbatim: its comments hold full-width punctuation and
# its command lines are long.
# ruff: noqa: RUF001, E501

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.crd import MSG_JOB_NAME
from t9k_operator.api.msjob import (
    CRD,
    DEFAULT_PORT,
    MSG_MINDSPORE_CONTAINER,
    MSG_ONE_SCHEDULER,
    MSG_POD_NAME_LENGTH,
    MSG_UNKNOWN_ROLE,
    MSJobObject,
    MSJobSpec,
    MSJobStatus,
    MSReplicaSpec,
    MSRunPolicy,
    mindspore_container,
    pod_name,
    pod_names_fit,
    scheduler_port,
)
from tests.unit.api.test_pytorch_models import is_subset, load

JOB = "ms-widedeep-dataparallel"

SPEC_EXAMPLES: dict[str, str] = {
    # Verbatim from the doc ("YAML文件配置说明").
    "data-parallel": """\
apiVersion: mindspore.gitee.com/v1
kind: MSJob  # ms-operator自定的CRD类型，为MSJob
metadata:
  name: ms-widedeep-dataparallel  # 任务名
spec:
  runPolicy: # RunPolicy 封装了分布式训练作业的各种运行时策略，例如如何清理资源以及作业可以保持活动多长时间。
    cleanPodPolicy: None   # All/Running/None
  successPolicy: AllWorkers # 将MSJob标记为success的条件，默认为空，代表使用默认规则（单worker执行完毕即表示成功）
  msReplicaSpecs:
    Scheduler:
      replicas: 1  # Scheduler数量
      restartPolicy: Never  # 重启策略 Always，OnFailure，Never
      template:
        spec:
          volumes: # 文件挂载，如数据集、网络脚本等
            - name: script-data
              hostPath:
                path: /absolute_path
          containers:
            - name: mindspore # 各个角色中必须有且只有一个mindspore名字的container，可配置containerPort来调整默认端口号（2222），需设置端口name为 msjob-port
              image: mindspore-image-name:tag # mindspore镜像
              imagePullPolicy: IfNotPresent
              command: # 容器启动后的执行命令
                - /bin/bash
                - -c
                - python -s /absolute_path/train_and_eval_distribute.py --device_target="GPU" --epochs=1 --data_path=/absolute_path/criteo_mindrecord  --batch_size=16000
              volumeMounts:
                - mountPath: /absolute_path
                  name: script-data
              env:  # 可配置环境变量
                - name: GLOG_v
                  value: "1"
    Worker:
      replicas: 4 # Worker数量
      restartPolicy: Never
      template:
        spec:
          volumes:
            - name: script-data
              hostPath:
                path: /absolute_path
          containers:
            - name: mindspore
              image: mindspore-image-name:tag # mindspore镜像
              imagePullPolicy: IfNotPresent
              command:
                - /bin/bash
                - -c
                - python -s /absolute_path/train_and_eval_distribute.py --device_target="GPU" --epochs=1 --data_path=/absolute_path/criteo_mindrecord --batch_size=16000
              volumeMounts:
                - mountPath: /absolute_path
                  name: script-data
              env:
                - name: GLOG_v
                  value: "1"
              resources: # 资源限制配置
                limits:
                  nvidia.com/gpu: 1
""",
}

STATUS_EXAMPLES: dict[str, str] = {
    # What ms-operator (Kubeflow's common job controller) writes.
    "kubeflow": """\
conditions:
- type: Created
  status: "True"
  reason: MSJobCreated
  message: MSJob default/ms-widedeep-dataparallel is created.
  lastUpdateTime: "2023-05-10T08:00:00Z"
  lastTransitionTime: "2023-05-10T08:00:00Z"
- type: Running
  status: "True"
  reason: MSJobRunning
  message: MSJob default/ms-widedeep-dataparallel is running.
  lastUpdateTime: "2023-05-10T08:00:05Z"
  lastTransitionTime: "2023-05-10T08:00:05Z"
replicaStatuses:
  Scheduler:
    active: 1
  Worker:
    active: 3
    failed: 1
startTime: "2023-05-10T08:00:00Z"
lastReconcileTime: "2023-05-10T08:00:05Z"
""",
    # The engine's bookkeeping fields, stored next to the Kubeflow ones.
    "engine": """\
phase: Running
observedGeneration: 1
restartCount: 1
countedFailures:
- 3f1c9a52-0d0e-4b7a-9d7f-5a8c2b1e4f60
tasks:
- type: worker
  restartCount: 1
  replicas:
  - name: ms-widedeep-dataparallel-worker-0
    uid: 908a93f0-7b8b-491e-85d5-3da0abcb4ca4
    phase: Running
    containers:
    - name: mindspore
      state: Running
aggregate:
  creating: 0
  deleted: 0
  failed: 0
  pending: 0
  running: 5
  succeeded: 0
  unknown: 0
replicas: 5
readyReplicas: 5
""",
}


def example() -> dict[str, Any]:
    return load(SPEC_EXAMPLES["data-parallel"])


def job_with(changes: dict[str, Any], name: str = JOB) -> dict[str, Any]:
    """The doc's example with ``changes`` merged into its spec (None removes a key)."""
    obj = example()
    obj["metadata"]["name"] = name
    for key, value in changes.items():
        if value is None:
            obj["spec"].pop(key, None)
        else:
            obj["spec"][key] = value
    return obj


def role(replicas: int = 1, container: str = "mindspore", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": container, "image": "ms:tag"}]}},
    }
    spec.update(extra)
    return spec


_SPECS = "spec.msReplicaSpecs"

INVALID_SPECS: dict[str, tuple[dict[str, Any], str, list[str]]] = {
    # name -> (spec changes, job name, fragments the API server's error must contain)
    "unknown-role": (
        {"msReplicaSpecs": {"Worker": role(), "Chief": role()}},
        JOB,
        [_SPECS, MSG_UNKNOWN_ROLE],
    ),
    "gang-of-no-pods": (
        {
            "runPolicy": {"schedulingPolicy": {"minAvailable": 0}},
            "msReplicaSpecs": {"Worker": role()},
        },
        JOB,
        ["spec.runPolicy.schedulingPolicy.minAvailable", "greater than or equal to 1"],
    ),
    "lower-case-role": ({"msReplicaSpecs": {"worker": role()}}, JOB, [_SPECS, MSG_UNKNOWN_ROLE]),
    "two-schedulers": (
        {"msReplicaSpecs": {"Scheduler": role(2), "Worker": role(4)}},
        JOB,
        [f"{_SPECS}.Scheduler.replicas", MSG_ONE_SCHEDULER],
    ),
    "worker-without-mindspore": (
        {"msReplicaSpecs": {"Scheduler": role(), "Worker": role(4, container="main")}},
        JOB,
        [f"{_SPECS}[Worker].template", MSG_MINDSPORE_CONTAINER],
    ),
    "scheduler-without-containers": (
        {"msReplicaSpecs": {"Scheduler": {"template": {"spec": {}}}, "Worker": role()}},
        JOB,
        [f"{_SPECS}[Scheduler].template", MSG_MINDSPORE_CONTAINER],
    ),
    "no-template": (
        {"msReplicaSpecs": {"Worker": {"replicas": 1}}},
        JOB,
        [f"{_SPECS}.Worker.template", "Required value"],
    ),
    "no-roles": ({"msReplicaSpecs": {}}, JOB, [_SPECS, "at least 1"]),
    "no-replica-specs": ({"msReplicaSpecs": None}, JOB, [_SPECS, "Required value"]),
    "negative-replicas": (
        {"msReplicaSpecs": {"Worker": role(-1)}},
        JOB,
        [f"{_SPECS}.Worker.replicas", "greater than or equal to 0"],
    ),
    "bad-restart-policy": (
        {"msReplicaSpecs": {"Worker": role(restartPolicy="Sometimes")}},
        JOB,
        [f"{_SPECS}.Worker.restartPolicy", "Unsupported value"],
    ),
    "bad-success-policy": (
        {"successPolicy": "AnyWorker"},
        JOB,
        ["spec.successPolicy", "Unsupported value"],
    ),
    "bad-clean-pod-policy": (
        {"runPolicy": {"cleanPodPolicy": "Some"}},
        JOB,
        ["spec.runPolicy.cleanPodPolicy", "Unsupported value"],
    ),
    "negative-backoff-limit": (
        {"runPolicy": {"backoffLimit": -1}},
        JOB,
        ["spec.runPolicy.backoffLimit", "greater than or equal to 0"],
    ),
    "zero-deadline": (
        {"runPolicy": {"activeDeadlineSeconds": 0}},
        JOB,
        ["spec.runPolicy.activeDeadlineSeconds", "greater than or equal to 1"],
    ),
    "min-resources-not-a-quantity": (
        {"runPolicy": {"schedulingPolicy": {"minResources": {"cpu": "4", "memory": "lots"}}}},
        JOB,
        ["spec.runPolicy.schedulingPolicy.minResources.memory", "should match"],
    ),
    "min-resources-a-boolean": (
        {"runPolicy": {"schedulingPolicy": {"minResources": {"cpu": True}}}},
        JOB,
        ["spec.runPolicy.schedulingPolicy.minResources.cpu", "must not validate"],
    ),
    "name-not-a-dns-1035-label": ({}, "1st-msjob", ["metadata.name", "DNS-1035"]),
    "name-with-dot": ({}, "ms.job", ["metadata.name", "DNS-1035"]),
    # 54 + len("-worker-3") == 63 fits; one more character does not.
    "name-too-long-for-workers": ({}, "m" + "x" * 54, ["metadata.name", MSG_POD_NAME_LENGTH]),
    # "-scheduler-0" is longer than "-worker-3".
    "name-too-long-for-scheduler": ({}, "m" + "x" * 51, ["metadata.name", MSG_POD_NAME_LENGTH]),
    "name-too-long-for-ps": (
        {"msReplicaSpecs": {"Scheduler": role(), "PS": role(100), "Worker": role()}},
        "m" + "x" * 54,
        ["metadata.name", MSG_POD_NAME_LENGTH],
    ),
}


# -- the doc's example ------------------------------------------------------------------


def test_the_docs_example_parses_exactly_as_written() -> None:
    raw = example()
    parsed = MSJobObject.from_dict(raw)
    assert (parsed.api_version, parsed.kind, parsed.name) == (
        "mindspore.gitee.com/v1",
        "MSJob",
        JOB,
    )
    assert is_subset(raw, parsed.to_dict())
    spec = parsed.spec
    assert spec.run_policy.clean_pod_policy == "None"
    assert spec.success_policy == "AllWorkers"
    assert list(spec.ms_replica_specs) == ["Scheduler", "Worker"]
    scheduler, worker = spec.ms_replica_specs["Scheduler"], spec.ms_replica_specs["Worker"]
    assert (scheduler.replicas, scheduler.restart_policy) == (1, "Never")
    assert (worker.replicas, worker.restart_policy) == (4, "Never")
    # Templates are kept whole, byte for byte.
    for name, replica in spec.ms_replica_specs.items():
        assert replica.template == raw["spec"]["msReplicaSpecs"][name]["template"]
    container = mindspore_container(worker.template)
    assert container is not None
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert container["env"] == [{"name": "GLOG_v", "value": "1"}]
    assert worker.template["spec"]["volumes"][0]["hostPath"] == {"path": "/absolute_path"}
    assert (spec.worker_num, spec.server_num) == (4, 0)
    assert scheduler_port(scheduler.template) == DEFAULT_PORT == 2222
    assert parsed.status is None


def test_the_example_is_verbatim() -> None:
    text = SPEC_EXAMPLES["data-parallel"]
    assert "kind: MSJob  # ms-operator" in text
    assert "successPolicy: AllWorkers # " in text
    assert text.count("name: mindspore") == 2


# -- defaults --------------------------------------------------------------------------------


def test_defaults() -> None:
    spec = MSJobSpec.model_validate(
        {"msReplicaSpecs": {"Worker": {"template": role()["template"]}}}
    )
    assert spec.success_policy == ""
    assert spec.run_policy == MSRunPolicy()
    policy = spec.run_policy
    assert policy.clean_pod_policy == "Running"
    assert (policy.backoff_limit, policy.active_deadline_seconds) == (3, None)
    assert (policy.ttl_seconds_after_finished, policy.scheduling_policy) == (None, None)
    worker = spec.ms_replica_specs["Worker"]
    assert (worker.replicas, worker.restart_policy) == (1, None)
    assert worker.effective_restart_policy == "Never"
    status = MSJobStatus()
    assert (status.conditions, status.replica_statuses, status.phase) == ([], {}, None)
    assert (status.restart_count, status.counted_failures, status.last_reconcile_time) == (
        0,
        [],
        None,
    )


def test_kubeflow_run_policy_fields_are_kept() -> None:
    spec = MSJobSpec.model_validate(
        {
            "runPolicy": {
                "cleanPodPolicy": "All",
                "backoffLimit": 0,
                "activeDeadlineSeconds": 3600,
                "ttlSecondsAfterFinished": 600,
                "schedulingPolicy": {"minAvailable": 5, "queue": "default"},
            },
            "msReplicaSpecs": {"Worker": role(restartPolicy="ExitCode")},
        }
    )
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    assert dumped["runPolicy"] == {
        "cleanPodPolicy": "All",
        "backoffLimit": 0,
        "activeDeadlineSeconds": 3600,
        "ttlSecondsAfterFinished": 600,
        "schedulingPolicy": {"minAvailable": 5, "queue": "default"},
    }
    assert spec.ms_replica_specs["Worker"].effective_restart_policy == "ExitCode"


def test_helpers() -> None:
    spec = MSJobSpec.model_validate(
        {"msReplicaSpecs": {"Scheduler": role(), "PS": role(2), "Worker": role(8)}}
    )
    assert (spec.worker_num, spec.server_num, spec.replicas("Scheduler")) == (8, 2, 1)
    assert pod_name("job", "Scheduler", 0) == "job-scheduler-0"
    assert pod_name("job", "PS", 1) == "job-ps-1"
    assert pod_names_fit("m" + "x" * 50, spec)  # 51 + len("-scheduler-0") == 63
    assert not pod_names_fit("m" + "x" * 51, spec)
    template = role()["template"]
    template["spec"]["containers"][0]["ports"] = [{"name": "msjob-port", "containerPort": 3333}]
    assert scheduler_port(template) == 3333
    assert mindspore_container({"spec": {"containers": [{"name": "other"}]}}) is None


def test_zero_replicas_are_allowed() -> None:
    spec = MSJobSpec.model_validate({"msReplicaSpecs": {"Scheduler": role(0), "Worker": role(0)}})
    assert spec.replicas("Scheduler") == 0
    assert pod_names_fit("m" + "x" * 50, spec)  # the last index of an empty role is 0


# -- status -------------------------------------------------------------------------------------


def test_kubeflow_status_fields() -> None:
    status = MSJobStatus.model_validate(load(STATUS_EXAMPLES["kubeflow"]))
    assert [c.type for c in status.conditions] == ["Created", "Running"]
    assert status.conditions[1].last_update_time == "2023-05-10T08:00:05Z"
    assert status.replica_statuses["Worker"].active == 3
    assert status.replica_statuses["Worker"].failed == 1
    assert status.replica_statuses["Scheduler"].succeeded == 0
    assert status.last_reconcile_time == "2023-05-10T08:00:05Z"
    engine = MSJobStatus.model_validate(load(STATUS_EXAMPLES["engine"]))
    assert (engine.phase, engine.restart_count, engine.ready_replicas) == ("Running", 1, 5)
    assert engine.aggregate is not None and engine.aggregate.running == 5
    assert engine.tasks[0].replicas[0].containers[0].name == "mindspore"


# -- invalid specs are refused ------------------------------------------------------------------


# Messages the models share with the schema; other cases are refused by pydantic's own
# constraints (enum, bounds, required fields), whose wording differs from the API server's.
_MODEL_MESSAGES = (
    MSG_UNKNOWN_ROLE,
    MSG_ONE_SCHEDULER,
    MSG_MINDSPORE_CONTAINER,
    MSG_POD_NAME_LENGTH,
    "DNS-1035",
)


@pytest.mark.parametrize("case", list(INVALID_SPECS))
def test_invalid_spec_is_refused(case: str) -> None:
    changes, name, fragments = INVALID_SPECS[case]
    with pytest.raises(ValidationError) as info:
        MSJobObject.from_dict(job_with(copy.deepcopy(changes), name))
    if fragments[-1] in _MODEL_MESSAGES:
        assert fragments[-1] in str(info.value)
    if fragments[-1] == "DNS-1035":
        assert MSG_JOB_NAME in str(info.value)


def test_min_resources_are_quantities_as_the_pod_api_takes_them() -> None:
    ok = {"cpu": 0.5, "memory": "2Gi", "nvidia.com/gpu": 4, "storage": "1e3"}
    job = MSJobObject.from_dict(job_with({"runPolicy": {"schedulingPolicy": {"minResources": ok}}}))
    assert job.spec.run_policy.scheduling_policy is not None
    assert job.spec.run_policy.scheduling_policy.min_resources == ok
    with pytest.raises(ValidationError, match="'lots' is not a quantity"):
        MSJobObject.from_dict(
            job_with({"runPolicy": {"schedulingPolicy": {"minResources": {"cpu": "lots"}}}})
        )


def test_longest_names_that_fit_are_accepted() -> None:
    MSJobObject.from_dict(job_with({}, "m" + "x" * 50))  # -scheduler-0
    MSJobObject.from_dict(job_with({"msReplicaSpecs": {"Worker": role(4)}}, "m" + "x" * 53))


def test_replica_spec_alone() -> None:
    with pytest.raises(ValidationError, match="mindspore"):
        MSReplicaSpec.model_validate({"template": {}})
    with pytest.raises(ValidationError):
        MSReplicaSpec.model_validate(role(restartPolicy="Sometimes"))


def test_crd_descriptor() -> None:
    assert CRD.name == "msjobs.mindspore.gitee.com"
    assert CRD.api_version == "mindspore.gitee.com/v1"
    assert CRD.categories == ("mindspore", "t9k")
    assert (CRD.group, CRD.version, CRD.kind) == ("mindspore.gitee.com", "v1", "MSJob")
    # Its own columns; the integrations' (Progress, ETA) join before Age in the
    # generated CRD (test_progress_models.py).
    assert [c.name for c in CRD.printer_columns] == ["State", "Reason", "Age"]
