"""DeepSpeedJob's test data: its entry in each per-kind table of the tests.

Each name below is read by one test module (named in its docstring), through
:func:`tests.kinds.kind_table`; the values are written out here, never computed by
the code under test.
"""

from __future__ import annotations

from typing import Any

from t9k_operator.api import deepspeed, deepspeed_config, deepspeed_worker
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.deepspeed import DeepSpeedKind
from t9k_operator.kinds.view import Role
from tests.integration import test_crd_deepspeed as crd_tests
from tests.integration.test_deepspeed_job import ds_job
from tests.kinds.common import (
    DEBUG,
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
from tests.unit.api import test_deepspeed_models as model_tests

KIND = "DeepSpeedJob"
"""The kind's name, as its CRD declares it: the key of its entry in every table."""

# -- the unit tests ----------------------------------------------------------------------

SAMPLE = "deepspeed-basic.yaml"
"""Its sample, a file of manifests/samples/."""

LOCAL_PROCESSES = ["worker-0", "worker-1", "worker-2", "worker-3"]
"""tests/unit/test_local_run.py: the processes its sample runs locally (``EXPECTED``)."""

API_MODELS = ModelCase(
    deepspeed.CRD,
    deepspeed.DeepSpeedJobObject,
    deepspeed.DeepSpeedJobStatus,
    model_tests.ALL_EXAMPLES,
    model_tests.STATUS_EXAMPLES,
    "deepspeed-example",
    lambda spec: [spec["worker"]["template"]],
)
"""tests/unit/api/test_job_objects.py: its API model and examples (``KINDS``)."""

RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    DeepSpeedKind(),
    {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "DeepSpeedJob",
        "spec": {
            "config": {"slotsPerWorker": 1, "run": {"python": ["train.py"]}},
            "worker": {"replicas": 2, "template": template("worker")},
        },
    },
    ["j-worker-0", "j-worker-1"],
)
"""tests/unit/reconcilers/test_job_reconciler.py: its hooks, a valid job, the pods a
fresh job gets (``JOBS``)."""

HOOKS = HooksCase(
    spec={
        "config": {"slotsPerWorker": 1, "run": {"python": ["train.py"]}},
        "worker": {"replicas": 3, "template": template("worker")},
    },
    roles=(Role("worker", 3, "OnFailure"),),
    decides=("worker", 0),
    bad=(("worker", "replicas"), -1, "spec.worker.replicas"),
    defaults={"backoff_limit": deepspeed.RunPolicy().backoff_limit},
    last_template=(("worker", "template"), "spec.worker.template"),
)
"""tests/unit/reconcilers/test_kinds.py: its job and what its hooks read of it (``CASES``)."""

NEVER_RESTARTS = False
"""tests/unit/reconcilers/test_kinds.py: whether it restarts no pod (``NEVER_RESTART``)."""

KUEUE_POD_SETS = {"worker": 2}
"""tests/unit/reconcilers/test_kueue_reconciler.py: its Workload's pod sets, name -> count
(``POD_SETS``)."""

GANG_MIN_MEMBER = 2
"""tests/unit/reconcilers/test_gang_reconciler.py: its PodGroup's minMember (``MIN_MEMBER``)."""

DEEPSPEED = {
    "config": {"run": {"python": ["train.py"]}},
    "worker": {"replicas": 1, "template": WORKER_TEMPLATE},
}
"""The spec the rules' examples change (``RULES``)."""

