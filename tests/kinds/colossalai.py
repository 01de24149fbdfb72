"""ColossalAIJob's test data: its entry in each per-kind table of the tests.

Each name below is read by one test module (named in its docstring), through
:func:`tests.kinds.kind_table`; the values are written out here, never computed by
the code under test.
"""

from __future__ import annotations

from typing import Any

from t9k_operator.api import colossalai, colossalai_layout, colossalai_replicas
from t9k_operator.api.replica_specs import DISTINCT_TYPES_RULE
from t9k_operator.kinds.colossalai import ColossalAIKind
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.view import Role
from tests.integration import test_crd_colossalai as crd_tests
from tests.integration.test_colossalai_job import cj
from tests.kinds.common import (
    DEBUG,
    GPUS,
    LONG,
    T9K_COLUMNS,
    WORKER_TEMPLATE,
    CrdCase,
    HooksCase,
    ModelCase,
    Notes,
    RuleCase,
    at_key,
    crd_status,
    fuzz_template,
    gpu_template,
    merged,
    t9k_scheduler,
    template,
    wire_job,
    worker_templates,
)
from tests.unit.api import test_colossalai_models as model_tests

KIND = "ColossalAIJob"
"""The kind's name, as its CRD declares it: the key of its entry in every table."""

# -- the unit tests ----------------------------------------------------------------------

SAMPLE = "colossalai-basic.yaml"
"""Its sample, a file of manifests/samples/."""

LOCAL_PROCESSES = ["worker-0", "worker-1"]
"""tests/unit/test_local_run.py: the processes its sample runs locally (``EXPECTED``)."""

MORE_SAMPLES = {"colossalai-2025.yaml": ["worker-0", "worker-1"]}
"""tests/unit/test_local_run.py: its sample of T9k's 2025 layout, and the processes it
runs locally (``EXPECTED``)."""

API_MODELS = ModelCase(
    colossalai.CRD,
    colossalai.ColossalAIJobObject,
    colossalai.ColossalAIJobStatus,
    model_tests.ALL_EXAMPLES,
    model_tests.STATUS_EXAMPLES,
    model_tests.JOB,
    lambda spec: [spec["worker"]["template"]],
)
"""tests/unit/api/test_job_objects.py: its API model and examples (``KINDS``)."""

RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    ColossalAIKind(),
    {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "ColossalAIJob",
        "spec": {
            "launcher": {"image": "img"},
            "worker": {"replicas": 2, "command": ["train.py"], "template": template("worker")},
        },
    },
    ["j-launcher", "j-worker-0", "j-worker-1"],
)
"""tests/unit/reconcilers/test_job_reconciler.py: its hooks, a valid job, the pods a
fresh job gets (``JOBS``)."""

HOOKS = HooksCase(
    spec={
        "launcher": {"image": "img"},
        "worker": {"replicas": 2, "command": ["train.py"], "template": template("worker")},
    },
    roles=(Role("launcher", 1, "Never"), Role("worker", 2, "Never")),
    decides=("launcher", 0),
    bad=(("worker", "procPerWorker"), 0, "spec.worker.procPerWorker"),
    defaults={"cleanup_policy": "None"},
    not_acted_on=(("runPolicy", "backoffLimit"), 2),
    last_template=(("worker", "template"), "spec.worker.template"),
)
"""tests/unit/reconcilers/test_kinds.py: its job and what its hooks read of it (``CASES``)."""

NEVER_RESTARTS = True
"""tests/unit/reconcilers/test_kinds.py: whether it restarts no pod (``NEVER_RESTART``)."""

KUEUE_POD_SETS = {"launcher": 1, "worker": 2}
"""tests/unit/reconcilers/test_kueue_reconciler.py: its Workload's pod sets, name -> count
(``POD_SETS``)."""

GANG_MIN_MEMBER = 3
"""tests/unit/reconcilers/test_gang_reconciler.py: its PodGroup's minMember (``MIN_MEMBER``)."""

COLOSSALAI = {
    "launcher": {"image": "train"},
    "worker": {"replicas": 2, "command": ["train.py"], "template": WORKER_TEMPLATE},
}
"""The spec the rules' examples change (``RULES``)."""

COLOSSALAI_2025 = {
    "torchConfig": {"script": ["train.py"]},
    "replicaSpecs": [
        {"type": "launcher", "template": template("launcher")},
        {"type": "worker", "replicas": 2, "template": WORKER_TEMPLATE},
    ],
}
"""The same job in T9k's 2025 layout (``RULES``)."""
LAUNCHER_2025, WORKER_2025 = COLOSSALAI_2025["replicaSpecs"]

