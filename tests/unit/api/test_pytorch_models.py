"""The PyTorchTrainingJob models against the examples of its product doc (seed 001).

``SPEC_EXAMPLES`` holds every YAML example of the doc that has a spec, each
made a whole object: a ``...`` is filled minimally (a container name and
image), and a fragment gets the header of the doc's first example and a
minimal ``replicaSpecs``. ``STATUS_EXAMPLES`` holds the doc's status examples.
tests/integration/test_crd_pytorch.py applies the same documents to a real
API server.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.pytorch import (
    CRD,
    MSG_DISTINCT_TYPES,
    MSG_ELASTIC_NEEDS_TORCHRUN,
    MSG_ONE_MASTER,
    ElasticConfig,
    PyTorchTrainingJobObject,
    PyTorchTrainingJobSpec,
    PyTorchTrainingJobStatus,
    TorchrunConfig,
)
from t9k_operator.api.specs import (
    MSG_ELASTIC_BOUNDS_REQUIRED,
    MSG_ELASTIC_EXPECTED,
    MSG_ELASTIC_MIN_MAX,
    RunPolicy,
    T9kScheduler,
)
from tests.unit.api.helpers import is_subset, load

HEADER = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: pytorch-example
"""
MINIMAL_REPLICAS = """\
  replicaSpecs:
  - type: worker
    template:
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel
"""

SPEC_EXAMPLES: dict[str, str] = {
    "basic": HEADER
    + """\
spec:
  replicaSpecs:
  - replicas: 4
    restartPolicy: OnFailure
    template:
      spec:
        containers:
        - command:
          - python
          - dist_mnist.py
          image: pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel
          name: pytorch
    type: worker
""",
    "resources": HEADER
    + """\
spec:
  replicaSpecs:
    - type: worker
      replicas: 4
      template:
        spec:
          containers:
          - resources:
              limits:
                cpu: 4
                memory: 4Gi
              requests:
                cpu: 2
                memory: 2Gi
""",
    "shared-memory": HEADER
    + """\
spec:
  replicaSpecs:
    - type: worker
      replicas: 4
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel
            volumeMounts:
              - mountPath: /dev/shm
                name: dshm
          volumes:
          - name: dshm
            emptyDir:
              medium: Memory
              sizeLimit: "1Gi"
""",
    "env": HEADER
    + """\
spec:
  replicaSpecs:
    - type: worker
      replicas: 4
      template:
        spec:
          containers:
            - env:
              - name: ENV_DIRECT
                value: env-value
              - name: ENV_REFERENCED
                valueFrom:
                  secretKeyRef:
                    name: secret-name
                    key: key-in-secret
""",
    "torchrun": HEADER
    + """\
spec:
  torchrunConfig:
    enabled: true
    maxRestarts: 10
    procPerNode: "1"
    rdzvBackend: c10d
    extraOptions: []
"""
    + MINIMAL_REPLICAS,
    # Elastic training needs torchrun: the fragment alone is refused (see below).
    "elastic": HEADER
    + """\
spec:
  torchrunConfig:
    enabled: true
  elastic:
    enabled: true
    minReplicas: 4
    maxReplicas: 10
    expectedReplicas: 7
"""
    + MINIMAL_REPLICAS,
    "best-practice-script": HEADER
    + """\
spec:
  torchrunConfig:
    enabled: false
    maxRestarts: 10
    procPerNode: "1"
    rdzvBackend: c10d
    extraOptions: []
  replicaSpecs:
  - replicas: 4
    restartPolicy: OnFailure
    template:
      spec:
        containers:
        - command:
          - python
          args:
          - dist_mnist.py
          image: pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel
          name: pytorch
    type: worker
""",
    "best-practice-module": HEADER
    + """\
spec:
  torchrunConfig:
    enabled: false
  replicaSpecs:
  - replicas: 4
    restartPolicy: OnFailure
    template:
      spec:
        containers:
        - command:
          - python
          args:
          - -m
          - training.module
          image: pytorch/pytorch:2.0.0-cuda11.7-cudnn8-devel
          name: pytorch
    type: worker
""",
    "scheduler": HEADER
    + """\
spec:
  scheduler:
    t9kScheduler:
      queue: default
      priority: 50
"""
    + MINIMAL_REPLICAS,
    "debug-1": HEADER
    + """\
spec:
  runMode:
    debug:
      enabled: true
      replicaSpecs:
        - type: worker
          skipInitContainer: true
          command: ["/usr/bin/sshd"]
"""
    + MINIMAL_REPLICAS,
    "debug-2": HEADER
    + """\
spec:
  runMode:
    debug:
      enabled: true
"""
    + MINIMAL_REPLICAS,
    "pause-1": HEADER
    + """\
spec:
  runMode:
    pause:
      enabled: true
      resumeSpecs:
        - type: worker
          skipInitContainer: true
          command: ["/usr/bin/sshd"]
"""
    + MINIMAL_REPLICAS,
    "pause-2": HEADER
    + """\
spec:
  runMode:
    pause:
      enabled: true
"""
    + MINIMAL_REPLICAS,
}

