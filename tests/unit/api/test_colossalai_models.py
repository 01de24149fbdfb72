"""The ColossalAIJob models against the examples of its product doc (seed 003).

``SPEC_EXAMPLES`` holds every YAML example of the doc that has a spec, each
made a whole object: the first example is taken verbatim; a ``...`` container
is filled minimally (name ``worker`` and the doc's image); a fragment gets the
header of the doc's first example and, where the job needs them, a minimal
``launcher`` (the doc's image only) and ``worker`` (one container, the command
``train.py``). The debug-mode fragments get no ``worker.command``: in debug
mode it may be left out. ``STATUS_EXAMPLES`` holds the doc's status examples;
in the tasks example the doc lists a task's replicas under ``status``, which
the shared status model (and the other T9k kinds' docs) calls ``replicas``:
the example is corrected accordingly, and the verbatim text is checked
separately. ``USER_EXAMPLES`` are the shapes of real users' files that must
apply as written. tests/integration/test_crd_colossalai.py applies the same
documents to a real API server.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from t9k_operator.api.colossalai import (
    CRD,
    DEFAULT_AUTH_MOUNT_PATH,
    DEFAULT_SSHD_PATH,
    MSG_AUTH_MOUNT_PATH,
    MSG_AUTH_MOUNT_PLACE,
    MSG_COMMAND_REQUIRED,
    MSG_ENV_NAME,
    MSG_ENV_VALUE,
    MSG_NO_CONTAINER,
    MSG_POD_NAME_LENGTH,
    MSG_RESUME_ARGS_NEED_COMMAND,
    MSG_SSHD_PATH,
    ColossalAIJobObject,
    ColossalAIJobSpec,
    ColossalAIJobStatus,
    ColossalAIRunPolicy,
    LauncherSpec,
    SSHConfig,
    WorkerSpec,
    pod_names_fit,
    training_container,
)
from t9k_operator.api.crd import MSG_JOB_NAME
from t9k_operator.api.specs import T9kScheduler
from tests.unit.api.helpers import (
    assert_pod_template_schema,
    committed_crd,
    load,
    rule_messages,
    schema_of,
)

IMAGE = "hpcaitech/colossalai:0.3.0"
JOB = "colossalai-example"
HEADER = f"""\
apiVersion: batch.tensorstack.dev/v1beta1
kind: ColossalAIJob
metadata:
  name: {JOB}
"""
MINIMAL_LAUNCHER = f"""\
  launcher:
    image: {IMAGE}
"""
MINIMAL_WORKER = f"""\
  worker:
    replicas: 2
    command: [train.py]
    template:
      spec:
        containers:
        - name: worker
          image: {IMAGE}
"""
DEBUG_WORKER = MINIMAL_WORKER.replace("    command: [train.py]\n", "")

SPEC_EXAMPLES: dict[str, str] = {
    "basic": HEADER
    + """\
spec:
  ssh:
    authMountPath: /root/.ssh
    sshdPath: /usr/sbin/sshd
  launcher:
    image: hpcaitech/colossalai:0.3.0
    workingDir: /workspace
    env: []
    resources:
      limits:
        cpu: 1
        memory: 2Gi
      requests:
        cpu: 500m
        memory: 1Gi
  worker:
    replicas: 2
    procPerWorker: 1
    command:
      - train.py
      - arg1
    torchArgs: []
    template:
      spec:
        restartPolicy: OnFailure
        containers:
          - image: hpcaitech/colossalai:0.3.0
            imagePullPolicy: IfNotPresent
            name: worker
            resources:
              limits:
                cpu: 2
                memory: 8Gi
                nvidia.com/gpu: 1
              requests:
                cpu: 1
                memory: 4Gi
                nvidia.com/gpu: 1
            volumeMounts:
              - mountPath: /workspace
                name: code
        volumes:
          - name: code
            persistentVolumeClaim:
              claimName: colossalai
