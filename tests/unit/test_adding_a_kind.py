"""docs/adding-a-kind.md says which files a new kind is: a toy kind written
into exactly those files, in a copy of the repository, passes the per-kind
unit tests the page names once the generators it names have run, and fails
them without any one of the files.

The toy is tests/toykind/'s ToyJob as a kind of this repository
(``ToyTrainingJob``, module ``toytraining``): the same API, builders and hooks,
with what every kind here gives beyond the plugin's (a scheduler's request in
``spec.scheduler``, the rendezvous environment its sample runs with locally),
and its test data, sample and docs section. The copy runs with its own
``t9k_operator`` first on the path, never the installed one; this checkout is
only read.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.kinds import KIND_NAMES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding-a-kind.md"
KINDS_DOC = ROOT / "docs" / "kinds.md"
COPIED = ("t9k_operator", "tests", "hack", "manifests", "docs", "pyproject.toml")
"""What the generators and the per-kind unit tests read of the repository."""

NAME = "toytraining"
KIND = "ToyTrainingJob"
SELECTED = (
    f"{NAME} or every_registered or cover_every or sample_of_every or samples_cover or committed"
)
"""The per-kind tests of the files the page names: the toy's own cases (their ids
name it) and the checks that every kind has its entry in each table, its CRD and
its rules in the ClusterRole; the others' cases are not the toy's business."""


# -- what the page says --------------------------------------------------------------------


def section(title: str) -> str:
    """The text of the page's section ``## title``, up to the next section."""
    text = DOC.read_text()
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert found, f"{DOC.name} has no section '## {title}'"
    return found.group(1)


def files_you_write() -> list[str]:
    """The numbered list of the section: each item's path (``<kind>`` unfilled)."""
    return re.findall(r"^\d+\. `([^`]+)`", section("The files you write"), re.M)


def generators() -> list[list[str]]:
    """The commands of the section's ``sh`` block."""
    block = re.search(r"```sh\n(.*?)```", section("The files you write"), re.S)
    assert block, "no generator commands in 'The files you write'"
    return [line.split() for line in block.group(1).splitlines() if line.strip()]


def per_kind_tests() -> list[str]:
    """The section's bulleted test files."""
    return re.findall(r"^- `(tests/[^`]+\.py)`$", section("The files you write"), re.M)


# -- the toy, by hand ---------------------------------------------------------------------

API = '''"""The ToyTrainingJob kind's API: identical workers under the shared run policy."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.crd import (
    JOB_NAME_RULE,
    CrdInfo,
    JobObject,
    last_pod_name_fits,
    pod_name_length_rule,
    worker_pod_name_fits_cel,
)
from t9k_operator.api.managed_by import MANAGED_BY_IMMUTABLE_RULE, ManagedBy, managed_by_field
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import MAX_REPLICAS
from t9k_operator.api.specs import RunPolicy, SchedulerPolicy, run_policy_field, scheduler_field
from t9k_operator.api.status import JobStatus
from t9k_operator.api.template import PodTemplate, pod_template_field

WORKER = "worker"
MSG_POD_NAME_LENGTH = (
    "metadata.name is too long: every pod name <name>-worker-<index> must fit in 63 characters"
)


class WorkerSpec(T9kModel):
    """The workers: how many, and their pod template."""

    replicas: int = Field(default=1, ge=0, le=MAX_REPLICAS, description="Number of workers.")
    template: PodTemplate = pod_template_field("workers")


class ToyJobSpec(T9kModel):
    """Desired state of a ToyTrainingJob."""

    worker: WorkerSpec = Field(description="The workers; the job succeeds with worker-0.")
    run_policy: RunPolicy = run_policy_field()
    managed_by: ManagedBy | None = managed_by_field()
    scheduler: SchedulerPolicy | None = scheduler_field()


class ToyJobStatus(JobStatus):
    """Observed state of a ToyTrainingJob: the engine's."""


POD_NAME_LENGTH_RULE = pod_name_length_rule(worker_pod_name_fits_cel(WORKER), MSG_POD_NAME_LENGTH)


class ToyJobObject(JobObject[ToyJobSpec, ToyJobStatus]):
    """A whole ToyTrainingJob."""

    rules: ClassVar[tuple[Rule[Any], ...]] = (
        JOB_NAME_RULE,
        POD_NAME_LENGTH_RULE,
        MANAGED_BY_IMMUTABLE_RULE,
    )

    def pod_names_fit(self) -> bool:
        return last_pod_name_fits(self.name, WORKER, self.spec.worker.replicas)


CRD = CrdInfo(
    group="batch.tensorstack.dev",
    version="v1beta1",
    kind="ToyTrainingJob",
    plural="toytrainingjobs",
    singular="toytrainingjob",
    short_names=("toytj",),
    categories=("t9k",),
    spec_model=ToyJobSpec,
    status_model=ToyJobStatus,
    description="ToyTrainingJob runs identical workers.",
    root_rules=ToyJobObject.rules,
)
'''

