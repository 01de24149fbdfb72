"""The DeepSpeedJob models against the examples of its product doc (seed 000).

``SPEC_EXAMPLES`` holds every YAML example of the doc that has a spec, each
made a whole object: the first example's misspelt kind ``DeepspeedJob`` is
corrected to ``DeepSpeedJob``; a ``...`` container is filled minimally (name
``worker`` and the doc's image); a fragment gets the header of the doc's first
example, and, where the job needs them, a minimal ``config.run`` and
``worker``. The debug-mode fragments get no ``config``: in debug mode it may
be left out. ``STATUS_EXAMPLES`` holds the doc's status examples; in the
tasks example the doc lists a task's replicas under ``status``, which the
shared status model (and every other T9k kind's doc) calls ``replicas``: the
example is corrected accordingly, and the verbatim text is checked separately.
``USER_EXAMPLES`` are the shapes of real users' files that must apply as
written. tests/integration/test_crd_deepspeed.py applies the same documents to
a real API server.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.crd import MSG_JOB_NAME
from t9k_operator.api.deepspeed import (
    CRD,
    MSG_POD_NAME_LENGTH,
    MSG_RESERVED_MOUNTS,
    MSG_RESUME_ARGS_NEED_COMMAND,
    MSG_RUN_REQUIRED,
    DeepSpeedJobObject,
    DeepSpeedJobSpec,
    DeepSpeedJobStatus,
    ElasticConfig,
    WorkerSpec,
    effective_slots,
    effective_worker_count,
    is_reserved_mount_path,
    run_kind_and_argv,
    training_container,
)
from t9k_operator.api.deepspeed_config import (
    MSG_LAUNCHER_PDSH,
    MSG_RESERVED_ARGS,
    MSG_RUN_EXACTLY_ONE,
    DeepSpeedConfig,
    RunConfig,
    is_reserved_arg,
)
from t9k_operator.api.specs import (
    MSG_ELASTIC_BOUNDS_REQUIRED,
    MSG_ELASTIC_EXPECTED,
    MSG_ELASTIC_MIN_MAX,
    RunPolicy,
    T9kScheduler,
)
from tests.unit.api.helpers import (
    assert_pod_template_schema,
    committed_crd,
    load,
    rule_messages,
    schema_of,
)

IMAGE = "deepspeed/deepspeed:v072_torch112_cu117"
HEADER = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: DeepSpeedJob
metadata:
  name: deepspeed-example
"""
MINIMAL_CONFIG = """\
  config:
    run:
      python: /t9k/mnt/train.py
"""
MINIMAL_WORKER = f"""\
  worker:
    replicas: 4
    template:
      spec:
        containers:
        - name: worker
          image: {IMAGE}
"""