STATUS_EXAMPLES: dict[str, str] = {
    "conditions": """\
conditions:
  - lastTransitionTime: "2023-12-19T02:40:25Z"
    message: The job has been initialized successfully.
    reason: '-'
    status: "True"
    type: Initialized
  - lastTransitionTime: "2023-12-19T02:53:14Z"
    message: The job has finished successfully.
    reason: Succeeded
    status: "False"
    type: Running
  - lastTransitionTime: "2023-12-19T02:53:14Z"
    message: The job has finished successfully.
    reason: Succeeded
    status: "False"
    type: Failed
  - lastTransitionTime: "2023-12-19T02:53:14Z"
    message: The job has finished successfully.
    reason: Succeeded
    status: "True"
    type: Completed
  - lastTransitionTime: "2023-12-19T02:40:25Z"
    message: All pods are running normally.
    reason: '-'
    status: "False"
    type: ReplicaFailure
phase: Succeeded
""",
    "tasks": """\
tasks:
- replicas:
  - containers:
    - exitCode: 0
      name: pytorch
      state: Terminated
    name: torch-mnist-trainingjob-5b373-worker-0
    phase: Succeeded
    uid: d39f91d6-9c48-4c57-bb71-4131226395b6
  type: worker
""",
    "aggregate": """\
aggregate:
  creating: 0
  deleted: 0
  failed: 0
  pending: 1
  running: 2
  succeeded: 0
  unknown: 0
""",
    "tensorboard": """\
tensorboard:
  action: NOP
  dependent:
    apiVersion: tensorstack.dev/v1beta1
    kind: TensorBoard
    name: torch-mnist-trainingjob-5b373
    namespace: demo
    uid: b09378f3-2164-4f14-a425-a1340fa32d7d
  note: TensorBoard [torch-mnist-trainingjob-5b373] is ready
  ready: true
  reason: DependentReady
  type: Normal
""",
}


def spec_with(**changes: Any) -> dict[str, Any]:
    spec = load(SPEC_EXAMPLES["basic"])["spec"]
    spec.update(changes)
    return spec


def worker(type_: str = "worker", **fields: Any) -> dict[str, Any]:
    return {"type": type_, "template": {"spec": {"containers": []}}, **fields}


# -- the doc's examples ----------------------------------------------------------------


@pytest.mark.parametrize("name", list(SPEC_EXAMPLES))
def test_every_seed_example_parses_and_round_trips(name: str) -> None:
    raw = load(SPEC_EXAMPLES[name])
    job = PyTorchTrainingJobObject.from_dict(raw)
    assert job.kind == "PyTorchTrainingJob"
    assert job.name == "pytorch-example"
    dumped = job.to_dict()
    assert is_subset(raw, dumped), dumped
    # Templates are kept whole, byte for byte.
    for sent, parsed in zip(raw["spec"]["replicaSpecs"], job.spec.replica_specs, strict=True):
        assert parsed.template == sent["template"]


