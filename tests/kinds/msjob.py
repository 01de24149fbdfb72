"""MSJob's test data: its entry in each per-kind table of the tests.

Each name below is read by one test module (named in its docstring), through
:func:`tests.kinds.kind_table`; the values are written out here, never computed by
the code under test.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from t9k_operator.api import msjob
from t9k_operator.builders import scheduling
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.msjob import MSJobKind
from t9k_operator.kinds.view import Role
from tests.integration import test_crd_msjob as crd_tests
from tests.kinds.common import (
    LONG,
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
    ms_replica_specs_templates,
    template,
    wire_job,
)
from tests.unit.api import test_msjob_models as model_tests

KIND = "MSJob"
"""The kind's name, as its CRD declares it: the key of its entry in every table."""

# -- the unit tests ----------------------------------------------------------------------

SAMPLE = "msjob-basic.yaml"
"""Its sample, a file of manifests/samples/."""

LOCAL_PROCESSES = ["scheduler-0", "worker-0", "worker-1"]
"""tests/unit/test_local_run.py: the processes its sample runs locally (``EXPECTED``)."""

API_MODELS = ModelCase(
    msjob.CRD,
    msjob.MSJobObject,
    msjob.MSJobStatus,
    model_tests.SPEC_EXAMPLES,
    model_tests.STATUS_EXAMPLES,
    model_tests.JOB,
    lambda spec: [rs["template"] for rs in spec["msReplicaSpecs"].values()],
)
"""tests/unit/api/test_job_objects.py: its API model and examples (``KINDS``)."""

RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    MSJobKind(),
    {
        "apiVersion": "mindspore.gitee.com/v1",
        "kind": "MSJob",
        "spec": {
            "msReplicaSpecs": {
                "Scheduler": {"replicas": 1, "template": template("mindspore")},
                "Worker": {"replicas": 2, "template": template("mindspore")},
            }
        },
    },
    ["j-scheduler-0", "j-worker-0", "j-worker-1"],
)
"""tests/unit/reconcilers/test_job_reconciler.py: its hooks, a valid job, the pods a
fresh job gets (``JOBS``)."""

HOOKS = HooksCase(
    spec={
        "msReplicaSpecs": {
            "Scheduler": {"replicas": 1, "template": template("mindspore")},
            "Worker": {"replicas": 2, "template": template("mindspore")},
        }
    },
    roles=(Role("Scheduler", 1, "Never"), Role("Worker", 2, "Never")),
    decides=("Worker", 0),
    bad=(
        ("msReplicaSpecs", "Worker", "restartPolicy"),
        "Sometimes",
        "spec.msReplicaSpecs.Worker.restartPolicy",
    ),
    defaults={
        "backoff_limit": msjob.MSRunPolicy().backoff_limit,
        "cleanup_policy": "Unfinished",  # cleanPodPolicy Running, as in ms-operator
    },
    run_mode=False,
    tensorboard=False,
    last_template=(
        ("msReplicaSpecs", "Worker", "template"),
        "spec.msReplicaSpecs[Worker].template",
    ),
)
"""tests/unit/reconcilers/test_kinds.py: its job and what its hooks read of it (``CASES``)."""

NEVER_RESTARTS = False
"""tests/unit/reconcilers/test_kinds.py: whether it restarts no pod (``NEVER_RESTART``)."""

KUEUE_POD_SETS = {"scheduler": 1, "worker": 2}
"""tests/unit/reconcilers/test_kueue_reconciler.py: its Workload's pod sets, name -> count
(``POD_SETS``)."""

GANG_MIN_MEMBER = 3
"""tests/unit/reconcilers/test_gang_reconciler.py: its PodGroup's minMember (``MIN_MEMBER``)."""

MS_TEMPLATE = {"spec": {"containers": [{"name": "mindspore", "image": "train"}]}}
MSJOB = {"msReplicaSpecs": {"Worker": {"replicas": 2, "template": MS_TEMPLATE}}}
"""The spec the rules' examples change (``RULES``)."""

RULES: list[RuleCase] = [
    RuleCase(
        msjob.MINDSPORE_CONTAINER_RULE,
        msjob.MSReplicaSpec,
        {"template": MS_TEMPLATE},
        {"template": WORKER_TEMPLATE},
        node=at_key("template"),
    ),
    RuleCase(
        msjob.UNKNOWN_ROLE_RULE,
        msjob.MSJobSpec,
        MSJOB,
        {"msReplicaSpecs": {"Chief": {"template": MS_TEMPLATE}}},
        node=at_key("msReplicaSpecs"),
    ),
    RuleCase(
        msjob.ONE_SCHEDULER_RULE,
        msjob.MSJobSpec,
        {"msReplicaSpecs": {"Scheduler": {"template": MS_TEMPLATE}}},
        {"msReplicaSpecs": {"Scheduler": {"replicas": 2, "template": MS_TEMPLATE}}},
        node=at_key("msReplicaSpecs"),
    ),
    RuleCase(
        msjob.TOO_MANY_REPLICAS_RULE,
        msjob.MSJobSpec,
        {"msReplicaSpecs": {"Worker": {"replicas": 5000, "template": MS_TEMPLATE}}},
        {
            "msReplicaSpecs": {
                "Worker": {"replicas": 5000, "template": MS_TEMPLATE},
                "PS": {"template": MS_TEMPLATE},
            }
        },
        node=at_key("msReplicaSpecs"),
    ),
    RuleCase(
        msjob.POD_NAME_LENGTH_RULE,
        msjob.MSJobObject,
        wire_job("MSJob", MSJOB, LONG[:54]),
        wire_job(
            "MSJob",
            merged(MSJOB, msReplicaSpecs={"Worker": {"replicas": 11, "template": MS_TEMPLATE}}),
            LONG[:54],
        ),
    ),
]
"""tests/unit/api/test_rules.py: a passing and a failing example of each rule its API
registers, of the model the rule is on, in the wire shape (``CASES``)."""