SPEC_EXAMPLES: dict[str, str] = {
    "basic": HEADER
    + f"""\
spec:
  config:
    slotPerWorker: 1
    run:
      python: /t9k/mnt/train.py
  worker:
    replicas: 4
    template:
      spec:
        restartPolicy: OnFailure
        containers:
        - image: {IMAGE}
          imagePullPolicy: IfNotPresent
          name: worker
          resources:
            limits:
              cpu: 4
              memory: 4Gi
            requests:
              cpu: 2
              memory: 2Gi
          volumeMounts:
          - mountPath: /t9k/mnt
            name: code
        volumes:
        - name: code
          persistentVolumeClaim:
            claimName: deepspeed
""",
    "resources": HEADER
    + "spec:\n"
    + MINIMAL_CONFIG
    + """\
  worker:
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
    + "spec:\n"
    + MINIMAL_CONFIG
    + f"""\
  worker:
    replicas: 4
    template:
      spec:
        containers:
        - name: worker
          image: {IMAGE}
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
    + "spec:\n"
    + MINIMAL_CONFIG
    + """\
  worker:
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
    "scheduler": HEADER
    + """\
spec:
  scheduler:
    t9kScheduler:
      queue: default
      priority: 50
"""
    + MINIMAL_CONFIG
    + MINIMAL_WORKER,
    # Debug mode: no config at all, as the doc's fragments have none.
    "debug-1": HEADER
    + """\
spec:
  runMode:
    debug:
      enabled: true
      replicaSpecs:
        - type: worker
          skipInitContainer: true
          command: ["sleep", "inf"]
"""
    + MINIMAL_WORKER,
    "debug-2": HEADER
    + """\
spec:
  runMode:
    debug:
      enabled: true
"""
    + MINIMAL_WORKER,
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
    + MINIMAL_CONFIG
    + MINIMAL_WORKER,
    "pause-2": HEADER
    + """\
spec:
  runMode:
    pause:
      enabled: true
"""
    + MINIMAL_CONFIG
    + MINIMAL_WORKER,
}

USER_EXAMPLES: dict[str, str] = {
    # Every config field, otherArgs with a value in one argument, python as a list,
    # and a template with the fields users' files carry.
    "full": HEADER
    + """\
spec:
  config:
    slotsPerWorker: 8
    localRank: false
    autotune: run
    otherArgs: ["--master_port=12346", "--no_ssh_check"]
    run:
      python: ["/workspace/train.py", "--deepspeed", "--deepspeed_config", "ds.json"]
  worker:
    replicas: 2
    restartPolicy: ExitCode
    template:
      metadata:
        labels:
          team: llm
        annotations:
          example.com/note: "kept as is"
      spec:
        hostIPC: true
        nodeSelector:
          accelerator: a100
        tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
        containers:
        - name: worker
          image: deepspeed/deepspeed:v072_torch112_cu117
          workingDir: /workspace
          securityContext:
            capabilities:
              add: ["IPC_LOCK", "SYS_RESOURCE"]
          resources:
            limits:
              cpu: "16"
              memory: 64Gi
              nvidia.com/gpu: 8
              rdma/rdma_shared_device_a: 1
            requests:
              cpu: 8
              memory: 32Gi
              nvidia.com/gpu: 8
              rdma/rdma_shared_device_a: 1
          volumeMounts:
          - mountPath: /dev/shm
            name: dshm
          - mountPath: /workspace
            name: code
            subPath: project
        - name: sidecar
          image: busybox:1.36
          command: ["sh", "-c", "sleep inf"]
          volumeMounts:
          - mountPath: /root/.ssh
            name: code
        volumes:
        - name: dshm
          emptyDir:
            medium: Memory
            sizeLimit: 8Gi
        - name: code
          persistentVolumeClaim:
            claimName: deepspeed
  elastic:
    enabled: true
    minReplicas: 1
    maxReplicas: 4
    expectedReplicas: 2
  runPolicy:
    backoffLimit: 5
    activeDeadlineSeconds: 86400
    cleanUpPolicy: Unfinished
  scheduler:
    t9kScheduler:
      queue: gpu
""",
    # otherArgs with the value as a separate argument; module as a command line.
    "split-args": HEADER
    + """\
spec:
  config:
    slotsPerWorker: 2
    otherArgs: ["--master_port", "12346", "--launcher", "pdsh"]
    run:
      module: "training.main --epochs 3 --name 'two words'"
"""
    + MINIMAL_WORKER,
    "exec": HEADER
    + """\
spec:
  config:
    run:
      exec: ["bash", "-c", "python /t9k/mnt/train.py"]
"""
    + MINIMAL_WORKER,
}

STATUS_EXAMPLES: dict[str, str] = {
    "conditions": """\
conditions:
  - lastTransitionTime: "2021-01-18T02:36:09Z"
    status: "True"
    message: "The job has been initialized successfully."
    reason: "-"
    type: Initializing
  - lastTransitionTime: "2021-01-18T02:36:09Z"
    status: "True"
    message: "All pods are running normally."
    reason: "-"
    type: Running
  - lastTransitionTime: "2021-01-18T02:36:09Z"
    status: "False"
    message: "All pods are running normally."
    reason: "-"
    type: ReplicaFailure
  - lastTransitionTime: "2021-01-18T02:36:31Z"
    status: "False"
    message: "The job exited with an error code."
    reason: "Failed"
    type: Completed
  - lastTransitionTime: "2021-01-18T02:36:31Z"
    status: "True"
    message: "The job exited with an error code."
    reason: "Failed"
    type: Failed
phase: Failed
""",
    # Corrected: the doc lists the replicas under `status` (see the module doc).
    "tasks": """\
tasks:
- type: worker
  restartCount: 0
  replicas:
  - phase: Running
    name: deepspeed-example-worker-0
    uid: e3ec2ee3-6645-4e21-993f-1e472b94e0ae
    containers: []
  - phase: Running
    name: deepspeed-example-worker-1
    uid: 908a93f0-7b8b-491e-85d5-3da0abcb4ca4
    containers: []
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
}
SEED_TASKS_VERBATIM = STATUS_EXAMPLES["tasks"].replace("  replicas:\n", "  status:\n")

ALL_EXAMPLES = {**SPEC_EXAMPLES, **USER_EXAMPLES}