""",
    "resources": HEADER
    + "spec:\n"
    + MINIMAL_LAUNCHER
    + """\
  worker:
    replicas: 4
    command: [train.py]
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
    + MINIMAL_LAUNCHER
    + f"""\
  worker:
    replicas: 4
    command: [train.py]
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
    + MINIMAL_LAUNCHER
    + """\
  worker:
    replicas: 4
    command: [train.py]
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
    "clean-up": HEADER
    + """\
spec:
  runPolicy:
    cleanUpWorkers: true
"""
    + MINIMAL_LAUNCHER
    + MINIMAL_WORKER,
    "scheduler": HEADER
    + """\
spec:
  scheduler:
    t9kScheduler:
      queue: default
      priority: 50
"""
    + MINIMAL_LAUNCHER
    + MINIMAL_WORKER,
    # Debug mode: no worker.command, which debug mode does not need.
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
    + MINIMAL_LAUNCHER
    + DEBUG_WORKER,
    "debug-2": HEADER
    + """\
spec:
  runMode:
    debug:
      enabled: true
"""
    + MINIMAL_LAUNCHER
    + DEBUG_WORKER,
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
    + MINIMAL_LAUNCHER
    + MINIMAL_WORKER,
    "pause-2": HEADER
    + """\
spec:
  runMode:
    pause:
      enabled: true
"""
    + MINIMAL_LAUNCHER
    + MINIMAL_WORKER,
}

