"""MPIJob's test data: its entry in each per-kind table of the tests.

Each name below is read by one test module (named in its docstring), through
:func:`tests.kinds.kind_table`; the values are written out here, never computed by
the code under test.
"""

from __future__ import annotations

from typing import Any

from t9k_operator.api import mpijob, mpijob_replicas
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.mpijob import MPIJobKind
from t9k_operator.kinds.view import Role
from tests.integration import test_crd_mpijob as crd_tests
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
    t9k_scheduler,
    template,
    wire_job,
    worker_templates,
)
from tests.unit.api import test_mpijob_models as model_tests

KIND = "MPIJob"
"""The kind's name, as its CRD declares it: the key of its entry in every table."""

# -- the unit tests ----------------------------------------------------------------------

SAMPLE = "mpijob-basic.yaml"
"""Its sample, a file of manifests/samples/."""

# The launcher's mpirun runs here, one rank per worker (5), every line
# under the launcher's label.
LOCAL_PROCESSES = ["launcher"] * 5
"""tests/unit/test_local_run.py: the processes its sample runs locally (``EXPECTED``)."""

MORE_SAMPLES = {"mpijob-2025.yaml": ["launcher"] * 2}  # its 2 workers' ranks, here
"""tests/unit/test_local_run.py: its further samples (the 2025 layout's) and the processes
each runs locally (``EXPECTED``)."""

API_MODELS = ModelCase(
    mpijob.CRD,
    mpijob.MPIJobObject,
    mpijob.MPIJobStatus,
    model_tests.SPEC_EXAMPLES,
    model_tests.STATUS_EXAMPLES,
    model_tests.JOB,
    lambda spec: [spec["worker"]["template"]],
)
"""tests/unit/api/test_job_objects.py: its API model and examples (``KINDS``)."""

RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    MPIJobKind(),
    {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "spec": {
            "worker": {"replicas": 2, "cmd": ["./prog"], "template": template("mpi-worker")},
        },
    },
    ["j-launcher", "j-worker-0", "j-worker-1"],
)
"""tests/unit/reconcilers/test_job_reconciler.py: its hooks, a valid job, the pods a
fresh job gets (``JOBS``)."""

HOOKS = HooksCase(
    spec={"worker": {"replicas": 2, "cmd": ["./prog"], "template": template("mpi-worker")}},
    roles=(Role("launcher", 1, "Never"), Role("worker", 2, "Never")),
    decides=("launcher", 0),
    bad=(("mpiHome",), "usr/local", "spec.mpiHome"),
    defaults={"backoff_limit": 0, "cleanup_policy": "None"},
    tensorboard=False,
    last_template=(("worker", "template"), "spec.worker.template"),
)
"""tests/unit/reconcilers/test_kinds.py: its job and what its hooks read of it (``CASES``)."""

NEVER_RESTARTS = True
"""tests/unit/reconcilers/test_kinds.py: whether it restarts no pod (``NEVER_RESTART``)."""

KUEUE_POD_SETS = {"launcher": 1, "worker": 2}
"""tests/unit/reconcilers/test_kueue_reconciler.py: its Workload's pod sets, name -> count
(``POD_SETS``)."""

GANG_MIN_MEMBER = 3  # the launcher and 2 workers
"""tests/unit/reconcilers/test_gang_reconciler.py: its PodGroup's minMember (``MIN_MEMBER``)."""

MPIJOB = {"worker": {"replicas": 2, "cmd": ["./prog"], "template": WORKER_TEMPLATE}}
"""The spec the rules' examples change (``RULES``)."""

CONTAINER = {"spec": {"containers": [{"name": "worker", "image": "mpi"}]}}
WORKER_ENTRY = {"type": "worker", "replicas": 2, "template": CONTAINER}
MPIJOB_2025 = {"mpiConfig": {"script": ["./prog"]}, "replicaSpecs": [WORKER_ENTRY]}
"""The 2025 layout's spec the rules' examples change (``RULES``)."""
LAUNCHER_ENTRY = {"type": "launcher", "template": {}}