def base_spec() -> dict[str, Any]:
    spec = load(SPEC_EXAMPLES["basic"])["spec"]
    assert isinstance(spec, dict)
    return spec


def spec_with(**changes: Any) -> dict[str, Any]:
    spec = base_spec()
    spec.update(changes)
    return spec


def config_with(**changes: Any) -> dict[str, Any]:
    return spec_with(config={"run": {"python": "train.py"}, **changes})


def containers_with(*containers: dict[str, Any]) -> dict[str, Any]:
    return spec_with(worker={"replicas": 2, "template": {"spec": {"containers": list(containers)}}})


def container(name: str | None, *paths: str) -> dict[str, Any]:
    c: dict[str, Any] = {
        "image": IMAGE,
        "volumeMounts": [{"name": "v", "mountPath": p} for p in paths],
    }
    if name is not None:
        c["name"] = name
    return c


def job(spec: dict[str, Any], name: str = "deepspeed-example") -> dict[str, Any]:
    return {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


# -- the doc's examples ----------------------------------------------------------------


def test_the_docs_misspelt_kind_is_the_only_correction_of_the_first_example() -> None:
    raw = load(SPEC_EXAMPLES["basic"])
    assert raw["kind"] == "DeepSpeedJob" != "DeepspeedJob"
    assert raw["spec"]["config"] == {"slotPerWorker": 1, "run": {"python": "/t9k/mnt/train.py"}}


def test_the_docs_verbatim_tasks_example_parses() -> None:
    status = DeepSpeedJobStatus.model_validate(load(SEED_TASKS_VERBATIM))
    (task,) = status.tasks
    assert (task.type, task.restart_count, task.replicas) == ("worker", 0, [])


def test_basic_example_fields() -> None:
    parsed = DeepSpeedJobObject.from_dict(load(SPEC_EXAMPLES["basic"]))
    spec = parsed.spec
    assert spec.config is not None and spec.config.run is not None
    assert spec.config.slot_per_worker == 1 and spec.config.slots_per_worker is None
    assert effective_slots(spec) == 1
    assert run_kind_and_argv(spec) == ("python", ["/t9k/mnt/train.py"])
    assert spec.worker.replicas == 4
    assert spec.worker.restart_policy is None
    assert spec.worker.effective_restart_policy == "OnFailure"
    assert spec.worker.template["spec"]["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "deepspeed"
    }
    assert effective_worker_count(spec) == 4
    assert parsed.status is None


def test_scheduler_debug_and_pause_examples() -> None:
    scheduler = DeepSpeedJobObject.from_dict(load(SPEC_EXAMPLES["scheduler"])).spec.scheduler
    assert scheduler is not None
    assert scheduler.t9k_scheduler == T9kScheduler(queue="default", priority=50)
    debug = DeepSpeedJobObject.from_dict(load(SPEC_EXAMPLES["debug-1"])).spec
    assert debug.config is None and debug.debug_enabled
    assert debug.run_mode is not None and debug.run_mode.debug is not None
    (setting,) = debug.run_mode.debug.replica_specs
    assert (setting.type, setting.skip_init_container, setting.command) == (
        "worker",
        True,
        ["sleep", "inf"],
    )
    assert effective_slots(debug) == 1
    with pytest.raises(ValueError, match=r"spec\.config\.run needs what to train"):
        run_kind_and_argv(debug)
    debug2 = DeepSpeedJobObject.from_dict(load(SPEC_EXAMPLES["debug-2"])).spec.run_mode
    assert debug2 is not None and debug2.debug is not None
    assert debug2.debug.replica_specs == []
    pause = DeepSpeedJobObject.from_dict(load(SPEC_EXAMPLES["pause-1"])).spec.run_mode
    assert pause is not None and pause.pause is not None and pause.debug is None
    (resume,) = pause.pause.resume_specs
    assert resume.command == ["/usr/bin/sshd"]
    pause2 = DeepSpeedJobObject.from_dict(load(SPEC_EXAMPLES["pause-2"])).spec.run_mode
    assert pause2 is not None and pause2.pause is not None
    assert pause2.pause.enabled and pause2.pause.resume_specs == []


def test_user_examples_fields() -> None:
    full = DeepSpeedJobObject.from_dict(load(USER_EXAMPLES["full"])).spec
    assert full.config is not None
    assert (full.config.slots, full.config.local_rank, full.config.autotune) == (8, False, "run")
    assert full.config.other_args == ["--master_port=12346", "--no_ssh_check"]
    assert run_kind_and_argv(full) == (
        "python",
        ["/workspace/train.py", "--deepspeed", "--deepspeed_config", "ds.json"],
    )
    assert full.worker.effective_restart_policy == "ExitCode"
    assert full.elastic_enabled and effective_worker_count(full) == 2
    assert full.max_workers == 4
    split = DeepSpeedJobObject.from_dict(load(USER_EXAMPLES["split-args"])).spec
    assert split.config is not None
    assert split.config.other_args == ["--master_port", "12346", "--launcher", "pdsh"]
    assert run_kind_and_argv(split) == (
        "module",
        ["training.main", "--epochs", "3", "--name", "two words"],
    )
    exe = DeepSpeedJobObject.from_dict(load(USER_EXAMPLES["exec"])).spec
    assert run_kind_and_argv(exe) == ("exec", ["bash", "-c", "python /t9k/mnt/train.py"])


def test_status_examples_fields() -> None:
    status = DeepSpeedJobStatus.model_validate(load(STATUS_EXAMPLES["conditions"]))
    assert status.phase == "Failed"
    assert status.conditions[0].type == "Initializing"
    failed = next(c for c in status.conditions if c.type == "Failed")
    assert (failed.status, failed.reason) == ("True", "Failed")
    tasks = DeepSpeedJobStatus.model_validate(load(STATUS_EXAMPLES["tasks"])).tasks
    assert [r.name for r in tasks[0].replicas] == [
        "deepspeed-example-worker-0",
        "deepspeed-example-worker-1",
    ]
    assert tasks[0].replicas[0].containers == []
    aggregate = DeepSpeedJobStatus.model_validate(load(STATUS_EXAMPLES["aggregate"])).aggregate
    assert aggregate is not None and (aggregate.pending, aggregate.running) == (1, 2)


# -- defaults, the alias, helpers ------------------------------------------------------------


def test_defaults() -> None:
    spec = DeepSpeedJobSpec.model_validate(
        {"config": {"run": {"python": "train.py"}}, "worker": {"template": {}}}
    )
    assert spec.config is not None
    config = spec.config
    assert (config.slots_per_worker, config.slot_per_worker, config.slots) == (None, None, 1)
    assert config.local_rank is True
    assert config.autotune == "none"
    assert config.other_args == []
    assert spec.worker.replicas == 1
    assert spec.worker.restart_policy is None
    assert spec.worker.effective_restart_policy == "OnFailure"
    assert spec.run_policy == RunPolicy(
        backoff_limit=3, active_deadline_seconds=None, clean_up_policy="None"
    )
    assert spec.elastic is None and spec.scheduler is None and spec.run_mode is None
    assert not spec.elastic_enabled and not spec.debug_enabled
    assert ElasticConfig().enabled is False
    status = DeepSpeedJobStatus()
    assert (status.restart_count, status.replicas, status.phase) == (0, 0, None)


@pytest.mark.parametrize(
    ("config", "slots"),
    [
        ({}, 1),
        ({"slotsPerWorker": 4}, 4),
        ({"slotPerWorker": 2}, 2),
        ({"slotsPerWorker": 4, "slotPerWorker": 2}, 4),
        ({"slots_per_worker": 3}, 3),
    ],
)
def test_slots_alias(config: dict[str, Any], slots: int) -> None:
    spec = DeepSpeedJobSpec.model_validate(config_with(**config))
    assert spec.config is not None and spec.config.slots == slots
    assert effective_slots(spec) == slots


def test_alias_kept_as_sent() -> None:
    spec = DeepSpeedJobSpec.model_validate(config_with(slotPerWorker=2))
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    assert dumped["config"]["slotPerWorker"] == 2
    assert "slotsPerWorker" not in dumped["config"]


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ({"python": "train.py"}, ("python", ["train.py"])),
        (
            {"python": "train.py --lr 0.1 --tag 'a b'"},
            ("python", ["train.py", "--lr", "0.1", "--tag", "a b"]),
        ),
        ({"python": ["train.py", "--tag", "a b"]}, ("python", ["train.py", "--tag", "a b"])),
        ({"module": "pkg.main"}, ("module", ["pkg.main"])),
        ({"module": ["pkg.main", "-v"]}, ("module", ["pkg.main", "-v"])),
        ({"exec": "/bin/train --x=1"}, ("exec", ["/bin/train", "--x=1"])),
        ({"exec": ["/bin/train"]}, ("exec", ["/bin/train"])),
    ],
)
def test_run_kind_and_argv(run: dict[str, Any], expected: tuple[str, list[str]]) -> None:
    spec = DeepSpeedJobSpec.model_validate(spec_with(config={"run": run}))
    assert run_kind_and_argv(spec) == expected
    assert spec.config is not None and spec.config.run is not None
    assert spec.config.run.kind == expected[0]