USER_EXAMPLES: dict[str, str] = {
    # What users actually write: a launcher of image and workingDir only, no spec.ssh.
    "launcher-image-workdir": HEADER
    + f"""\
spec:
  launcher:
    image: {IMAGE}
    workingDir: /workspace
  worker:
    replicas: 2
    procPerWorker: 4
    command: ["train.py", "--config", "config.py", "--lr", "0.1"]
    template:
      metadata:
        labels:
          team: llm
      spec:
        containers:
        - name: worker
          image: {IMAGE}
          resources:
            limits:
              nvidia.com/gpu: 4
          volumeMounts:
          - mountPath: /workspace
            name: code
          - mountPath: /dev/shm
            name: dshm
        volumes:
        - name: code
          persistentVolumeClaim:
            claimName: colossalai
        - name: dshm
          emptyDir:
            medium: Memory
""",
    # Every field set, with the kinds of values real files carry.
    "full": HEADER
    + f"""\
spec:
  ssh:
    authMountPath: /home/trainer/.ssh
    sshdPath: /opt/openssh/sbin/sshd
  launcher:
    image: {IMAGE}
    workingDir: /workspace/project
    env:
    - name: NCCL_DEBUG
      value: INFO
    - name: WANDB_API_KEY
      valueFrom:
        secretKeyRef:
          name: wandb
          key: api-key
          optional: true
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    resources:
      limits:
        cpu: "1"
        memory: 2Gi
      requests:
        cpu: 500m
        memory: 1Gi
      claims:
      - name: shared
  worker:
    replicas: 11
    procPerWorker: 8
    command: ["pretrain.py", "--plugin", "gemini", "--batch_size", "8"]
    torchArgs: ["--max_restarts=0", "--rdzv_conf=timeout=900"]
    template:
      metadata:
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
        - name: sidecar
          image: busybox:1.36
          command: ["sh", "-c", "sleep inf"]
        - name: worker
          image: {IMAGE}
          securityContext:
            capabilities:
              add: ["IPC_LOCK"]
          resources:
            limits:
              nvidia.com/gpu: 8
              rdma/rdma_shared_device_a: 1
  runPolicy:
    cleanUpWorkers: true
    activeDeadlineSeconds: 86400
    backoffLimit: 1
  scheduler:
    t9kScheduler:
      queue: gpu
""",
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
- type: launcher
  restartCount: 0
  replicas:
  - phase: Running
    name: colossalai-example-launcher
    uid: 66634db2-35e7-4641-a4dc-adbd5479734e
    containers: []
- type: worker
  restartCount: 0
  replicas:
  - phase: Running
    name: colossalai-example-worker-0
    uid: e3ec2ee3-6645-4e21-993f-1e472b94e0ae
    containers: []
  - phase: Running
    name: colossalai-example-worker-1
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
    """The basic example's spec with top-level fields replaced (None: removed)."""
    spec = base_spec()
    spec.update(changes)
    return {k: v for k, v in spec.items() if v is not None}


def worker_with(**changes: Any) -> dict[str, Any]:
    """The basic example's spec with fields of spec.worker replaced (None: removed)."""
    spec = base_spec()
    worker = {**spec["worker"], **changes}
    spec["worker"] = {k: v for k, v in worker.items() if v is not None}
    return spec


def job(spec: dict[str, Any], name: str = JOB) -> dict[str, Any]:
    return {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": spec,
    }


# -- the doc's examples ----------------------------------------------------------------


@pytest.mark.parametrize("name", list(ALL_EXAMPLES))
def test_the_launchers_env_and_resources_are_kept_whole(name: str) -> None:
    """(Parsing and round trips of every kind: tests/unit/api/test_job_objects.py.)"""
    raw = load(ALL_EXAMPLES[name])
    launcher = raw["spec"]["launcher"]
    parsed = ColossalAIJobObject.from_dict(raw)
    assert parsed.spec.launcher.env == launcher.get("env", [])
    assert parsed.spec.launcher.resources == launcher.get("resources", {})


def test_the_first_example_is_verbatim() -> None:
    # Verbatim but for the trailing blank after the launcher's `resources:`.
    raw = load(SPEC_EXAMPLES["basic"])
    assert raw["spec"]["ssh"] == {"authMountPath": "/root/.ssh", "sshdPath": "/usr/sbin/sshd"}
    assert raw["spec"]["launcher"]["resources"]["limits"] == {"cpu": 1, "memory": "2Gi"}


def test_the_docs_verbatim_tasks_example_parses() -> None:
    status = ColossalAIJobStatus.model_validate(load(SEED_TASKS_VERBATIM))
    assert [(t.type, t.restart_count, t.replicas) for t in status.tasks] == [
        ("launcher", 0, []),
        ("worker", 0, []),
    ]


def test_basic_example_fields() -> None:
    parsed = ColossalAIJobObject.from_dict(load(SPEC_EXAMPLES["basic"]))
    spec = parsed.spec
    assert spec.ssh == SSHConfig(auth_mount_path="/root/.ssh", sshd_path="/usr/sbin/sshd")
    launcher = spec.launcher
    assert (launcher.image, launcher.working_dir, launcher.env) == (IMAGE, "/workspace", [])
    assert launcher.resources["requests"] == {"cpu": "500m", "memory": "1Gi"}
    worker = spec.worker
    assert (worker.replicas, worker.proc_per_worker) == (2, 1)
    assert worker.command == ["train.py", "arg1"]
    assert worker.torch_args == []
    assert worker.template["spec"]["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "colossalai"
    }
    trainer = training_container(worker.template)
    assert trainer is not None and trainer["name"] == "worker"
    assert spec.run_policy == ColossalAIRunPolicy()
    assert spec.scheduler is None and spec.run_mode is None and not spec.debug_enabled
    assert parsed.status is None


def test_clean_up_scheduler_debug_and_pause_examples() -> None:
    clean = ColossalAIJobObject.from_dict(load(SPEC_EXAMPLES["clean-up"])).spec.run_policy
    assert clean.clean_up_workers is True
    assert clean.active_deadline_seconds is None and clean.backoff_limit is None
    scheduler = ColossalAIJobObject.from_dict(load(SPEC_EXAMPLES["scheduler"])).spec.scheduler
    assert scheduler is not None
    assert scheduler.t9k_scheduler == T9kScheduler(queue="default", priority=50)
    debug = ColossalAIJobObject.from_dict(load(SPEC_EXAMPLES["debug-1"])).spec
    assert debug.debug_enabled and debug.worker.command is None
    assert debug.run_mode is not None and debug.run_mode.debug is not None
    (setting,) = debug.run_mode.debug.replica_specs
    assert (setting.type, setting.skip_init_container, setting.command) == (
        "worker",
        True,
        ["/usr/bin/sshd"],
    )
    debug2 = ColossalAIJobObject.from_dict(load(SPEC_EXAMPLES["debug-2"])).spec.run_mode
    assert debug2 is not None and debug2.debug is not None
    assert debug2.debug.replica_specs == []
    pause = ColossalAIJobObject.from_dict(load(SPEC_EXAMPLES["pause-1"])).spec.run_mode
    assert pause is not None and pause.pause is not None and pause.debug is None
    (resume,) = pause.pause.resume_specs
    assert resume.command == ["/usr/bin/sshd"] and resume.skip_init_container
    pause2 = ColossalAIJobObject.from_dict(load(SPEC_EXAMPLES["pause-2"])).spec.run_mode
    assert pause2 is not None and pause2.pause is not None
    assert pause2.pause.enabled and pause2.pause.resume_specs == []


def test_user_examples_fields() -> None:
    users = ColossalAIJobObject.from_dict(load(USER_EXAMPLES["launcher-image-workdir"])).spec
    # No spec.ssh: the defaults apply.
    assert users.ssh == SSHConfig()
    assert (users.ssh.auth_mount_path, users.ssh.sshd_path) == ("/root/.ssh", "/usr/sbin/sshd")
    assert users.launcher == LauncherSpec(image=IMAGE, working_dir="/workspace")
    assert (users.launcher.env, users.launcher.resources) == ([], {})
    assert users.worker.proc_per_worker == 4
    full = ColossalAIJobObject.from_dict(load(USER_EXAMPLES["full"])).spec
    assert full.ssh.sshd_path == "/opt/openssh/sbin/sshd"
    assert full.launcher.env[1]["valueFrom"]["secretKeyRef"]["optional"] is True
    assert full.launcher.resources["claims"] == [{"name": "shared"}]
    assert full.worker.torch_args == ["--max_restarts=0", "--rdzv_conf=timeout=900"]
    assert full.run_policy == ColossalAIRunPolicy(
        clean_up_workers=True, active_deadline_seconds=86400, backoff_limit=1
    )
    assert full.run_policy.backoff_limit == 1  # stored, not acted on
    trainer = training_container(full.worker.template)
    assert trainer is not None and trainer["name"] == "worker"


def test_status_examples_fields() -> None:
    status = ColossalAIJobStatus.model_validate(load(STATUS_EXAMPLES["conditions"]))
    assert status.phase == "Failed"
    assert status.conditions[0].type == "Initializing"
    failed = next(c for c in status.conditions if c.type == "Failed")
    assert (failed.status, failed.reason) == ("True", "Failed")
    tasks = ColossalAIJobStatus.model_validate(load(STATUS_EXAMPLES["tasks"])).tasks
    assert [t.type for t in tasks] == ["launcher", "worker"]
    assert [r.name for r in tasks[0].replicas] == ["colossalai-example-launcher"]
    assert [r.name for r in tasks[1].replicas] == [
        "colossalai-example-worker-0",
        "colossalai-example-worker-1",
    ]
    aggregate = ColossalAIJobStatus.model_validate(load(STATUS_EXAMPLES["aggregate"])).aggregate
    assert aggregate is not None and (aggregate.pending, aggregate.running) == (1, 2)


# -- defaults and helpers ------------------------------------------------------------------


def test_defaults() -> None:
    spec = ColossalAIJobSpec.model_validate(
        {
            "launcher": {"image": IMAGE},
            "worker": {"command": ["train.py"], "template": {"spec": {"containers": [{}]}}},
        }
    )
    assert spec.ssh.auth_mount_path == DEFAULT_AUTH_MOUNT_PATH == "/root/.ssh"
    assert spec.ssh.sshd_path == DEFAULT_SSHD_PATH == "/usr/sbin/sshd"
    assert SSHConfig.model_validate({}) == spec.ssh
    launcher = spec.launcher
    assert (launcher.working_dir, launcher.env, launcher.resources) == (None, [], {})
    worker = spec.worker
    assert (worker.replicas, worker.proc_per_worker, worker.torch_args) == (1, 1, [])
    policy = spec.run_policy
    assert policy.clean_up_workers is False
    assert (policy.active_deadline_seconds, policy.backoff_limit) == (None, None)
    assert spec.scheduler is None and spec.run_mode is None
    status = ColossalAIJobStatus()
    assert (status.restart_count, status.replicas, status.phase, status.tasks) == (0, 0, None, [])


def test_training_container_choice() -> None:
    sidecar, trainer = {"name": "sidecar"}, {"name": "worker"}
    assert training_container({"spec": {"containers": [sidecar, trainer]}}) is trainer
    assert training_container({"spec": {"containers": [sidecar]}}) is sidecar
    assert training_container({"spec": {}}) is None
    assert training_container({}) is None


def test_crd_descriptor() -> None:
    assert CRD.name == "colossalaijobs.batch.tensorstack.dev"
    assert CRD.api_version == "batch.tensorstack.dev/v1beta1"
    assert (CRD.kind, CRD.plural, CRD.singular) == (
        "ColossalAIJob",
        "colossalaijobs",
        "colossalaijob",
    )
    assert "caij" in CRD.short_names
    assert CRD.categories == ("t9k",)
    assert CRD.scale is None


# -- refused input -----------------------------------------------------------------------------


INVALID_SPECS: dict[str, tuple[dict[str, Any], str]] = {
    # a resume's args alone would be dropped: the launcher and workers run the
    # operator's scripts, which take none
    "resume-args-without-command": (
        spec_with(
            runMode={"pause": {"resumeSpecs": [{"type": "launcher", "args": ["--resume", "ckpt"]}]}}
        ),
        MSG_RESUME_ARGS_NEED_COMMAND,
    ),
    "resume-worker-args-with-an-empty-command": (
        spec_with(
            runMode={"pause": {"resumeSpecs": [{"type": "worker", "command": [], "args": ["x"]}]}}
        ),
        MSG_RESUME_ARGS_NEED_COMMAND,
    ),
    # spec.ssh: absolute paths only
    "sshd-relative": (spec_with(ssh={"sshdPath": "usr/sbin/sshd"}), MSG_SSHD_PATH),
    "sshd-bare-name": (spec_with(ssh={"sshdPath": "sshd"}), MSG_SSHD_PATH),
    "sshd-empty": (spec_with(ssh={"sshdPath": ""}), "sshdPath"),
    "auth-relative": (spec_with(ssh={"authMountPath": ".ssh"}), MSG_AUTH_MOUNT_PATH),
    "auth-home-relative": (spec_with(ssh={"authMountPath": "~/.ssh"}), MSG_AUTH_MOUNT_PATH),
    "auth-in-tmp": (spec_with(ssh={"authMountPath": "/tmp/keys"}), MSG_AUTH_MOUNT_PLACE),
    "auth-in-var-tmp": (spec_with(ssh={"authMountPath": "/var/tmp"}), MSG_AUTH_MOUNT_PLACE),
    "auth-dot-dot": (spec_with(ssh={"authMountPath": "/a/../tmp"}), MSG_AUTH_MOUNT_PLACE),
    "auth-double-slash": (spec_with(ssh={"authMountPath": "//tmp/keys"}), MSG_AUTH_MOUNT_PLACE),
    "auth-root": (spec_with(ssh={"authMountPath": "/"}), MSG_AUTH_MOUNT_PLACE),
    "auth-operator-own": (spec_with(ssh={"authMountPath": "/t9k"}), MSG_AUTH_MOUNT_PLACE),
    "auth-empty": (spec_with(ssh={"authMountPath": ""}), "authMountPath"),
    # spec.worker
    "proc-per-worker-zero": (worker_with(procPerWorker=0), "procPerWorker"),
    "proc-per-worker-negative": (worker_with(procPerWorker=-2), "procPerWorker"),
    "replicas-zero": (worker_with(replicas=0), "replicas"),
    "replicas-negative": (worker_with(replicas=-1), "replicas"),
    "template-empty": (worker_with(template={}), MSG_NO_CONTAINER),
    "template-without-containers": (worker_with(template={"spec": {}}), MSG_NO_CONTAINER),
    "template-no-container": (
        worker_with(template={"spec": {"containers": []}}),
        MSG_NO_CONTAINER,
    ),
    "template-container-not-an-object": (
        worker_with(template={"spec": {"containers": ["worker"]}}),
        "spec.containers[0] must be a map (a container), not a string",
    ),
    "no-template": (worker_with(template=None), "template"),
    "no-worker": (spec_with(worker=None), "worker"),
    "command-not-a-list": (worker_with(command="train.py"), "command"),
    "torch-args-not-a-list": (worker_with(torchArgs="--x"), "torchArgs"),
    # worker.command is required outside debug mode
    "no-command": (worker_with(command=None), MSG_COMMAND_REQUIRED),
    "empty-command": (worker_with(command=[]), MSG_COMMAND_REQUIRED),
    "no-command-debug-disabled": (
        {**worker_with(command=None), "runMode": {"debug": {"enabled": False}}},
        MSG_COMMAND_REQUIRED,
    ),
    "no-command-paused": (
        {**worker_with(command=None), "runMode": {"pause": {"enabled": True}}},
        MSG_COMMAND_REQUIRED,
    ),
    # spec.launcher
    "no-launcher": (spec_with(launcher=None), "launcher"),
    "launcher-without-image": (spec_with(launcher={"workingDir": "/workspace"}), "image"),
    "launcher-empty-image": (spec_with(launcher={"image": ""}), "image"),
    "env-without-name": (
        spec_with(launcher={"image": IMAGE, "env": [{"value": "x"}]}),
        MSG_ENV_NAME,
    ),
    "env-number-value": (
        spec_with(launcher={"image": IMAGE, "env": [{"name": "N", "value": 1}]}),
        MSG_ENV_VALUE,
    ),
    "env-not-a-list": (spec_with(launcher={"image": IMAGE, "env": {"N": "1"}}), "env"),
    "resources-not-an-object": (spec_with(launcher={"image": IMAGE, "resources": []}), "resources"),
    # runPolicy, scheduler, runMode
    "backoff-negative": (spec_with(runPolicy={"backoffLimit": -1}), "backoffLimit"),
    "deadline-zero": (spec_with(runPolicy={"activeDeadlineSeconds": 0}), "activeDeadlineSeconds"),
    "clean-up-workers-not-a-bool": (
        spec_with(runPolicy={"cleanUpWorkers": "sometimes"}),
        "cleanUpWorkers",
    ),
    "scheduler-without-queue": (spec_with(scheduler={"t9kScheduler": {"priority": 1}}), "queue"),
    "debug-bad-type": (
        spec_with(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "W"}]}}),
        "type",
    ),
}