# -- the integration tests --------------------------------------------------------------


def _crd_invalid() -> dict[str, tuple[str, list[str]]]:
    """The invalid specs of its model's tests, as jobs, each with the fragments the
    API server's refusal names."""
    out = {}
    for case, (changes, name, fragments) in model_tests.INVALID_SPECS.items():
        text = yaml.safe_dump(crd_tests.job_with(copy.deepcopy(changes), name))
        out[case] = (text, crd_tests.SERVER_FRAGMENTS.get(case, fragments))
    return out


def crd_case() -> CrdCase:
    """tests/integration/test_crd_kinds.py: its CRD's case (``CASES``)."""
    return CrdCase(
        crd=crd_tests.CRD,
        job=crd_tests.JOB,
        example=model_tests.SPEC_EXAMPLES["data-parallel"],
        examples=model_tests.SPEC_EXAMPLES,
        invalid=_crd_invalid(),
        columns=["NAME", "STATE", "REASON", "PROGRESS", "ETA", "AGE"],
        status=crd_status(model_tests.STATUS_EXAMPLES),
        row=[crd_tests.JOB, "Running"],  # no t9kConditions here: REASON is empty
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 2},
    "msReplicaSpecs": {
        "Scheduler": {
            "replicas": 1,
            "restartPolicy": "Never",
            "template": fuzz_template("mindspore", "mindspore:2.3"),
        },
        "Worker": {
            "replicas": 2,
            "restartPolicy": "OnFailure",
            "template": fuzz_template("mindspore", "mindspore:2.3"),
        },
    },
}
"""tests/integration/test_fuzz_specs.py: the spec of a valid job, which the fuzzer
enriches and mutates (``BASE_SPECS``)."""

fuzz_templates = ms_replica_specs_templates
"""tests/integration/test_fuzz_specs.py: the (replica type, pod template) pairs of a
(mutated) spec, as found (``TEMPLATES``)."""

FUZZ_TEMPLATE_PATH = ("spec.msReplicaSpecs.Worker.template", "msReplicaSpecs.Worker.template")
"""tests/integration/test_fuzz_specs.py: the path of a pod template in the spec, as
the API server names it and as a dotted path into the spec (``TEMPLATE_PATHS``)."""

FUZZ_OWN_QUANTITY_SPOTS: list[tuple[str, str]] = [
    (
        "spec.runPolicy.schedulingPolicy.minResources.cpu",
        "runPolicy.schedulingPolicy.minResources.cpu",
    )
]
"""tests/integration/test_fuzz_specs.py: its own quantities, as the API server names
each and its dotted path in the spec (``OWN_QUANTITY_SPOTS``)."""

FUZZ_RESUMES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
"""tests/integration/test_fuzz_specs.py: jobs (a name, spec changes, resumeSpecs),
every item of which must be on the pods of its type after a pause ends (``RESUMES``)."""


def gang_gpu_spec(
    pods: int, notes: Notes, queue: str | None, priority: int | None
) -> dict[str, Any]:
    """tests/integration/test_gang_jobs.py: the spec of a job of ``pods`` pods of 8 GPUs
    (their templates annotated ``notes``), asking for ``queue`` and ``priority`` (None:
    none) its way (``GPU_SPECS``)."""
    role = {"replicas": 1, "template": gpu_template("mindspore", notes)}
    workers = {**role, "replicas": pods - 1}  # and the scheduler
    spec: dict[str, Any] = {"msReplicaSpecs": {"Scheduler": role, "Worker": workers}}
    policy: dict[str, Any] = {}  # Kubeflow's: in runPolicy.schedulingPolicy
    if queue:
        policy["queue"] = queue
    if priority is not None:
        policy["priorityClass"] = scheduling.priority_class(priority)
    if policy:
        spec["runPolicy"] = {"schedulingPolicy": policy}
    return spec


GANG_RESTARTING: tuple[tuple[str | int, ...], str, Any] | None = (
    ("msReplicaSpecs", "Worker"),
    "restarts-worker-1",
    "OnFailure",
)
"""tests/integration/test_gang_jobs.py: where its restart policy goes, the replica that
fails, the policy that restarts it; None: it never restarts a pod (``RESTARTING``)."""


def schema_template(spec: dict[str, Any]) -> dict[str, Any]:
    """tests/integration/test_pod_template_schema.py: one pod template of its sample
    (``TEMPLATES``)."""
    return next(iter(spec["msReplicaSpecs"].values()))["template"]


# kubectl explain cannot step into a map's values, so its templates (under
# the map msReplicaSpecs, as in the MindSpore operator's CRD) have none.
SCHEMA_EXPLAIN: str | None = None
"""tests/integration/test_pod_template_schema.py: the path kubectl explain takes to a
container's command; None: none (``EXPLAIN``)."""