def test_run_value_is_kept_as_sent() -> None:
    spec = DeepSpeedJobSpec.model_validate(spec_with(config={"run": {"python": "a.py  -x"}}))
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    assert dumped["config"]["run"] == {"python": "a.py  -x"}


@pytest.mark.parametrize(
    ("elastic", "replicas", "count"),
    [
        (None, 3, 3),
        ({"enabled": False, "minReplicas": 1, "maxReplicas": 8, "expectedReplicas": 5}, 3, 3),
        ({"enabled": True, "minReplicas": 1, "maxReplicas": 8, "expectedReplicas": 5}, 3, 5),
        ({"enabled": True, "minReplicas": 2, "maxReplicas": 2, "expectedReplicas": 2}, 7, 2),
    ],
)
def test_effective_worker_count(elastic: dict[str, Any] | None, replicas: int, count: int) -> None:
    raw = spec_with(worker={"replicas": replicas, "template": {}})
    if elastic is not None:
        raw["elastic"] = elastic
    assert effective_worker_count(DeepSpeedJobSpec.model_validate(raw)) == count


@pytest.mark.parametrize(
    ("worker_policy", "pod_policy", "effective"),
    [
        (None, None, "OnFailure"),
        (None, "Never", "Never"),
        (None, "Always", "Always"),
        (None, "OnFailure", "OnFailure"),
        ("ExitCode", "Never", "ExitCode"),
        ("Never", "Always", "Never"),
    ],
)
def test_effective_restart_policy(
    worker_policy: str | None, pod_policy: str | None, effective: str
) -> None:
    template: dict[str, Any] = {"spec": {} if pod_policy is None else {"restartPolicy": pod_policy}}
    raw: dict[str, Any] = {"template": template}
    if worker_policy is not None:
        raw["restartPolicy"] = worker_policy
    assert WorkerSpec.model_validate(raw).effective_restart_policy == effective