BUILDERS = '''"""The ToyTrainingJob's children, pure: a worker's pod from the job's template,
with the rendezvous at worker-0, and the job's headless Service."""

from __future__ import annotations

from t9k_operator.api.toytraining import WORKER, ToyJobObject
from t9k_operator.builders.common import (
    NORMAL,
    KindFacts,
    PodMode,
    headless_service,
    pod_name,
    replica_pod,
)
from t9k_operator.objects import Obj

FACTS = KindFacts(training_containers=("toy",), debug_command=("sleep", "inf"))
PORT = 23456


def build_pod(job: ToyJobObject, index: int, mode: PodMode = NORMAL) -> Obj:
    """Worker ``index``'s pod: its template, with the operator's names and labels."""
    env = {
        "MASTER_ADDR": f"{pod_name(job.name, WORKER, 0)}.{job.name}",
        "MASTER_PORT": str(PORT),
        "WORLD_SIZE": str(job.spec.worker.replicas),
        "RANK": str(index),
    }
    return replica_pod(
        job,
        job.spec.worker.template,
        WORKER,
        index,
        training_names=FACTS.training_containers,
        mode=mode,
        env=env,
    )


def build_service(job: ToyJobObject) -> Obj:
    """The headless Service: the workers' names, and the rendezvous port."""
    return headless_service(job, [("rendezvous", PORT)])
'''

KIND_CLASS = '''"""The ToyTrainingJob kind's hooks: one role, worker, whose worker-0
decides the job."""

from __future__ import annotations

from t9k_operator.api.toytraining import CRD, WORKER, ToyJobObject
from t9k_operator.builders import toytraining as builders
from t9k_operator.kinds import flags
from t9k_operator.kinds.asks import hang_policy
from t9k_operator.kinds.contract import KindBase, PodMode, Replicas, Services, job_view
from t9k_operator.kinds.flags import JobRequest
from t9k_operator.kinds.t9k import run_policy_view, scheduling_request, succeeded_with
from t9k_operator.kinds.view import JobView, Outcome, Role, asks_of
from t9k_operator.objects import Obj


class ToyKind(KindBase[ToyJobObject], crd=CRD, model=ToyJobObject, facts=builders.FACTS):
    cli_name = "toytrain"
    pod_templates: tuple[str, ...] = ("spec.worker.template",)

    def view(self, job: ToyJobObject) -> JobView:
        worker, policy = job.spec.worker, job.spec.run_policy
        error = None
        if not (worker.template.get("spec") or {}).get("containers"):
            error = "spec.worker.template.spec.containers is empty: give the worker a container"
        asks = asks_of(
            scheduling_request(job.spec.scheduler, worker.replicas),
            hang_policy(policy.progress),
        )
        role = Role(WORKER, worker.replicas, "Never")
        return job_view(
            CRD.kind, job.metadata, (role,), error, asks=asks, **run_policy_view(policy, None)
        )

    def outcome(self, job: JobView, replicas: Replicas) -> Outcome | None:
        return succeeded_with(replicas.get(self.deciding_replica(job)))

    def deciding_replica(self, job: JobView) -> tuple[str, int]:
        return (WORKER, 0)

    def build_pod(
        self, job: ToyJobObject, type_: str, index: int, mode: PodMode, svc: Services
    ) -> Obj:
        return builders.build_pod(job, index, mode)

    def extras(self, job: ToyJobObject) -> list[Obj]:
        return [builders.build_service(job)]

    def from_flags(self, request: JobRequest) -> Obj:
        """``t9k create toytrain``: workers running the command."""
        one = flags.container(self.training_containers[0], request, flags.command(request))
        return {"worker": {"replicas": request.workers, "template": flags.template(one, request)}}
'''