@pytest.mark.parametrize("case", list(INVALID_SPECS))
def test_invalid_specs_rejected(case: str) -> None:
    raw, message = INVALID_SPECS[case]
    with pytest.raises(ValidationError) as info:
        ColossalAIJobSpec.model_validate(raw)
    assert message in str(info.value)
    with pytest.raises(ValidationError):
        ColossalAIJobObject.from_dict(job(raw))


@pytest.mark.parametrize(
    "ssh",
    [
        {},
        {"sshdPath": "/usr/bin/sshd"},
        {"authMountPath": "/home/u/.ssh"},
        {"authMountPath": "/root/.ssh/", "sshdPath": "/sshd"},
    ],
)
def test_valid_ssh_settings(ssh: dict[str, Any]) -> None:
    spec = ColossalAIJobSpec.model_validate(spec_with(ssh=ssh))
    assert spec.ssh.sshd_path.startswith("/") and spec.ssh.auth_mount_path.startswith("/")


def test_ssh_paths_checked_when_built_in_python() -> None:
    with pytest.raises(ValidationError, match="absolute"):
        SSHConfig(sshd_path="sshd")
    with pytest.raises(ValidationError, match="absolute"):
        SSHConfig(auth_mount_path="root/.ssh")


def test_debug_mode_may_leave_the_command_out() -> None:
    commands: list[list[str] | None] = [None, []]
    for command in commands:
        spec = ColossalAIJobSpec.model_validate(
            {**worker_with(command=command), "runMode": {"debug": {"enabled": True}}}
        )
        assert spec.debug_enabled and not spec.worker.command