def test_training_container_choice() -> None:
    sidecar, trainer = container("sidecar"), container("worker")
    assert training_container({"spec": {"containers": [sidecar, trainer]}}) is trainer
    assert training_container({"spec": {"containers": [sidecar]}}) is sidecar
    assert training_container({"spec": {}}) is None
    assert training_container({}) is None


def test_crd_descriptor() -> None:
    assert CRD.name == "deepspeedjobs.batch.tensorstack.dev"
    assert CRD.api_version == "batch.tensorstack.dev/v1beta1"
    assert CRD.kind == "DeepSpeedJob"
    assert "dsj" in CRD.short_names
    assert CRD.categories == ("t9k",)
    assert CRD.scale is not None
    assert CRD.scale.spec_replicas_path == ".spec.elastic.expectedReplicas"
    assert CRD.scale.status_replicas_path == ".status.replicas"


# -- refused input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arg",
    [
        "--master_port=12346",
        "--master_port",
        "12346",
        "--no_ssh_check",
        "--launcher=pdsh",
        "--hostfiles",
        "--modules",
        "-m",
        "--autotuning_config=x",
    ],
)
def test_other_args_accepted(arg: str) -> None:
    assert not is_reserved_arg(arg)
    DeepSpeedJobSpec.model_validate(config_with(otherArgs=[arg]))


RESERVED = [
    "--no_local_rank",
    "--autotuning",
    "--autotuning=tune",
    "--module",
    "--no_python",
    "--hostfile",
    "--hostfile=/etc/hosts",
]


NOT_PDSH = [
    ["--launcher", "openmpi"],
    ["--launcher=mvapich"],
    ["--master_port=1", "--launcher", "slurm", "-m"],
    ["--launcher"],  # no value
    ["--launcher", "pdsh", "--launcher", "pdsh"],  # twice
    ["--launcher=pdsh", "--launcher", "mpich"],
]


@pytest.mark.parametrize("args", NOT_PDSH)
def test_a_launcher_other_than_pdsh_is_rejected(args: list[str]) -> None:
    """Seed 000: DeepSpeedJob supports only pdsh."""
    with pytest.raises(ValidationError) as info:
        DeepSpeedJobSpec.model_validate(config_with(otherArgs=args))
    assert MSG_LAUNCHER_PDSH in str(info.value)