TEST_DATA = '''"""ToyTrainingJob's test data: its entry in each per-kind table of the tests."""

from __future__ import annotations

from typing import Any

import yaml

from t9k_operator.api import toytraining
from t9k_operator.kinds.contract import JobKind
from t9k_operator.kinds.toytraining import ToyKind
from t9k_operator.kinds.view import Role
from tests.kinds.common import (
    LONG,
    T9K_COLUMNS,
    CrdCase,
    HooksCase,
    ModelCase,
    Notes,
    RuleCase,
    fuzz_template,
    gpu_template,
    t9k_scheduler,
    template,
    wire_job,
    worker_templates,
)

KIND = "ToyTrainingJob"
SPEC = {"worker": {"replicas": 2, "template": template("toy")}}
JOB = "toy"
EXAMPLE = yaml.safe_dump({"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": KIND,
                          "metadata": {"name": JOB}, "spec": SPEC})

SAMPLE = "toytraining-basic.yaml"
LOCAL_PROCESSES = ["worker-0", "worker-1"]
API_MODELS = ModelCase(
    toytraining.CRD,
    toytraining.ToyJobObject,
    toytraining.ToyJobStatus,
    {"basic": EXAMPLE},
    {"running": yaml.safe_dump({"phase": "Running"})},
    JOB,
    lambda spec: [spec["worker"]["template"]],
)
RULES = [
    RuleCase(
        toytraining.POD_NAME_LENGTH_RULE,
        toytraining.ToyJobObject,
        wire_job(KIND, {"worker": {"replicas": 100, "template": template("toy")}}, LONG[:53]),
        wire_job(KIND, {"worker": {"replicas": 101, "template": template("toy")}}, LONG[:53]),
    )
]
RECONCILED: tuple[JobKind[Any], dict[str, Any], list[str]] = (
    ToyKind(),
    {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": KIND, "spec": SPEC},
    ["j-worker-0", "j-worker-1"],
)
HOOKS = HooksCase(
    spec=SPEC,
    roles=(Role("worker", 2, "Never"),),
    decides=("worker", 0),
    bad=(("worker", "template", "spec", "containers"), [], "spec.worker.template.spec.containers"),
    defaults={"backoff_limit": toytraining.RunPolicy().backoff_limit},
    run_mode=False,
    tensorboard=False,
    last_template=(("worker", "template"), "spec.worker.template"),
)
NEVER_RESTARTS = False
KUEUE_POD_SETS = {"worker": 2}
GANG_MIN_MEMBER = 2


def crd_case() -> CrdCase:
    return CrdCase(
        crd=toytraining.CRD,
        job=JOB,
        example=EXAMPLE,
        examples={"basic": EXAMPLE},
        invalid={},
        columns=T9K_COLUMNS,
        status={"phase": "Running"},
        row=[JOB, "Running"],
    )


FUZZ_BASE_SPEC: dict[str, Any] = {
    "worker": {"replicas": 2, "template": fuzz_template("toy", "toy:1")}
}
fuzz_templates = worker_templates
FUZZ_TEMPLATE_PATH = ("spec.worker.template", "worker.template")
FUZZ_OWN_QUANTITY_SPOTS: list[tuple[str, str]] = []
FUZZ_RESUMES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []


def gang_gpu_spec(pods: int, notes: Notes, queue: str | None, priority: int | None) -> Any:
    spec: dict[str, Any] = {"worker": {"replicas": pods, "template": gpu_template("toy", notes)}}
    t9k_scheduler(spec, queue, priority)
    return spec


GANG_RESTARTING = None


def schema_template(spec: dict[str, Any]) -> Any:
    return spec["worker"]["template"]


SCHEMA_EXPLAIN = "spec.worker.template.spec.containers.command"
'''

SAMPLE = """apiVersion: batch.tensorstack.dev/v1beta1
kind: ToyTrainingJob
metadata:
  name: toy
spec:
  worker:
    replicas: 2
    template:
      spec:
        containers:
        - name: toy
          image: python:3.11
          command: ["python", "train.py"]
"""

DOCS_SECTION = """
## ToyTrainingJob (`toytj`)

- Identical workers; worker-0's success is the job's.
"""