@pytest.mark.parametrize("name", list(STATUS_EXAMPLES))
def test_every_seed_status_example_parses_and_round_trips(name: str) -> None:
    raw = load(STATUS_EXAMPLES[name])
    status = PyTorchTrainingJobStatus.model_validate(raw)
    assert is_subset(raw, status.model_dump(by_alias=True, exclude_none=True))


def test_basic_example_fields() -> None:
    job = PyTorchTrainingJobObject.from_dict(load(SPEC_EXAMPLES["basic"]))
    (replica,) = job.spec.replica_specs
    assert (replica.type, replica.replicas, replica.restart_policy) == ("worker", 4, "OnFailure")
    assert replica.template["spec"]["containers"][0]["command"] == ["python", "dist_mnist.py"]
    assert job.status is None


def test_torchrun_elastic_and_scheduler_examples() -> None:
    torchrun = PyTorchTrainingJobObject.from_dict(load(SPEC_EXAMPLES["torchrun"])).spec
    assert torchrun.torchrun_config == TorchrunConfig(
        enabled=True, max_restarts=10, proc_per_node="1", rdzv_backend="c10d"
    )
    assert torchrun.torchrun_enabled and not torchrun.elastic_enabled
    elastic = PyTorchTrainingJobObject.from_dict(load(SPEC_EXAMPLES["elastic"])).spec
    assert elastic.elastic == ElasticConfig(
        enabled=True, min_replicas=4, max_replicas=10, expected_replicas=7
    )
    scheduler = PyTorchTrainingJobObject.from_dict(load(SPEC_EXAMPLES["scheduler"])).spec
    assert scheduler.scheduler is not None
    assert scheduler.scheduler.t9k_scheduler == T9kScheduler(queue="default", priority=50)


def test_debug_and_pause_examples() -> None:
    debug = PyTorchTrainingJobObject.from_dict(load(SPEC_EXAMPLES["debug-1"])).spec.run_mode
    assert debug is not None and debug.debug is not None
    assert debug.debug.enabled
    (setting,) = debug.debug.replica_specs
    assert (setting.type, setting.skip_init_container, setting.command) == (
        "worker",
        True,
        ["/usr/bin/sshd"],
    )
    pause = PyTorchTrainingJobObject.from_dict(load(SPEC_EXAMPLES["pause-2"])).spec.run_mode
    assert pause is not None and pause.pause is not None
    assert pause.pause.enabled and pause.pause.resume_specs == []
    assert pause.debug is None


def test_status_examples_fields() -> None:
    status = PyTorchTrainingJobStatus.model_validate(load(STATUS_EXAMPLES["conditions"]))
    assert status.phase == "Succeeded"
    completed = next(c for c in status.conditions if c.type == "Completed")
    assert (completed.status, completed.reason) == ("True", "Succeeded")
    assert completed.last_transition_time == "2023-12-19T02:53:14Z"
    tasks = PyTorchTrainingJobStatus.model_validate(load(STATUS_EXAMPLES["tasks"])).tasks
    (container,) = tasks[0].replicas[0].containers
    assert (container.state, container.exit_code) == ("Terminated", 0)
    assert tasks[0].restart_count == 0
    aggregate = PyTorchTrainingJobStatus.model_validate(load(STATUS_EXAMPLES["aggregate"]))
    assert aggregate.aggregate is not None
    assert (aggregate.aggregate.pending, aggregate.aggregate.running) == (1, 2)
    tb = PyTorchTrainingJobStatus.model_validate(load(STATUS_EXAMPLES["tensorboard"])).tensorboard
    assert tb is not None and tb.ready and tb.dependent is not None
    assert tb.dependent.kind == "TensorBoard"