@pytest.mark.parametrize(
    "args",
    [["--launcher", "pdsh"], ["--launcher=pdsh"], ["--launcher", "PDSH"], ["--launcher_args", "x"]],
)
def test_pdsh_given_as_the_launcher_is_accepted(args: list[str]) -> None:
    DeepSpeedJobSpec.model_validate(config_with(otherArgs=args))


def test_resume_args_without_a_command_are_rejected() -> None:
    pause = {"enabled": False, "resumeSpecs": [{"type": "worker", "args": ["--resume"]}]}
    with pytest.raises(ValidationError) as info:
        DeepSpeedJobSpec.model_validate(spec_with(runMode={"pause": pause}))
    assert MSG_RESUME_ARGS_NEED_COMMAND in str(info.value)
    pause["resumeSpecs"][0]["command"] = ["bash", "-c", "resume.sh"]
    DeepSpeedJobSpec.model_validate(spec_with(runMode={"pause": pause}))


@pytest.mark.parametrize("arg", RESERVED)
def test_reserved_other_args_rejected(arg: str) -> None:
    assert is_reserved_arg(arg)
    with pytest.raises(ValidationError) as info:
        DeepSpeedJobSpec.model_validate(config_with(otherArgs=["--master_port=1", arg]))
    assert MSG_RESERVED_ARGS in str(info.value)
    assert "otherArgs" in str(info.value)


@pytest.mark.parametrize(
    "path",
    [
        "/root/.ssh",
        "/root/.ssh/",
        "/root/.ssh/id_rsa",
        "/t9k/hostfile",
        "/t9k/hostfile/",
        "/root/.deepspeed_env",
    ],
)
def test_reserved_mounts_rejected(path: str) -> None:
    assert is_reserved_mount_path(path)
    cases = [
        containers_with(container("worker", "/data", path)),
        # The training container is the one named worker, wherever it is ...
        containers_with(container("sidecar"), container("worker", path)),
        # ... else the first container.
        containers_with(container("main", path), container("sidecar")),
        containers_with(container(None, path)),
    ]
    for raw in cases:
        with pytest.raises(ValidationError) as info:
            DeepSpeedJobSpec.model_validate(raw)
        assert MSG_RESERVED_MOUNTS in str(info.value)
        assert "template" in str(info.value)


@pytest.mark.parametrize(
    "path", ["/root", "/root/.sshd", "/t9k", "/t9k/mnt", "/dev/shm", "/t9k/hostfile2"]
)
def test_other_mounts_accepted(path: str) -> None:
    assert not is_reserved_mount_path(path)
    DeepSpeedJobSpec.model_validate(containers_with(container("worker", path)))


def test_reserved_mounts_allowed_outside_the_training_container() -> None:
    DeepSpeedJobSpec.model_validate(
        containers_with(container("sidecar", "/root/.ssh"), container("worker", "/data"))
    )
    DeepSpeedJobSpec.model_validate(
        containers_with(container("main"), container("sidecar", "/t9k/hostfile"))
    )