def test_worker_models_directly() -> None:
    worker = WorkerSpec(template={"spec": {"containers": [{"name": "worker"}]}})
    assert (worker.replicas, worker.proc_per_worker, worker.command) == (1, 1, None)
    with pytest.raises(ValidationError, match="at least one container"):
        WorkerSpec(template={"spec": {"containers": []}})


@pytest.mark.parametrize(
    ("name", "replicas", "message"),
    [
        ("1st-job", 2, MSG_JOB_NAME),
        ("Job", 2, MSG_JOB_NAME),
        ("job-", 2, MSG_JOB_NAME),
        ("job_x", 2, MSG_JOB_NAME),
        # 55 + len("-launcher") = 64 (and 55 + len("-worker-0") = 64)
        ("d" + "x" * 54, 1, MSG_POD_NAME_LENGTH),
        # 54 + len("-worker-10") = 64
        ("d" + "x" * 53, 11, MSG_POD_NAME_LENGTH),
    ],
)
def test_invalid_names_rejected(name: str, replicas: int, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        ColossalAIJobObject.from_dict(job(worker_with(replicas=replicas), name))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("name", "replicas"),
    [
        ("d" + "x" * 53, 10),  # 54 + len("-worker-9") = 54 + len("-launcher") = 63
        ("d" + "x" * 52, 11),  # 53 + len("-worker-10") = 63
        ("a", 1),
        ("a-1", 2),
    ],
)
def test_valid_names(name: str, replicas: int) -> None:
    parsed = ColossalAIJobObject.from_dict(job(worker_with(replicas=replicas), name))
    assert parsed.name == name
    assert pod_names_fit(name, parsed.spec)


