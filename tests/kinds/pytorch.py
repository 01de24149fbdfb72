"""PyTorchTrainingJob's test data: its entry in each per-kind table of the tests.

Each name below is read by one test module (named in its docstring), through
:func:`tests.kinds.kind_table`; the values are written out here, never computed by
the code under test.
"""

from __future__ import annotations

from typing import Any

from t9k_operator.api import pytorch
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.pytorch import PyTorchKind
from t9k_operator.kinds.view import Role
from tests.integration import test_crd_pytorch as crd_tests
from tests.integration.jobs import pytorch_job
from tests.kinds.common import (
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
    replica_specs_templates,
    t9k_scheduler,
    template,
    wire_job,
)
from tests.unit.api import test_pytorch_models as model_tests

KIND = "PyTorchTrainingJob"
"""The kind's name, as its CRD declares it: the key of its entry in every table."""

# -- the unit tests ----------------------------------------------------------------------

SAMPLE = "pytorch-basic.yaml"
"""Its sample, a file of manifests/samples/."""

LOCAL_PROCESSES = ["worker-0", "worker-1", "worker-2", "worker-3"]
"""tests/unit/test_local_run.py: the processes its sample runs locally (``EXPECTED``)."""

API_MODELS = ModelCase(
    pytorch.CRD,
    pytorch.PyTorchTrainingJobObject,
    pytorch.PyTorchTrainingJobStatus,
    model_tests.SPEC_EXAMPLES,
    model_tests.STATUS_EXAMPLES,
    "pytorch-example",
    lambda spec: [rs["template"] for rs in spec["replicaSpecs"]],
)
"""tests/unit/api/test_job_objects.py: its API model and examples (``KINDS``)."""

RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    PyTorchKind(),
    {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "PyTorchTrainingJob",
        "spec": {
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": 2,
                    "restartPolicy": "OnFailure",
                    "template": template("pytorch"),
                }
            ]
        },
    },
    ["j-worker-0", "j-worker-1"],
)
"""tests/unit/reconcilers/test_job_reconciler.py: its hooks, a valid job, the pods a
fresh job gets (``JOBS``)."""

HOOKS = HooksCase(
    spec={
        "replicaSpecs": [
            {"type": "master", "replicas": 1, "template": template("pytorch")},
            {"type": "worker", "replicas": 2, "template": template("pytorch")},
        ]
    },
    roles=(Role("master", 1, "OnFailure"), Role("worker", 2, "OnFailure")),
    decides=("master", 0),
    bad=(
        ("replicaSpecs", 0, "restartPolicy"),
        "Sometimes",
        "spec.replicaSpecs[0].restartPolicy",
    ),
    defaults={
        "backoff_limit": pytorch.RunPolicy().backoff_limit,
        "cleanup_policy": pytorch.RunPolicy().clean_up_policy,
    },
    not_acted_on=(("replicaSpecs", 1, "scalingWeight"), 2),
    last_template=(("replicaSpecs", 1, "template"), "spec.replicaSpecs[1].template"),
)
"""tests/unit/reconcilers/test_kinds.py: its job and what its hooks read of it (``CASES``)."""

NEVER_RESTARTS = False
"""tests/unit/reconcilers/test_kinds.py: whether it restarts no pod (``NEVER_RESTART``)."""

KUEUE_POD_SETS = {"worker": 2}
"""tests/unit/reconcilers/test_kueue_reconciler.py: its Workload's pod sets, name -> count
(``POD_SETS``)."""

GANG_MIN_MEMBER = 2
"""tests/unit/reconcilers/test_gang_reconciler.py: its PodGroup's minMember (``MIN_MEMBER``)."""

PYTORCH = {"replicaSpecs": [{"type": "worker", "replicas": 2, "template": WORKER_TEMPLATE}]}
"""The spec the rules' examples change (``RULES``)."""