_ELASTIC = {"enabled": True, "minReplicas": 2, "maxReplicas": 4, "expectedReplicas": 3}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # config.run: exactly one of python, module, exec
        ({"config": {"run": {"python": "a.py", "module": "m"}}}, MSG_RUN_EXACTLY_ONE),
        ({"config": {"run": {"python": "a.py", "exec": ["x"]}}}, MSG_RUN_EXACTLY_ONE),
        ({"config": {"run": {"python": "a", "module": "m", "exec": "x"}}}, MSG_RUN_EXACTLY_ONE),
        ({"config": {"run": {}}}, MSG_RUN_REQUIRED),
        ({"config": {"run": {"python": None}}}, MSG_RUN_REQUIRED),
        # each a non-empty command line or a non-empty list of strings
        ({"config": {"run": {"python": ""}}}, "python"),
        ({"config": {"run": {"python": "   "}}}, "python"),
        ({"config": {"run": {"python": "a.py 'unbalanced"}}}, "python"),
        ({"config": {"run": {"module": []}}}, "module"),
        ({"config": {"run": {"exec": [1, 2]}}}, "exec"),
        ({"config": {"run": {"exec": 5}}}, "exec"),
        ({"config": {"run": {"python": {"script": "a.py"}}}}, "python"),
        # config.run is required outside debug mode
        ({"config": None}, MSG_RUN_REQUIRED),
        ({"config": {"slotsPerWorker": 2}}, MSG_RUN_REQUIRED),
        ({"config": None, "runMode": {"debug": {"enabled": False}}}, MSG_RUN_REQUIRED),
        ({"config": None, "runMode": {"pause": {"enabled": True}}}, MSG_RUN_REQUIRED),
        # config fields
        ({"config": {"run": {"python": "a"}, "slotsPerWorker": 0}}, "slotsPerWorker"),
        ({"config": {"run": {"python": "a"}, "slotPerWorker": 0}}, "slotPerWorker"),
        ({"config": {"run": {"python": "a"}, "autotune": "yes"}}, "autotune"),
        ({"config": {"run": {"python": "a"}, "otherArgs": "--x"}}, "otherArgs"),
        # worker
        ({"worker": None}, "worker"),
        ({"worker": {"replicas": 1}}, "template"),
        ({"worker": {"replicas": -1, "template": {}}}, "replicas"),
        ({"worker": {"restartPolicy": "Sometimes", "template": {}}}, "restartPolicy"),
        (
            {
                "worker": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Sometimes",
                            "containers": [{"name": "worker", "image": "i"}],
                        }
                    }
                }
            },
            "spec.worker.template.spec.restartPolicy must be Never, OnFailure or Always",
        ),
        # elastic
        ({"elastic": {"enabled": True}}, MSG_ELASTIC_BOUNDS_REQUIRED),
        ({"elastic": {**_ELASTIC, "expectedReplicas": None}}, MSG_ELASTIC_BOUNDS_REQUIRED),
        ({"elastic": {**_ELASTIC, "minReplicas": 5}}, MSG_ELASTIC_MIN_MAX),
        ({"elastic": {**_ELASTIC, "expectedReplicas": 5}}, MSG_ELASTIC_EXPECTED),
        ({"elastic": {**_ELASTIC, "expectedReplicas": 1}}, MSG_ELASTIC_EXPECTED),
        ({"elastic": {"minReplicas": 0}}, "minReplicas"),
        # runPolicy, scheduler, runMode
        ({"runPolicy": {"backoffLimit": -1}}, "backoffLimit"),
        ({"runPolicy": {"activeDeadlineSeconds": 0}}, "activeDeadlineSeconds"),
        ({"runPolicy": {"cleanUpPolicy": "Some"}}, "cleanUpPolicy"),
        ({"scheduler": {"t9kScheduler": {"priority": 1}}}, "queue"),
        ({"runMode": {"debug": {"enabled": True, "replicaSpecs": [{"type": "W"}]}}}, "type"),
    ],
)
def test_invalid_specs_rejected(changes: dict[str, Any], message: str) -> None:
    raw = spec_with(**changes)
    for key in [k for k, v in changes.items() if v is None]:
        del raw[key]
    with pytest.raises(ValidationError) as info:
        DeepSpeedJobSpec.model_validate(raw)
    assert message in str(info.value)


def test_debug_mode_may_leave_config_or_run_out() -> None:
    for config in (None, {"slotsPerWorker": 2}):
        raw = spec_with(runMode={"debug": {"enabled": True}})
        if config is None:
            del raw["config"]
        else:
            raw["config"] = config
        spec = DeepSpeedJobSpec.model_validate(raw)
        assert spec.debug_enabled
        assert effective_slots(spec) == (1 if config is None else 2)


def test_elastic_disabled_may_keep_partial_settings() -> None:
    spec = DeepSpeedJobSpec.model_validate(spec_with(elastic={"expectedReplicas": 3}))
    assert spec.elastic is not None and not spec.elastic_enabled


@pytest.mark.parametrize(
    ("name", "spec_changes", "message"),
    [
        ("1st-job", {}, MSG_JOB_NAME),
        ("Job", {}, MSG_JOB_NAME),
        ("job-", {}, MSG_JOB_NAME),
        ("job_x", {}, MSG_JOB_NAME),
        # 55 + len("-worker-3") = 64
        ("d" + "x" * 54, {}, MSG_POD_NAME_LENGTH),
        # 53 + len("-worker-100") = 64: elastic maxReplicas counts
        ("d" + "x" * 52, {"elastic": {"maxReplicas": 101}}, MSG_POD_NAME_LENGTH),
    ],
)
def test_invalid_names_rejected(name: str, spec_changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        DeepSpeedJobObject.from_dict(job(spec_with(**spec_changes), name))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("name", "spec_changes"),
    [
        ("d" + "x" * 53, {}),  # 54 + len("-worker-3") = 63
        ("d" + "x" * 52, {"elastic": {"maxReplicas": 100}}),
        ("a", {}),
        ("a-1", {}),
    ],
)
def test_valid_names(name: str, spec_changes: dict[str, Any]) -> None:
    assert DeepSpeedJobObject.from_dict(job(spec_with(**spec_changes), name)).name == name


