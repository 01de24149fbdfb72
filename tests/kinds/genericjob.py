"""GenericJob's test data: its entry in each per-kind table of the tests.

Each name below is read by one test module (named in its docstring), through
:func:`tests.kinds.kind_table`; the values are written out here, never computed by
the code under test.
"""

from __future__ import annotations

from typing import Any

from t9k_operator.api import genericjob
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.genericjob import GenericJobKind
from t9k_operator.kinds.view import Role
from tests.integration import test_crd_genericjob as crd_tests
from tests.integration.jobs import pytorch_job
from tests.kinds import pytorch
from tests.kinds.common import (
    LONG,
    T9K_COLUMNS,
    CrdCase,
    HooksCase,
    ModelCase,
    RuleCase,
    crd_status,
    fuzz_template,
    merged,
    replica_specs_templates,
    template,
    wire_job,
)
from tests.unit.api import test_genericjob_models as model_tests

KIND = "GenericJob"
"""The kind's name, as its CRD declares it: the key of its entry in every table."""

# -- the unit tests ----------------------------------------------------------------------

SAMPLE = "genericjob-basic.yaml"
"""Its sample, a file of manifests/samples/."""

LOCAL_PROCESSES = ["worker-0", "worker-1", "worker-2"]
"""tests/unit/test_local_run.py: the processes its sample runs locally (``EXPECTED``)."""

API_MODELS = ModelCase(
    genericjob.CRD,
    genericjob.GenericJobObject,
    genericjob.GenericJobStatus,
    model_tests.SPEC_EXAMPLES,
    model_tests.STATUS_EXAMPLES,
    model_tests.JOB,
    lambda spec: [rs["template"] for rs in spec["replicaSpecs"]],
)
"""tests/unit/api/test_job_objects.py: its API model and examples (``KINDS``)."""

RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    GenericJobKind(),
    {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "spec": {"replicaSpecs": [{"type": "worker", "replicas": 2, "template": template("main")}]},
    },
    ["j-worker-0", "j-worker-1"],
)
"""tests/unit/reconcilers/test_job_reconciler.py: its hooks, a valid job, the pods a
fresh job gets (``JOBS``)."""

HOOKS = HooksCase(
    spec={
        "successRules": [{"server": [0]}],
        "service": {"ports": [{"name": "http", "port": 2222}]},
        "replicaSpecs": [
            {"type": "client", "replicas": 2, "template": template("client")},
            {
                "type": "server",
                "restartPolicy": {"policy": "Never"},
                "template": template("server"),
            },
        ],
    },
    roles=(Role("client", 2, "OnFailure", 0), Role("server", 1, "Never", 0)),
    decides=("server", 0),
    bad=(
        ("replicaSpecs", 0, "restartPolicy"),
        {"policy": "Sometimes"},
        "spec.replicaSpecs[0].restartPolicy",
    ),
    defaults={"backoff_limit": 0, "cleanup_policy": "None", "failure_rules": None},
    not_acted_on=(("service", "ports", 0, "nodePort"), 30001),
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

RULES: list[RuleCase] = [
    RuleCase(
        genericjob.SUCCESS_RULES_RULE,
        genericjob.GenericJobSpec,
        merged(pytorch.PYTORCH, successRules=[{"worker": [0, 1]}]),
        merged(pytorch.PYTORCH, successRules=[{"worker": [0, 2]}]),
    ),
    RuleCase(
        genericjob.FAILURE_RULES_RULE,
        genericjob.GenericJobSpec,
        merged(pytorch.PYTORCH, failureRules=[{"worker": [1]}]),
        merged(pytorch.PYTORCH, failureRules=[{"server": [0]}]),
    ),
    RuleCase(
        genericjob.DISTINCT_PORTS_RULE,
        genericjob.ServiceOption,
        {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 1}]},
        {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
    ),
    RuleCase(
        genericjob.POD_NAME_LENGTH_RULE,
        genericjob.GenericJobObject,
        wire_job("GenericJob", pytorch.PYTORCH, LONG[:54]),
        wire_job("GenericJob", pytorch.PYTORCH, LONG[:55]),
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
        example=model_tests.OWN_EXAMPLES["rules-and-service"],
        examples=model_tests.SPEC_EXAMPLES,
        invalid=crd_tests.INVALID,
        columns=T9K_COLUMNS,
        status=crd_status(model_tests.STATUS_EXAMPLES, restartCount=1, readyReplicas=2, replicas=3),
        row=[crd_tests.JOB, "Failed", "ReplicaFailed", "2", "3", "1"],
        paused=model_tests.OWN_EXAMPLES["pause"],
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "successRules": [{"server": [0]}],
    "failureRules": [{"client": [0, 1]}],
    "service": {"ports": [{"name": "msg", "port": 5000}]},
    "cleanUpPolicy": "Unfinished",
    "replicaSpecs": [
        {
            "type": "server",
            "restartPolicy": {"policy": "OnFailure", "limit": 2},
            "template": fuzz_template("main", "debian:12"),
        },
        {
            "type": "client",
            "replicas": 2,
            "restartPolicy": {"policy": "Never"},
            "template": fuzz_template("main", "debian:12"),
        },
    ],
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
        "gj",
        {},
        [
            {"type": "server", "command": ["python3", "serve.py"], "args": ["--resume"]},
            {"type": "client", "args": ["--from", "c"]},
        ],
    )
]
"""tests/integration/test_fuzz_specs.py: jobs (a name, spec changes, resumeSpecs),
every item of which must be on the pods of its type after a pause ends (``RESUMES``)."""


gang_gpu_spec = pytorch.gang_gpu_spec  # the same shape: replicaSpecs of a worker type
"""tests/integration/test_gang_jobs.py: the spec of a job of ``pods`` pods of 8 GPUs
(``GPU_SPECS``)."""

GANG_RESTARTING: tuple[tuple[str | int, ...], str, Any] | None = (
    ("replicaSpecs", 0),
    "restarts-worker-1",
    {"policy": "OnFailure", "limit": 3},
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
    that runs to its end, and the given spec fields (``JOBS``): the PyTorchTrainingJob's
    replica spec, with GenericJob's restart policy."""
    body = pytorch_job(name, [("worker", 1, "Never")], manual=False, **spec)
    body["kind"] = "GenericJob"
    for rs in body["spec"]["replicaSpecs"]:
        rs["restartPolicy"] = {"policy": rs["restartPolicy"]}
    return body