# -- defaults and aliases -----------------------------------------------------------------


def test_defaults() -> None:
    spec = PyTorchTrainingJobSpec.model_validate({"replicaSpecs": [worker()]})
    (replica,) = spec.replica_specs
    assert replica.replicas == 1
    assert replica.restart_policy == "OnFailure"
    assert replica.scaling_weight is None
    assert spec.run_policy == RunPolicy(
        backoff_limit=3, active_deadline_seconds=None, clean_up_policy="None"
    )
    assert spec.torchrun_config is None and not spec.torchrun_enabled
    assert spec.elastic is None and spec.scheduler is None and spec.run_mode is None
    assert spec.tensorboard_spec is None
    torchrun = TorchrunConfig()
    assert not torchrun.enabled
    assert torchrun.max_restarts is None
    assert (torchrun.proc_per_node, torchrun.rdzv_backend, torchrun.extra_options) == (
        "1",
        "c10d",
        [],
    )
    status = PyTorchTrainingJobStatus()
    assert (status.restart_count, status.counted_failures, status.replicas) == (0, [], 0)
    assert status.phase is None and status.conditions == [] and status.tasks == []


def test_aliases_round_trip() -> None:
    raw = {
        "replicaSpecs": [worker(replicas=2, restartPolicy="ExitCode", scalingWeight=3)],
        "torchrunConfig": {"enabled": True, "procPerNode": "gpu", "extraOptions": ["--x"]},
        "runPolicy": {"backoffLimit": 0, "activeDeadlineSeconds": 60, "cleanUpPolicy": "All"},
        "scheduler": {"t9kScheduler": {"queue": "q"}},
        "runMode": {"pause": {"enabled": False, "resumeSpecs": [{"type": "worker", "args": []}]}},
        "tensorboardSpec": {"image": "tb:1", "trainingLogFilesets": ["t9k://pvc/x/logs"]},
    }
    spec = PyTorchTrainingJobSpec.model_validate(raw)
    assert spec.replica_specs[0].scaling_weight == 3
    assert spec.run_policy.active_deadline_seconds == 60
    assert spec.tensorboard_spec is not None
    assert spec.tensorboard_spec.training_log_filesets == ["t9k://pvc/x/logs"]
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    assert is_subset(raw, dumped)
    assert "t9kScheduler" in dumped["scheduler"]
    # Python names work too (populate_by_name), and give the same model.
    again = PyTorchTrainingJobSpec.model_validate(spec.model_dump())
    assert again == spec


def test_crd_descriptor() -> None:
    assert CRD.name == "pytorchtrainingjobs.batch.tensorstack.dev"
    assert CRD.api_version == "batch.tensorstack.dev/v1beta1"
    assert CRD.kind == "PyTorchTrainingJob"
    assert {"pytj", "ptj"} <= set(CRD.short_names)
    assert CRD.categories == ("t9k",)
    assert CRD.scale is not None
    assert CRD.scale.spec_replicas_path == ".spec.elastic.expectedReplicas"


# -- refused input ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["gpu", "1", "8", "16"])
def test_proc_per_node_accepted(value: str) -> None:
    assert TorchrunConfig(proc_per_node=value).proc_per_node == value