RULES: list[RuleCase] = [
    RuleCase(
        colossalai.COMMAND_REQUIRED_RULE,
        colossalai.ColossalAIJobSpec,
        merged(COLOSSALAI, worker={"template": WORKER_TEMPLATE}, **DEBUG),
        merged(COLOSSALAI, worker={"template": WORKER_TEMPLATE, "command": []}),
    ),
    RuleCase(
        colossalai_replicas.AUTH_MOUNT_PATH_RULE,
        colossalai.SSHConfig,
        {"authMountPath": "/home/user/.ssh"},
        {"authMountPath": "home/user/.ssh"},
        node=at_key("authMountPath"),
    ),
    *(
        RuleCase(
            colossalai_replicas.AUTH_MOUNT_PLACE_RULE,
            colossalai.SSHConfig,
            {"authMountPath": "/home/user/.ssh/"},
            {"authMountPath": bad},
            node=at_key("authMountPath"),
        )
        for bad in ("/", "/home//.ssh", "/home/./.ssh", "/root/..", "/tmp/ssh", "/t9k")
    ),
    RuleCase(
        colossalai_replicas.SSHD_PATH_RULE,
        colossalai.SSHConfig,
        {"sshdPath": "/usr/bin/sshd"},
        {"sshdPath": "sshd"},
        node=at_key("sshdPath"),
    ),
    RuleCase(
        colossalai.POD_NAME_LENGTH_RULE,
        colossalai.ColossalAIJobObject,
        wire_job("ColossalAIJob", COLOSSALAI, LONG[:54]),
        wire_job("ColossalAIJob", COLOSSALAI, LONG[:55]),
    ),
    RuleCase(
        colossalai.POD_NAME_LENGTH_RULE,
        colossalai.ColossalAIJobObject,
        wire_job("ColossalAIJob", COLOSSALAI_2025, LONG[:54]),
        wire_job("ColossalAIJob", COLOSSALAI_2025, LONG[:55]),
    ),
    # One layout per object: the 2025 one or the older one, never both, never neither.
    *(
        RuleCase(
            colossalai.ONE_LAYOUT_RULE,
            colossalai.ColossalAIJobSpec,
            COLOSSALAI_2025,
            merged(COLOSSALAI_2025, **{key: COLOSSALAI[key]}),
        )
        for key in ("launcher", "worker")
    ),
    RuleCase(
        colossalai.ONE_LAYOUT_RULE,
        colossalai.ColossalAIJobSpec,
        COLOSSALAI,
        merged(COLOSSALAI, torchConfig={"script": ["train.py"]}),
    ),
    *(
        RuleCase(colossalai.SOME_LAYOUT_RULE, colossalai.ColossalAIJobSpec, good, bad)
        for good, bad in (
            (COLOSSALAI_2025, {"torchConfig": {"script": ["train.py"]}}),
            (COLOSSALAI, merged(COLOSSALAI, launcher=None)),
            (COLOSSALAI, merged(COLOSSALAI, worker=None)),
        )
    ),
    RuleCase(
        colossalai.SCRIPT_REQUIRED_RULE,
        colossalai.ColossalAIJobSpec,
        merged(COLOSSALAI_2025, torchConfig={"procPerWorker": 2}, **DEBUG),
        merged(COLOSSALAI_2025, torchConfig={"procPerWorker": 2, "script": []}),
    ),
    RuleCase(
        colossalai.SCRIPT_REQUIRED_RULE,
        colossalai.ColossalAIJobSpec,
        COLOSSALAI_2025,
        merged(COLOSSALAI_2025, torchConfig=None),
    ),
    RuleCase(
        colossalai_layout.WORKER_SPEC_RULE,
        colossalai.ColossalAIJobSpec,
        merged(COLOSSALAI_2025, replicaSpecs=[WORKER_2025]),
        merged(COLOSSALAI_2025, replicaSpecs=[LAUNCHER_2025]),
        node=at_key("replicaSpecs"),
    ),
    RuleCase(
        DISTINCT_TYPES_RULE,
        colossalai.ColossalAIJobSpec,
        COLOSSALAI_2025,
        merged(COLOSSALAI_2025, replicaSpecs=[WORKER_2025, WORKER_2025]),
        node=at_key("replicaSpecs"),
    ),
    RuleCase(
        colossalai_layout.ONE_LAUNCHER_RULE,
        colossalai_layout.ColossalAIReplicaSpec,
        {"type": "launcher", "replicas": 1},
        {"type": "launcher", "replicas": 2},
    ),
    *(
        RuleCase(
            colossalai_layout.WORKER_CONTAINERS_RULE,
            colossalai_layout.ColossalAIReplicaSpec,
            {"type": "worker", "template": WORKER_TEMPLATE},
            {"type": "worker", **bad},
        )
        for bad in ({}, {"template": {"spec": {"containers": []}}})
    ),
]
"""tests/unit/api/test_rules.py: a passing and a failing example of each rule its API
registers, of the model the rule is on, in the wire shape (``CASES``)."""