def test_unnamed_object_is_left_to_the_api_server() -> None:
    raw = job(base_spec())
    raw["metadata"] = {"generateName": "colossalai-"}
    assert ColossalAIJobObject.from_dict(raw).name == ""


# -- the generated CRD ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return committed_crd(CRD)


def test_crd_names_and_subresources(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "colossalaijobs.batch.tensorstack.dev"
    assert spec["group"] == "batch.tensorstack.dev"
    assert spec["names"]["kind"] == "ColossalAIJob"
    assert spec["names"]["plural"] == "colossalaijobs"
    assert spec["names"]["singular"] == "colossalaijob"
    assert "caij" in spec["names"]["shortNames"]
    assert spec["names"]["categories"] == ["t9k"]
    (version,) = spec["versions"]
    assert version["name"] == "v1beta1"
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns == ["Phase", "Reason", "Ready", "Replicas", "Restarts", "Progress", "ETA", "Age"]


def test_crd_gives_template_env_and_resources_the_kubernetes_schema(
    crd: dict[str, Any],
) -> None:
    props = schema_of(crd)["properties"]["spec"]["properties"]
    worker = props["worker"]
    assert worker["required"] == ["template"]
    template = worker["properties"]["template"]
    assert_pod_template_schema(template)
    assert template["required"] == ["spec"]
    pod = template["properties"]["spec"]
    assert pod["required"] == ["containers"]
    assert pod["properties"]["containers"]["minItems"] == 1
    launcher = props["launcher"]
    assert launcher["required"] == ["image"]
    env = launcher["properties"]["env"]["items"]
    assert env["required"] == ["name"] and env["properties"]["name"]["minLength"] == 1
    assert set(env["properties"]) == {"name", "value", "valueFrom"}
    assert "x-kubernetes-preserve-unknown-fields" not in env
    resources = launcher["properties"]["resources"]
    assert {"limits", "requests"} <= set(resources["properties"])
    assert "x-kubernetes-preserve-unknown-fields" not in resources


def test_crd_defaults(crd: dict[str, Any]) -> None:
    spec = schema_of(crd)["properties"]["spec"]
    # Either layout: launcher and worker, or replicaSpecs (the spec's rules, not required).
    assert "required" not in spec
    props = spec["properties"]
    ssh = props["ssh"]["properties"]
    assert ssh["authMountPath"]["default"] == "/root/.ssh"
    assert ssh["sshdPath"]["default"] == "/usr/sbin/sshd"
    worker = props["worker"]["properties"]
    assert worker["replicas"]["default"] == 1 and worker["replicas"]["minimum"] == 1
    assert worker["procPerWorker"]["default"] == 1 and worker["procPerWorker"]["minimum"] == 1
    assert worker["torchArgs"]["default"] == []
    assert "default" not in worker["command"]
    run_policy = props["runPolicy"]["properties"]
    assert set(run_policy) == {
        "cleanUpWorkers",
        "activeDeadlineSeconds",
        "backoffLimit",
        "progress",
    }
    assert run_policy["cleanUpWorkers"]["default"] is False
    assert "default" not in run_policy["backoffLimit"]
    assert "not acted on" in run_policy["backoffLimit"]["description"]
    assert run_policy["activeDeadlineSeconds"]["minimum"] == 1
    # Optional objects stay absent until set: no object-valued defaults.
    for name in ("ssh", "runPolicy", "scheduler", "runMode"):
        assert "default" not in props[name], name
    for name in ("env", "resources", "workingDir"):
        assert "default" not in props["launcher"]["properties"][name], name
    assert "sleep inf" in props["runMode"]["properties"]["debug"]["description"]
    assert "sleep inf" in props["runMode"]["description"]


def test_crd_rules(crd: dict[str, Any]) -> None:
    schema = schema_of(crd)
    spec = schema["properties"]["spec"]
    messages = rule_messages(schema)
    for message in (
        MSG_AUTH_MOUNT_PATH,
        MSG_SSHD_PATH,
        MSG_COMMAND_REQUIRED,
        MSG_JOB_NAME,
        MSG_POD_NAME_LENGTH,
    ):
        assert message in messages, message
    ssh = spec["properties"]["ssh"]["properties"]
    (rule,) = ssh["sshdPath"]["x-kubernetes-validations"]
    assert rule["rule"] == "self.startsWith('/')"
    absolute, place = ssh["authMountPath"]["x-kubernetes-validations"]
    assert absolute["rule"] == "self.startsWith('/')"
    assert place["message"] == MSG_AUTH_MOUNT_PLACE
    assert any("oldSelf" in r["rule"] for r in spec["x-kubernetes-validations"])
    resume = spec["properties"]["runMode"]["properties"]["pause"]["properties"]["resumeSpecs"]
    (immutable,) = resume["x-kubernetes-validations"]
    assert immutable["optionalOldSelf"] is True
    root = schema["x-kubernetes-validations"]
    assert all(r["fieldPath"] in (".metadata.name", ".spec.managedBy") for r in root)
    assert "-launcher" in next(r for r in root if r["message"] == MSG_POD_NAME_LENGTH)["rule"]