def test_config_models_directly() -> None:
    assert RunConfig(python="a.py").kind == "python"
    assert not RunConfig().given and not RunConfig(python=[]).given
    assert RunConfig(module="m").given
    with pytest.raises(ValidationError, match="exactly one"):
        RunConfig(python="a.py", module="m")
    assert DeepSpeedConfig(slot_per_worker=3).slots == 3


# -- the generated CRD ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return committed_crd(CRD)


def test_crd_names_and_subresources(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "deepspeedjobs.batch.tensorstack.dev"
    assert spec["group"] == "batch.tensorstack.dev"
    assert spec["names"]["kind"] == "DeepSpeedJob"
    assert spec["names"]["plural"] == "deepspeedjobs"
    assert spec["names"]["singular"] == "deepspeedjob"
    assert "dsj" in spec["names"]["shortNames"]
    assert spec["names"]["categories"] == ["t9k"]
    (version,) = spec["versions"]
    assert version["name"] == "v1beta1"
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.elastic.expectedReplicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Phase", "Reason", "Ready", "Replicas", "Restarts", "Progress", "ETA", "Age"]


def test_crd_types_templates_and_keeps_commands_whole(crd: dict[str, Any]) -> None:
    props = schema_of(crd)["properties"]["spec"]["properties"]
    worker = props["worker"]
    assert worker["required"] == ["template"]
    assert_pod_template_schema(worker["properties"]["template"])
    run = props["config"]["properties"]["run"]
    # At most one; "exactly one, not empty" is the spec's rule, outside debug mode only.
    assert run["maxProperties"] == 1 and "minProperties" not in run
    for kind in ("python", "module", "exec"):
        node = run["properties"][kind]
        assert "type" not in node and node["x-kubernetes-preserve-unknown-fields"] is True
        assert node["items"] == {"type": "string"}


def test_crd_defaults(crd: dict[str, Any]) -> None:
    props = schema_of(crd)["properties"]["spec"]["properties"]
    config = props["config"]["properties"]
    # No default for slotsPerWorker: the server would fill it in and hide slotPerWorker.
    assert "default" not in config["slotsPerWorker"]
    assert "default" not in config["slotPerWorker"]
    assert config["slotsPerWorker"]["minimum"] == 1
    assert config["localRank"]["default"] is True
    assert config["autotune"] == {**config["autotune"], "default": "none"}
    assert config["autotune"]["enum"] == ["none", "run", "tune"]
    worker = props["worker"]["properties"]
    assert worker["replicas"]["default"] == 1 and worker["replicas"]["minimum"] == 0
    assert "default" not in worker["restartPolicy"]
    assert worker["restartPolicy"]["enum"] == ["Never", "OnFailure", "Always", "ExitCode"]
    for name in ("config", "elastic", "runPolicy", "scheduler", "runMode"):
        assert "default" not in props[name], name
    assert "/usr/sbin/sshd -D" in props["runMode"]["properties"]["debug"]["description"]


def test_crd_rules(crd: dict[str, Any]) -> None:
    schema = schema_of(crd)
    spec = schema["properties"]["spec"]
    messages = rule_messages(schema)
    for message in (
        MSG_RUN_REQUIRED,
        MSG_RESERVED_ARGS,
        MSG_RESERVED_MOUNTS,
        MSG_ELASTIC_BOUNDS_REQUIRED,
        MSG_ELASTIC_MIN_MAX,
        MSG_ELASTIC_EXPECTED,
        MSG_JOB_NAME,
        MSG_POD_NAME_LENGTH,
    ):
        assert message in messages, message
    assert any("oldSelf" in r["rule"] for r in spec["x-kubernetes-validations"])


@pytest.mark.parametrize("run", [{"python": []}, {"python": ""}, {}, None])
def test_a_debug_job_may_give_an_empty_or_no_run(run: dict[str, Any] | None) -> None:
    """Two of the T9k team's public examples say `run: {python: []}` in debug mode."""
    raw = spec_with(runMode={"debug": {"enabled": True}}, config={"run": run})
    assert DeepSpeedJobSpec.model_validate(raw).debug_enabled
    raw = spec_with(config={"run": run})
    with pytest.raises(ValidationError, match="needs what to train"):
        DeepSpeedJobSpec.model_validate(raw)