# -- the integration tests --------------------------------------------------------------


def crd_case() -> CrdCase:
    """tests/integration/test_crd_kinds.py: its CRD's case (``CASES``)."""
    return CrdCase(
        crd=crd_tests.CRD,
        job=crd_tests.JOB,
        example=model_tests.SPEC_EXAMPLES["basic"],
        examples=model_tests.ALL_EXAMPLES,
        invalid=crd_tests.INVALID,
        columns=T9K_COLUMNS,
        status=crd_status(model_tests.STATUS_EXAMPLES, restartCount=0, readyReplicas=3, replicas=3),
        row=[crd_tests.JOB, "Failed", "-", "3", "3", "0"],
        paused=model_tests.SPEC_EXAMPLES["pause-1"],
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "ssh": {"authMountPath": "/root/.ssh", "sshdPath": "/usr/sbin/sshd"},
    "launcher": {
        "image": "colossalai:0.3",
        "workingDir": "/workspace",
        "env": [{"name": "A", "value": "1"}],
        "resources": {"limits": {"cpu": "1"}},
    },
    "worker": {
        "replicas": 2,
        "procPerWorker": 1,
        "command": ["train.py"],
        "template": fuzz_template("worker", "colossalai:0.3"),
    },
    "runPolicy": {"cleanUpWorkers": False},  # pods stay to be compared
}
"""tests/integration/test_fuzz_specs.py: the spec of a valid job, which the fuzzer
enriches and mutates (``BASE_SPECS``)."""

fuzz_templates = worker_templates  # its launcher has no pod template
"""tests/integration/test_fuzz_specs.py: the (replica type, pod template) pairs of a
(mutated) spec, as found (``TEMPLATES``)."""

FUZZ_TEMPLATE_PATH = ("spec.worker.template", "worker.template")
"""tests/integration/test_fuzz_specs.py: the path of a pod template in the spec, as
the API server names it and as a dotted path into the spec (``TEMPLATE_PATHS``)."""

FUZZ_OWN_QUANTITY_SPOTS: list[tuple[str, str]] = [
    ("spec.launcher.resources.limits.cpu", "launcher.resources.limits.cpu")
]
"""tests/integration/test_fuzz_specs.py: its own quantities, as the API server names
each and its dotted path in the spec (``OWN_QUANTITY_SPOTS``)."""

FUZZ_RESUMES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    (
        "caij",
        {},
        [
            {"type": "launcher", "command": ["colossalai", "run", "r.py"], "args": ["--x"]},
            {"type": "worker", "command": ["/usr/sbin/sshd", "-D"], "args": ["-e"]},
        ],
    )
]
"""tests/integration/test_fuzz_specs.py: jobs (a name, spec changes, resumeSpecs),
every item of which must be on the pods of its type after a pause ends (``RESUMES``)."""


def gang_gpu_spec(
    pods: int, notes: Notes, queue: str | None, priority: int | None
) -> dict[str, Any]:
    """tests/integration/test_gang_jobs.py: the spec of a job of ``pods`` pods of 8 GPUs
    (their templates annotated ``notes``), asking for ``queue`` and ``priority`` (None:
    none) its way (``GPU_SPECS``)."""
    spec: dict[str, Any] = {
        "launcher": {"image": "img", "resources": GPUS},
        "worker": {
            "replicas": pods - 1,  # and the launcher
            "command": ["train.py"],
            "template": gpu_template("worker", notes),
        },
    }
    t9k_scheduler(spec, queue, priority)
    return spec


GANG_RESTARTING: tuple[tuple[str | int, ...], str, Any] | None = (
    None  # it never restarts a pod (docs/kinds.md)
)
"""tests/integration/test_gang_jobs.py: where its restart policy goes, the replica that
fails, the policy that restarts it; None: it never restarts a pod (``RESTARTING``)."""


def schema_template(spec: dict[str, Any]) -> dict[str, Any]:
    """tests/integration/test_pod_template_schema.py: one pod template of its sample
    (``TEMPLATES``)."""
    return spec["worker"]["template"]


SCHEMA_EXPLAIN: str | None = "spec.worker.template.spec.containers.command"
"""tests/integration/test_pod_template_schema.py: the path kubectl explain takes to a
container's command; None: none (``EXPLAIN``)."""

SSH_LAUNCH_TEST = "test_colossalai_trains_on_a_stock_image"
"""tests/integration/test_ssh_launch.py (or test_mpijob_launch.py): the test that trains
through its ssh launch path (``LAUNCHED``)."""


def tensorboard_job(name: str, **spec: Any) -> dict[str, Any]:
    """tests/integration/test_tensorboard.py: a job of it named ``name``, with one worker
    that runs to its end, and the given spec fields (``JOBS``)."""
    return cj(name, 1, manual=False, **spec)