@pytest.mark.parametrize("value", ["abc", "0", "01", "-1", "", "GPU", "2 ", "1.5"])
def test_invalid_proc_per_node_rejected(value: str) -> None:
    with pytest.raises(ValidationError, match="procPerNode"):
        TorchrunConfig.model_validate({"procPerNode": value})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"replicaSpecs": [worker("master", replicas=2)]}, MSG_ONE_MASTER),
        (
            {"replicaSpecs": [worker("master"), worker("worker"), worker("master")]},
            MSG_DISTINCT_TYPES,
        ),
        ({"replicaSpecs": [worker(), worker()]}, MSG_DISTINCT_TYPES),
        (
            {
                "elastic": {
                    "enabled": True,
                    "minReplicas": 1,
                    "maxReplicas": 2,
                    "expectedReplicas": 1,
                }
            },
            MSG_ELASTIC_NEEDS_TORCHRUN,
        ),
        (
            {
                "torchrunConfig": {"enabled": False},
                "elastic": {
                    "enabled": True,
                    "minReplicas": 1,
                    "maxReplicas": 2,
                    "expectedReplicas": 1,
                },
            },
            MSG_ELASTIC_NEEDS_TORCHRUN,
        ),
        ({"elastic": {"minReplicas": 5, "maxReplicas": 3}}, MSG_ELASTIC_MIN_MAX),
        (
            {"elastic": {"minReplicas": 2, "maxReplicas": 3, "expectedReplicas": 4}},
            MSG_ELASTIC_EXPECTED,
        ),
        ({"elastic": {"minReplicas": 2, "expectedReplicas": 1}}, MSG_ELASTIC_EXPECTED),
        (
            {"torchrunConfig": {"enabled": True}, "elastic": {"enabled": True}},
            MSG_ELASTIC_BOUNDS_REQUIRED,
        ),
        ({"replicaSpecs": [worker(restartPolicy="Sometimes")]}, "restartPolicy"),
        ({"replicaSpecs": [worker(replicas=-1)]}, "replicas"),
        ({"replicaSpecs": [worker("Worker")]}, "type"),
        ({"replicaSpecs": [worker("a_b")]}, "type"),
        ({"replicaSpecs": []}, "replicaSpecs"),
        ({"runPolicy": {"backoffLimit": -1}}, "backoffLimit"),
        ({"runPolicy": {"activeDeadlineSeconds": 0}}, "activeDeadlineSeconds"),
        ({"runPolicy": {"cleanUpPolicy": "Some"}}, "cleanUpPolicy"),
        ({"torchrunConfig": {"rdzvBackend": "zmq"}}, "rdzvBackend"),
        ({"torchrunConfig": {"maxRestarts": -1}}, "maxRestarts"),
        ({"elastic": {"minReplicas": 0}}, "minReplicas"),
    ],
)
def test_invalid_specs_rejected(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        PyTorchTrainingJobSpec.model_validate(spec_with(**changes))
    assert message in str(info.value)


@pytest.mark.parametrize(
    "replica_specs",
    [
        [worker("master"), worker("worker", replicas=3)],
        [worker("master", replicas=0), worker("worker")],
        [worker("chief"), worker("worker"), worker("ps-1", replicas=0)],
    ],
)
def test_valid_replica_layouts(replica_specs: list[dict[str, Any]]) -> None:
    spec = PyTorchTrainingJobSpec.model_validate({"replicaSpecs": replica_specs})
    assert [r.type for r in spec.replica_specs] == [r["type"] for r in replica_specs]


def test_elastic_disabled_may_keep_partial_settings() -> None:
    spec = PyTorchTrainingJobSpec.model_validate(
        spec_with(elastic={"enabled": False, "expectedReplicas": 3})
    )
    assert spec.elastic is not None and not spec.elastic_enabled


def test_a_name_too_long_for_its_pods_is_refused_by_the_model_as_by_cel() -> None:
    """The Python side of POD_NAME_LENGTH_RULE (every kind's object checks it)."""
    from t9k_operator.api.pytorch import MSG_POD_NAME_LENGTH, PyTorchTrainingJobObject

    def obj(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "PyTorchTrainingJob",
            "metadata": {"name": name},
            "spec": spec_with(**spec),
        }

    fits = "a" * (63 - len("-worker-0"))
    assert PyTorchTrainingJobObject.from_dict(obj(fits)).name == fits
    with pytest.raises(ValidationError, match=re.escape(MSG_POD_NAME_LENGTH)):
        PyTorchTrainingJobObject.from_dict(obj(fits + "a"))
