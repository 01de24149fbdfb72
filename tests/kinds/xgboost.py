"""XGBoostTrainingJob's test data: its entry in each per-kind table of the tests.

Each name below is read by one test module (named in its docstring), through
:func:`tests.kinds.kind_table`; the values are written out here, never computed by
the code under test.
"""

from __future__ import annotations

from typing import Any

from t9k_operator.api import xgboost
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.view import Role
from t9k_operator.kinds.xgboost import XGBoostKind
from tests.integration import test_crd_xgboost as crd_tests
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
    fuzz_template,
    gpu_template,
    merged,
    replica_specs_templates,
    t9k_scheduler,
    template,
    wire_job,
)
from tests.unit.api import test_xgboost_models as model_tests

KIND = "XGBoostTrainingJob"
"""The kind's name, as its CRD declares it: the key of its entry in every table."""

# -- the unit tests ----------------------------------------------------------------------

SAMPLE = "xgboost-basic.yaml"
"""Its sample, a file of manifests/samples/."""

LOCAL_PROCESSES = ["master-0", "worker-0", "worker-1"]
"""tests/unit/test_local_run.py: the processes its sample runs locally (``EXPECTED``)."""

API_MODELS = ModelCase(
    xgboost.CRD,
    xgboost.XGBoostTrainingJobObject,
    xgboost.XGBoostTrainingJobStatus,
    model_tests.SPEC_EXAMPLES,
    model_tests.STATUS_EXAMPLES,
    model_tests.JOB,
    lambda spec: [rs["template"] for rs in spec["replicaSpecs"]],
)
"""tests/unit/api/test_job_objects.py: its API model and examples (``KINDS``)."""

RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    XGBoostKind(),
    {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "XGBoostTrainingJob",
        "spec": {
            "replicaSpecs": [
                {"type": "master", "template": template("xgboost")},
                {"type": "worker", "replicas": 2, "template": template("xgboost")},
            ]
        },
    },
    ["j-master-0", "j-worker-0", "j-worker-1"],
)
"""tests/unit/reconcilers/test_job_reconciler.py: its hooks, a valid job, the pods a
fresh job gets (``JOBS``)."""

HOOKS = HooksCase(
    spec={
        "replicaSpecs": [
            {"type": "master", "template": template("xgboost")},
            {"type": "worker", "replicas": 2, "template": template("xgboost")},
        ]
    },
    roles=(Role("master", 1, "OnFailure"), Role("worker", 2, "OnFailure")),
    decides=("master", 0),
    bad=(("replicaSpecs", 1, "type"), "ps", "spec.replicaSpecs[1].type"),
    defaults={
        "backoff_limit": xgboost.RunPolicy().backoff_limit,
        "cleanup_policy": xgboost.RunPolicy().clean_up_policy,
    },
    tensorboard=False,
    last_template=(("replicaSpecs", 1, "template"), "spec.replicaSpecs[1].template"),
)
"""tests/unit/reconcilers/test_kinds.py: its job and what its hooks read of it (``CASES``)."""

NEVER_RESTARTS = False
"""tests/unit/reconcilers/test_kinds.py: whether it restarts no pod (``NEVER_RESTART``)."""

KUEUE_POD_SETS = {"master": 1, "worker": 2}
"""tests/unit/reconcilers/test_kueue_reconciler.py: its Workload's pod sets, name -> count
(``POD_SETS``)."""

GANG_MIN_MEMBER = 3
"""tests/unit/reconcilers/test_gang_reconciler.py: its PodGroup's minMember (``MIN_MEMBER``)."""


def xgboost_workers(n: int) -> dict[str, Any]:
    """A spec of a master and ``n`` workers (``RULES``)."""
    return {
        "replicaSpecs": [
            {"type": "master", "template": WORKER_TEMPLATE},
            {"type": "worker", "replicas": n, "template": WORKER_TEMPLATE},
        ]
    }


XGBOOST = xgboost_workers(100)

RULES: list[RuleCase] = [
    RuleCase(
        xgboost.ONE_MASTER_RULE,
        xgboost.XGBoostTrainingJobSpec,
        merged(XGBOOST, replicaSpecs=[{"type": "master", "template": WORKER_TEMPLATE}]),
        merged(
            XGBOOST, replicaSpecs=[{"type": "master", "replicas": 2, "template": WORKER_TEMPLATE}]
        ),
        node=at_key("replicaSpecs"),
    ),
    RuleCase(
        xgboost.POD_NAME_LENGTH_RULE,
        xgboost.XGBoostTrainingJobObject,
        wire_job("XGBoostTrainingJob", XGBOOST, LONG[:53]),
        wire_job("XGBoostTrainingJob", xgboost_workers(101), LONG[:53]),
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
        example=crd_tests.SAMPLE,
        examples=crd_tests.EXAMPLES,
        invalid=crd_tests.INVALID,
        columns=T9K_COLUMNS,
        status=crd_tests.STATUS,
        row=crd_tests.ROW,
        paused=crd_tests.PAUSED,
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "replicaSpecs": [
        {
            "type": "master",
            "replicas": 1,
            "restartPolicy": "OnFailure",
            "template": fuzz_template("xgboost", "xgboost:2"),
        },
        {
            "type": "worker",
            "replicas": 2,
            "restartPolicy": "ExitCode",
            "template": fuzz_template("xgboost", "xgboost:2"),
        },
    ],
    "runPolicy": {"backoffLimit": 2, "cleanUpPolicy": "None"},
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
        "xgb",
        {},
        [
            {"type": "master", "args": ["--resume", "ckpt"]},
            {"type": "worker", "command": ["python3", "resume.py"], "args": ["--from", "c"]},
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
        "replicaSpecs": [
            {"type": "master", "template": gpu_template("xgboost", notes)},
            {"type": "worker", "replicas": pods - 1, "template": gpu_template("xgboost", notes)},
        ]
    }
    t9k_scheduler(spec, queue, priority)
    return spec


GANG_RESTARTING: tuple[tuple[str | int, ...], str, Any] | None = (
    ("replicaSpecs", 1),
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