def write(text: str) -> Callable[[Path], None]:
    """A new file of ``text``."""

    def writer(path: Path) -> None:
        path.write_text(text)

    return writer


def add_to_the_registry(path: Path) -> None:
    """The toy's line, last in ``KINDS`` (and its import, just before)."""
    text = path.read_text()
    start = text.index("\nKINDS: tuple[JobKind[Any], ...] = (\n")
    end = text.index("\n)\n", start)
    path.write_text(
        f"{text[:start]}\nfrom t9k_operator.kinds.{NAME} import ToyKind\n"
        f"{text[start:end]}\n    ToyKind(),{text[end:]}"
    )


def add_a_section(path: Path) -> None:
    path.write_text(path.read_text() + DOCS_SECTION)


TOY: dict[str, Callable[[Path], None]] = {
    "t9k_operator/api/<kind>.py": write(API),
    "t9k_operator/builders/<kind>.py": write(BUILDERS),
    "t9k_operator/kinds/<kind>.py": write(KIND_CLASS),
    "t9k_operator/kinds/registry.py": add_to_the_registry,
    "tests/kinds/<kind>.py": write(TEST_DATA),
    "manifests/samples/<kind>-basic.yaml": write(SAMPLE),
    "docs/kinds.md": add_a_section,
}
"""How the toy writes each file a kind may need, by the page's name for it."""


# -- following the page in a copy ----------------------------------------------------------


def copy_of_the_repository(where: Path) -> Path:
    """A copy of what the generators and the tests read, at ``where/repo``, with the
    specs beside it as beside this checkout (the manuals the model tests read)."""
    repo = where / "repo"
    repo.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".mypy_cache")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(source, repo / name)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (where / "shared").symlink_to(shared)
    return repo


def write_the_toy(repo: Path, files: list[str]) -> None:
    for file in files:
        TOY[file](repo / file.replace("<kind>", NAME))


def follow(repo: Path, *pytest_args: str) -> subprocess.CompletedProcess[str]:
    """The page's generators, then its per-kind tests (those :data:`SELECTED`), in
    ``repo`` with its own code first on the path; the first that fails ends it."""
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    for command in generators():
        assert command[0] == "python", command
        done = subprocess.run(
            [sys.executable, *command[1:]], cwd=repo, env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            return done
    tests = [*per_kind_tests(), "-x", "-n", "0", "-k", SELECTED, *pytest_args]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_page_lists_the_files_generators_and_tests_of_a_new_kind() -> None:
    files = files_you_write()
    assert files, "'The files you write' lists no file"
    assert len(files) == len(set(files))
    unknown = [f for f in files if f not in TOY]
    assert unknown == [], f"{DOC.name} names files a new kind does not write: {unknown}"
    assert generators() == [
        ["python", "-m", "hack.generate.crds"],
        ["python", "-m", "hack.generate.rbac"],
    ]
    tests = per_kind_tests()
    assert tests and all((ROOT / test).is_file() for test in tests), tests
    assert "tests/unit/test_adding_a_kind.py" in tests


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_every_registered_kind_has_its_section_in_docs_kinds_md(kind: str) -> None:
    """What the operator does for each kind is told in docs/kinds.md."""
    headings = re.findall(r"^## (\S+)", KINDS_DOC.read_text(), re.M)
    assert kind in headings, f"docs/kinds.md has no section '## {kind}'"


def test_a_toy_kind_of_the_files_the_page_lists_passes_and_needs_each(tmp_path: Path) -> None:
    files = files_you_write()
    assert all(f in TOY for f in files), "see the test of the page's list"
    repo = copy_of_the_repository(tmp_path / "all")
    write_the_toy(repo, files)
    done = follow(repo, "-rA")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    passed = re.findall(r"^PASSED (\S+?)::(.*)$", done.stdout, re.M)
    toy_cases = {file for file, test in passed if KIND in test or NAME in test}
    assert toy_cases == set(per_kind_tests()), "a per-kind test file ran no case of the toy"
    for left_out in files:
        repo = copy_of_the_repository(tmp_path / f"without-{len(os.listdir(tmp_path))}")
        write_the_toy(repo, [f for f in files if f != left_out])
        done = follow(repo)
        assert done.returncode != 0, f"the toy kind passes without {left_out}: {DOC.name} names it"