RULES: list[RuleCase] = [
    RuleCase(
        mpijob.MIXED_LAYOUTS_RULE,
        mpijob.MPIJobSpec,
        MPIJOB_2025,
        merged(MPIJOB_2025, mca={"btl": "^openib"}),
    ),
    RuleCase(
        mpijob.MIXED_LAYOUTS_RULE,
        mpijob.MPIJobSpec,
        MPIJOB,
        merged(MPIJOB, mpiConfig={"script": ["./prog"]}),
    ),
    RuleCase(
        mpijob.NO_LAYOUT_RULE,
        mpijob.MPIJobSpec,
        merged(MPIJOB_2025, mpiConfig=None),
        {"ssh": {"sshdPath": "/usr/sbin/sshd"}},
    ),
    RuleCase(
        mpijob_replicas.MCA_KEYS_RULE,
        mpijob_replicas.MPIConfig,
        {"mca": {"btl": "^openib"}},
        {"mca": {"btl pml": "x"}},
        node=at_key("mca"),
    ),
    RuleCase(
        mpijob_replicas.HOME_RULE,
        mpijob_replicas.MPIConfig,
        {"home": "/usr/local"},
        {"home": "usr/local"},
        node=at_key("home"),
    ),
    RuleCase(
        mpijob_replicas.WORKER_ENTRY_RULE,
        mpijob.MPIJobSpec,
        merged(MPIJOB_2025, replicaSpecs=[WORKER_ENTRY, LAUNCHER_ENTRY]),
        merged(MPIJOB_2025, replicaSpecs=[LAUNCHER_ENTRY]),
        node=at_key("replicaSpecs"),
    ),
    RuleCase(
        mpijob_replicas.WORKER_TEMPLATE_RULE,
        mpijob_replicas.MPIReplicaSpec,
        WORKER_ENTRY,
        {"type": "worker", "template": {}},
    ),
    RuleCase(
        mpijob_replicas.LAUNCHER_TEMPLATE_RULE,
        mpijob_replicas.MPIReplicaSpec,
        {"type": "launcher", "template": {"spec": {"containers": [{"name": "launcher"}]}}},
        {"type": "launcher", "template": {"metadata": {"labels": {"a": "b"}}}},
    ),
    RuleCase(
        mpijob_replicas.LAUNCHER_REPLICAS_RULE,
        mpijob_replicas.MPIReplicaSpec,
        {"type": "launcher", "replicas": 1, "template": {}},
        {"type": "launcher", "replicas": 2, "template": {}},
    ),
    RuleCase(
        mpijob_replicas.NAMELESS_RULE,
        mpijob_replicas.MPIReplicaSpec,
        {"type": "worker", "template": {"spec": {"containers": [{"image": "a"}]}}},
        {"type": "worker", "template": {"spec": {"containers": [{"image": "a"}, {"image": "b"}]}}},
    ),
    RuleCase(
        mpijob.POD_NAME_LENGTH_RULE,
        mpijob.MPIJobObject,
        wire_job("MPIJob", MPIJOB_2025, LONG[:54]),
        wire_job("MPIJob", MPIJOB_2025, LONG[:55]),
    ),
    RuleCase(
        mpijob.AUTH_MOUNT_PATH_RULE,
        mpijob.SSHConfig,
        {"sshAuthMountPath": "/home/user/.ssh"},
        {"sshAuthMountPath": "home/user/.ssh"},
        node=at_key("sshAuthMountPath"),
    ),
    *(
        RuleCase(
            mpijob.AUTH_PLACE_RULE,
            mpijob.SSHConfig,
            {"sshAuthMountPath": "/home/user/.ssh/"},
            {"sshAuthMountPath": bad},
            node=at_key("sshAuthMountPath"),
        )
        for bad in ("/", "/home//.ssh", "/root/..", "/tmp/ssh", "/t9k")
    ),
    RuleCase(
        mpijob.SSHD_PATH_RULE,
        mpijob.SSHConfig,
        {"sshdPath": "/usr/bin/sshd"},
        {"sshdPath": "sshd"},
        node=at_key("sshdPath"),
    ),
    RuleCase(
        mpijob.MPI_HOME_RULE,
        mpijob.MPIJobSpec,
        merged(MPIJOB, mpiHome="/usr/local"),
        merged(MPIJOB, mpiHome="usr/local"),
        node=at_key("mpiHome"),
    ),
    *(
        RuleCase(
            mpijob.MCA_KEYS_RULE,
            mpijob.MPIJobSpec,
            merged(MPIJOB, mca={"btl": "^openib", "plm_rsh_args": "-p 2222"}),
            merged(MPIJOB, mca={bad: "x"}),
            node=at_key("mca"),
        )
        for bad in ("", "btl pml", "--mca", "btl;rm")
    ),
    RuleCase(
        mpijob.NAMELESS_CONTAINER_RULE,
        mpijob.WorkerConfig,
        {"template": {"spec": {"containers": [{"image": "a"}]}}},
        {"template": {"spec": {"containers": [{"name": "mpi-worker"}, {"image": "b"}]}}},
        node=lambda w: w["template"]["spec"]["containers"],
    ),
    RuleCase(
        mpijob.POD_NAME_LENGTH_RULE,
        mpijob.MPIJobObject,
        wire_job("MPIJob", MPIJOB, LONG[:54]),
        wire_job("MPIJob", MPIJOB, LONG[:55]),
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
        example=model_tests.SPEC_EXAMPLES["manual-0"],
        examples=model_tests.SPEC_EXAMPLES,  # the manual's, as written
        invalid=crd_tests.INVALID,
        columns=T9K_COLUMNS,
        status=crd_status(model_tests.STATUS_EXAMPLES, restartCount=0, readyReplicas=3, replicas=3),
        row=[crd_tests.JOB, "Failed", "-", "3", "3", "0"],
        paused=crd_tests.PAUSED,
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "ssh": {"sshAuthMountPath": "/root/.ssh", "sshdPath": "/usr/sbin/sshd"},
    "mca": {"btl": "^openib"},
    "mpiHome": "/usr/local",
    "worker": {
        "replicas": 2,
        "extraMPIArgs": ["-N", "1"],
        "cmd": ["python", "train.py"],
        "template": fuzz_template("mpi-worker", "mpi:4.1"),
    },
    "runPolicy": {"cleanUpWorkers": False},  # pods stay to be compared
}
"""tests/integration/test_fuzz_specs.py: the spec of a valid job, which the fuzzer
enriches and mutates (``BASE_SPECS``)."""

fuzz_templates = (
    worker_templates  # its launcher is built from the workers' template, not a copy of it
)
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
        "mpij",
        {},
        [
            {"type": "launcher", "command": ["bash", "-c", "resume"], "args": ["--x"]},
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
        "worker": {
            "replicas": pods - 1,  # and the launcher, of the same template (8 GPUs too)
            "cmd": ["./prog"],
            "template": gpu_template("mpi-worker", notes),
        },
    }
    t9k_scheduler(spec, queue, priority)
    return spec


GANG_RESTARTING: tuple[tuple[str | int, ...], str, Any] | None = None  # neither does it
"""tests/integration/test_gang_jobs.py: where its restart policy goes, the replica that
fails, the policy that restarts it; None: it never restarts a pod (``RESTARTING``)."""


def schema_template(spec: dict[str, Any]) -> dict[str, Any]:
    """tests/integration/test_pod_template_schema.py: one pod template of its sample
    (``TEMPLATES``)."""
    return spec["worker"]["template"]


SCHEMA_EXPLAIN: str | None = "spec.worker.template.spec.containers.command"
"""tests/integration/test_pod_template_schema.py: the path kubectl explain takes to a
container's command; None: none (``EXPLAIN``)."""

SSH_LAUNCH_TEST = "test_mpirun_all_reduces_across_two_workers_over_ssh"
"""tests/integration/test_ssh_launch.py (or test_mpijob_launch.py): the test that trains
through its ssh launch path (``LAUNCHED``)."""