RULES: list[RuleCase] = [
    RuleCase(
        pytorch.DISTINCT_TYPES_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, replicaSpecs=[{"type": "master", "template": WORKER_TEMPLATE}] * 1),
        merged(PYTORCH, replicaSpecs=[{"type": "worker", "template": WORKER_TEMPLATE}] * 2),
        node=at_key("replicaSpecs"),
    ),
    RuleCase(
        pytorch.ONE_MASTER_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, replicaSpecs=[{"type": "master", "template": WORKER_TEMPLATE}]),
        merged(
            PYTORCH, replicaSpecs=[{"type": "master", "replicas": 2, "template": WORKER_TEMPLATE}]
        ),
        node=at_key("replicaSpecs"),
    ),
    RuleCase(
        pytorch.TOO_MANY_REPLICAS_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(
            PYTORCH,
            replicaSpecs=[{"type": "worker", "replicas": 5000, "template": WORKER_TEMPLATE}],
        ),
        merged(
            PYTORCH,
            replicaSpecs=[
                {"type": "worker", "replicas": 5000, "template": WORKER_TEMPLATE},
                {"type": "ps", "template": WORKER_TEMPLATE},
            ],
        ),
        node=at_key("replicaSpecs"),
    ),
    RuleCase(
        pytorch.ELASTIC_NEEDS_TORCHRUN_RULE,
        pytorch.PyTorchTrainingJobSpec,
        merged(PYTORCH, elastic={"enabled": False}, torchrunConfig={"enabled": False}),
        merged(
            PYTORCH,
            elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 2, "expectedReplicas": 1},
        ),
    ),
    RuleCase(
        pytorch.POD_NAME_LENGTH_RULE,
        pytorch.PyTorchTrainingJobObject,
        wire_job("PyTorchTrainingJob", merged(PYTORCH, elastic={"maxReplicas": 100}), LONG[:53]),
        wire_job("PyTorchTrainingJob", merged(PYTORCH, elastic={"maxReplicas": 101}), LONG[:53]),
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
        examples=model_tests.SPEC_EXAMPLES,
        invalid=crd_tests.INVALID,
        columns=T9K_COLUMNS,
        status=crd_status(model_tests.STATUS_EXAMPLES, restartCount=2, readyReplicas=3, replicas=4),
        row=[crd_tests.JOB, "Succeeded", "Succeeded", "3", "4", "2"],
        paused=model_tests.SPEC_EXAMPLES["pause-1"],
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "replicaSpecs": [
        {
            "type": "master",
            "replicas": 1,
            "restartPolicy": "OnFailure",
            "template": fuzz_template("pytorch", "pytorch:2"),
        },
        {
            "type": "worker",
            "replicas": 2,
            "restartPolicy": "ExitCode",
            "template": fuzz_template("pytorch", "pytorch:2"),
        },
    ],
    "runPolicy": {"backoffLimit": 2, "cleanUpPolicy": "None"},
    "torchrunConfig": {"enabled": False, "maxRestarts": 1, "procPerNode": "1"},
}
"""tests/integration/test_fuzz_specs.py: the spec of a valid job, which the fuzzer
enriches and mutates (``BASE_SPECS``)."""

fuzz_templates = replica_specs_templates
"""tests/integration/test_fuzz_specs.py: the (replica type, pod template) pairs of a
(mutated) spec, as found (``TEMPLATES``)."""

FUZZ_TEMPLATE_PATH = ("spec.replicaSpecs[0].template", "replicaSpecs.0.template")
"""tests/integration/test_fuzz_specs.py: the path of a pod template in the spec, as
the API server names it and as a dotted path into the spec (``TEMPLATE_PATHS``)."""

FUZZ_OWN_QUANTITY_SPOTS: list[tuple[str, str]] = []
"""tests/integration/test_fuzz_specs.py: its own quantities, as the API server names
each and its dotted path in the spec (``OWN_QUANTITY_SPOTS``)."""

FUZZ_RESUMES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    (
        "plain",
        {},
        [
            {"type": "master", "args": ["train.py", "--resume", "ckpt"]},
            {"type": "worker", "command": ["python", "resume.py"], "args": ["--from", "c"]},
        ],
    ),
    (
        "torchrun",
        {"torchrunConfig": {"enabled": True, "procPerNode": "1"}},
        [
            {"type": "master", "args": ["train.py", "--resume", "ckpt"]},
            {"type": "worker", "args": ["train.py", "--resume", "ckpt"]},
        ],
    ),
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
        "replicaSpecs": [
            {"type": "worker", "replicas": pods, "template": gpu_template("pytorch", notes)}
        ]
    }
    t9k_scheduler(spec, queue, priority)
    return spec


GANG_ELASTIC_NEEDS: dict[str, Any] = {"torchrunConfig": {"enabled": True}}
"""tests/integration/test_gang_jobs.py: what else its spec needs to be elastic
(``ELASTIC_NEEDS``)."""

GANG_RESTARTING: tuple[tuple[str | int, ...], str, Any] | None = (
    ("replicaSpecs", 0),
    "restarts-worker-1",
    "OnFailure",
)
"""tests/integration/test_gang_jobs.py: where its restart policy goes, the replica that
fails, the policy that restarts it; None: it never restarts a pod (``RESTARTING``)."""


def schema_template(spec: dict[str, Any]) -> dict[str, Any]:
    """tests/integration/test_pod_template_schema.py: one pod template of its sample
    (``TEMPLATES``)."""
    return spec["replicaSpecs"][0]["template"]


SCHEMA_EXPLAIN: str | None = "spec.replicaSpecs.template.spec.containers.command"
"""tests/integration/test_pod_template_schema.py: the path kubectl explain takes to a
container's command; None: none (``EXPLAIN``)."""


def tensorboard_job(name: str, **spec: Any) -> dict[str, Any]:
    """tests/integration/test_tensorboard.py: a job of it named ``name``, with one worker
    that runs to its end, and the given spec fields (``JOBS``)."""
    return pytorch_job(name, [("worker", 1, "Never")], manual=False, **spec)