RULES: list[RuleCase] = [
    RuleCase(
        deepspeed.RUN_REQUIRED_RULE,
        deepspeed.DeepSpeedJobSpec,
        merged(DEEPSPEED, config=None, **DEBUG),
        merged(DEEPSPEED, config={"slotsPerWorker": 2}),
    ),
    RuleCase(
        deepspeed.RUN_REQUIRED_RULE,
        deepspeed.DeepSpeedJobSpec,
        merged(DEEPSPEED, config={"customCommand": "deepspeed --hostfile=/t9k/hostfile t.py"}),
        merged(DEEPSPEED, config={"slotsPerWorker": 2, "localRank": False}),
    ),
    *(
        RuleCase(
            deepspeed_worker.RESERVED_MOUNTS_RULE,
            deepspeed.WorkerSpec,
            {"template": {"spec": {"containers": good}}},
            {"template": {"spec": {"containers": bad}}},
            node=at_key("template"),
        )
        for good, bad in (
            (
                [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/root/.sshx"}]}],
                [{"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/root/.ssh/k"}]}],
            ),
            (
                [
                    {"name": "sidecar", "volumeMounts": [{"name": "v", "mountPath": "/t9k"}]},
                    {"name": "worker"},
                ],
                [
                    {"name": "sidecar"},
                    {
                        "name": "worker",
                        "volumeMounts": [{"name": "v", "mountPath": "/t9k/hostfile"}],
                    },
                ],
            ),
        )
    ),
    RuleCase(
        deepspeed.POD_NAME_LENGTH_RULE,
        deepspeed.DeepSpeedJobObject,
        wire_job("DeepSpeedJob", merged(DEEPSPEED, elastic={"maxReplicas": 10}), LONG[:54]),
        wire_job("DeepSpeedJob", merged(DEEPSPEED, elastic={"maxReplicas": 11}), LONG[:54]),
    ),
    RuleCase(
        deepspeed_config.RESERVED_ARGS_RULE,
        deepspeed_config.DeepSpeedConfig,
        {"otherArgs": ["--master_port=1", "--hostfile_x"]},
        {"otherArgs": ["--master_port=1", "--hostfile=/h"]},
        node=at_key("otherArgs"),
    ),
    *(
        RuleCase(
            deepspeed_config.LAUNCHER_PDSH_RULE,
            deepspeed_config.DeepSpeedConfig,
            {"otherArgs": good},
            {"otherArgs": bad},
            node=at_key("otherArgs"),
        )
        for good, bad in (
            (["--launcher", "PDSH"], ["--launcher", "openmpi"]),
            (["--launcher=pdsh"], ["--launcher=slurm"]),
            ([], ["--launcher"]),
            (["--launcher", "pdsh"], ["--launcher", "pdsh", "--launcher", "pdsh"]),
        )
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
        status=crd_status(model_tests.STATUS_EXAMPLES, restartCount=1, readyReplicas=2, replicas=4),
        row=[crd_tests.JOB, "Failed", "-", "2", "4", "1"],
        paused=model_tests.SPEC_EXAMPLES["pause-1"],
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "config": {
        "slotsPerWorker": 1,
        "run": {"python": ["train.py"]},
        "otherArgs": ["--master_port", "29501"],
    },
    "worker": {
        "replicas": 2,
        "restartPolicy": "OnFailure",
        "template": fuzz_template("worker", "deepspeed:0.14"),
    },
    "runPolicy": {"backoffLimit": 1},
}
"""tests/integration/test_fuzz_specs.py: the spec of a valid job, which the fuzzer
enriches and mutates (``BASE_SPECS``)."""

fuzz_templates = worker_templates
"""tests/integration/test_fuzz_specs.py: the (replica type, pod template) pairs of a
(mutated) spec, as found (``TEMPLATES``)."""

FUZZ_TEMPLATE_PATH = ("spec.worker.template", "worker.template")
"""tests/integration/test_fuzz_specs.py: the path of a pod template in the spec, as
the API server names it and as a dotted path into the spec (``TEMPLATE_PATHS``)."""

FUZZ_OWN_QUANTITY_SPOTS: list[tuple[str, str]] = []
"""tests/integration/test_fuzz_specs.py: its own quantities, as the API server names
each and its dotted path in the spec (``OWN_QUANTITY_SPOTS``)."""

FUZZ_RESUMES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    (
        "ds",
        {},
        [{"type": "worker", "command": ["bash", "-c", "resume.sh"], "args": ["--from", "c"]}],
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
        "config": {"run": {"python": ["train.py"]}},
        "worker": {"replicas": pods, "template": gpu_template("worker", notes)},
    }
    t9k_scheduler(spec, queue, priority)
    return spec


GANG_ELASTIC_NEEDS: dict[str, Any] = {}
"""tests/integration/test_gang_jobs.py: what else its spec needs to be elastic
(``ELASTIC_NEEDS``)."""

GANG_RESTARTING: tuple[tuple[str | int, ...], str, Any] | None = (
    ("worker",),
    "restarts-worker-1",
    "OnFailure",
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

SSH_LAUNCH_TEST = "test_deepspeed_trains_on_a_stock_image"
"""tests/integration/test_ssh_launch.py (or test_mpijob_launch.py): the test that trains
through its ssh launch path (``LAUNCHED``)."""


def tensorboard_job(name: str, **spec: Any) -> dict[str, Any]:
    """tests/integration/test_tensorboard.py: a job of it named ``name``, with one worker
    that runs to its end, and the given spec fields (``JOBS``)."""
    return ds_job(name, 1, manual=False, **spec)
