"""The MPIJob models against the examples of its product manual, read from
the manual itself (``shared/specs/mpijob.md`` beside the repository).

``SPEC_EXAMPLES`` are the manual's YAML blocks of kind MPIJob, as written
(the Horovod block ends with ``...``, YAML's end of document); the one block
that is not YAML (its container elided as ``- ...`` with keys under it) is
named in :data:`NOT_YAML` and checked to be the only one.
``STATUS_EXAMPLES`` are the manual's status examples: the leading ``...`` (an
elision) dropped; in the tasks example the manual lists a task's replicas
under ``status``, which the shared status model calls ``replicas``, so that
example is corrected. tests/integration/test_crd_mpijob.py applies the same
documents to a real API server.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t9k_operator.api.crd import MSG_JOB_NAME
from t9k_operator.api.mpijob import (
    CRD,
    MSG_AUTH_MOUNT_PATH,
    MSG_AUTH_MOUNT_PLACE,
    MSG_MCA_KEY,
    MSG_MPI_HOME,
    MSG_NO_CONTAINER,
    MSG_POD_NAME_LENGTH,
    MSG_RESUME_ARGS_NEED_COMMAND,
    MSG_SSHD_PATH,
    MPIJobObject,
    MPIJobSpec,
    training_container,
)
from tests.unit.api.helpers import committed_crd, load, rule_messages, schema_of

ROOT = Path(__file__).resolve().parents[3]
MANUAL = ROOT.parent / "shared" / "specs" / "mpijob.md"
JOB = "mpi-example"


def yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.S)


def _parses(text: str) -> bool:
    try:
        list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return False
    return True


def manual_jobs() -> dict[str, str]:
    """The manual's blocks of kind MPIJob that are YAML, by their order in it."""
    return {
        f"manual-{i}": text
        for i, text in enumerate(yaml_blocks())
        if "kind: MPIJob" in text and _parses(text)
    }


NOT_YAML = ("#### 共享内存",)
"""Where the manual's MPIJob blocks that are not YAML are (the heading above each)."""


def _status(text: str) -> str:
    body = "\n".join(line for line in text.splitlines() if line.strip() != "...")
    doc = yaml.safe_load(body)["status"]
    for task in doc.get("tasks") or []:
        if "status" in task:
            task["replicas"] = task.pop("status")
    return yaml.safe_dump(doc)


def manual_statuses() -> dict[str, str]:
    return {
        f"manual-{i}": _status(text)
        for i, text in enumerate(yaml_blocks())
        if text.lstrip().startswith("...") and "\nstatus:" in text
    }


MANUALS_2025 = tuple(
    ROOT.parent / "shared" / "specs" / "t9k-2025" / page for page in ("mpijob.md", "mpijob-api.md")
)
"""T9k's 2025 manual of MPIJob (its guide and its API reference), beside the clone."""


def manual_2025_jobs() -> dict[str, str]:
    """The 2025 manual's whole MPIJobs as written, ``2025-<n>`` in order: its YAML blocks
    of kind MPIJob, but for those with a ``...`` line (the manual's "and so on": a
    fragment, not a job to apply)."""
    found: dict[str, str] = {}
    for page in MANUALS_2025:
        for text in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S):
            if re.search(r"^\s*\.\.\.\s*$", text, re.M) or not _parses(text):
                continue
            doc = yaml.safe_load(text)
            if isinstance(doc, dict) and doc.get("kind") == "MPIJob":
                found[f"2025-{len(found)}"] = text
    return found


SPEC_EXAMPLES_2025 = manual_2025_jobs() if all(p.exists() for p in MANUALS_2025) else {}
SPEC_EXAMPLES = manual_jobs() if MANUAL.exists() else {}
STATUS_EXAMPLES = manual_statuses() if MANUAL.exists() else {}
WORKER = {"replicas": 2, "cmd": ["./prog"], "template": {"spec": {"containers": [{}]}}}


def spec(**changes: Any) -> dict[str, Any]:
    return {"worker": WORKER, **changes}


def obj(name: str = JOB, **changes: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": spec(**changes),
    }


def test_the_manual_is_beside_the_repository() -> None:
    assert MANUAL.exists(), f"the MPIJob manual is read from {MANUAL}"


def test_every_manual_example_of_the_kind_is_taken() -> None:
    # Four MPIJob examples are YAML; the shared-memory one elides its container.
    assert len(SPEC_EXAMPLES) == 4
    blocks = [b for b in yaml_blocks() if "kind: MPIJob" in b and not _parses(b)]
    text = MANUAL.read_text()
    assert [text.rfind("\n#", 0, text.find(b)) for b in blocks] == [
        text.find(f"\n{h}") for h in NOT_YAML
    ]
    assert len(STATUS_EXAMPLES) == 3


def test_the_2025_manual_is_beside_the_repository() -> None:
    for page in MANUALS_2025:
        assert page.exists(), f"the 2025 MPIJob manual is read from {page}"


def test_every_whole_job_of_the_2025_manual_is_taken() -> None:
    # The first example, and the resources and env ones (their containers nameless);
    # the Horovod, shared-memory, debug and pause blocks elide the rest with "...".
    assert list(SPEC_EXAMPLES_2025) == ["2025-0", "2025-1", "2025-2"]


@pytest.mark.parametrize("name", sorted(SPEC_EXAMPLES_2025))
def test_each_2025_example_parses_into_the_2025_layout(name: str) -> None:
    job = MPIJobObject.from_dict(load(SPEC_EXAMPLES_2025[name]))
    assert job.name == JOB and job.spec.worker is None and job.spec.run.replicas == 4
    assert job.spec.run.program_field == "spec.mpiConfig.script"


def test_the_first_2025_example_reads_as_the_guide_says() -> None:
    run = MPIJobObject.from_dict(load(SPEC_EXAMPLES_2025["2025-0"])).spec.run
    assert run.program == ("./random_walk", "20", "40", "2")
    assert run.extra_args[:2] == ("-N", "3") and run.mca == {"btl": "^openib"}
    assert run.home == "/usr/local" and run.launcher_template is None
    assert run.worker_container == "worker"
    assert run.worker_template["spec"]["containers"][0]["image"] == (
        "t9kpublic/mpi-tutorial:2021022-2"
    )


@pytest.mark.parametrize("name", sorted(SPEC_EXAMPLES))
def test_each_manual_example_parses_as_written(name: str) -> None:
    job = MPIJobObject.from_dict(load(SPEC_EXAMPLES[name]))
    assert job.name == JOB and job.spec.worker is not None and job.spec.worker.replicas >= 1


def test_the_first_example_reads_as_the_manual_says() -> None:
    job = MPIJobObject.from_dict(load(SPEC_EXAMPLES["manual-0"]))
    s = job.spec
    assert s.worker.replicas == 5
    assert s.worker.cmd == ["./random_walk", "20", "40", "2"]
    assert s.worker.extra_mpi_args[:2] == ["-N", "3"]
    assert s.mca == {"btl": "^openib"}
    assert s.run_policy.clean_up_workers is True
    assert s.ssh.sshd_path == "/usr/sbin/sshd" and s.ssh.ssh_auth_mount_path == "/root/.ssh"
    assert s.mpi_home == "/usr/local"


def test_defaults() -> None:
    s = MPIJobSpec.model_validate({"worker": {"template": {"spec": {"containers": [{}]}}}})
    assert s.worker.replicas == 1 and s.worker.cmd is None and s.worker.extra_mpi_args == []
    assert s.mca is None and s.mpi_home is None and s.run_policy.clean_up_workers is False
    assert s.run.mca == {} and s.run.processes_per_worker is None and s.run.max_restarts is None
    assert (s.ssh.sshd_path, s.ssh.ssh_auth_mount_path) == ("/usr/sbin/sshd", "/root/.ssh")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"mpiHome": "usr/local"}, MSG_MPI_HOME),
        ({"mca": {"btl pml": "x"}}, MSG_MCA_KEY),
        ({"ssh": {"sshdPath": "sshd"}}, MSG_SSHD_PATH),
        ({"ssh": {"sshAuthMountPath": "root/.ssh"}}, MSG_AUTH_MOUNT_PATH),
        ({"ssh": {"sshAuthMountPath": "/tmp/keys"}}, MSG_AUTH_MOUNT_PLACE),
        ({"worker": {**WORKER, "template": {"spec": {"containers": []}}}}, MSG_NO_CONTAINER),
        (
            {"runMode": {"pause": {"resumeSpecs": [{"type": "worker", "args": ["-v"]}]}}},
            MSG_RESUME_ARGS_NEED_COMMAND,
        ),
    ],
)
def test_a_bad_field_is_refused_naming_it(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message[:50])):
        MPIJobObject.from_dict(obj(**changes))


def test_pod_names_must_fit() -> None:
    MPIJobObject.from_dict(obj("j" * 54))
    with pytest.raises(ValidationError, match=re.escape(MSG_POD_NAME_LENGTH[:40])):
        MPIJobObject.from_dict(obj("j" * 55))
    with pytest.raises(ValidationError, match=re.escape(MSG_JOB_NAME[:30])):
        MPIJobObject.from_dict(obj("1-a"))


def test_the_training_container_is_mpi_worker_else_the_first() -> None:
    two = {"spec": {"containers": [{"name": "side"}, {"name": "mpi-worker"}]}}
    assert training_container(two) == {"name": "mpi-worker"}
    assert training_container({"spec": {"containers": [{"name": "a"}]}}) == {"name": "a"}


def _node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    for part in path.split("."):
        schema = schema["properties"][part]
    return schema


def test_the_crd_lets_the_manuals_nameless_containers_in() -> None:
    crd = committed_crd(CRD)
    root = schema_of(crd)
    containers = _node(root, "spec.worker.template.spec.containers")
    assert containers["x-kubernetes-list-type"] == "atomic"
    assert "x-kubernetes-list-map-keys" not in containers
    assert "name" not in containers["items"].get("required", [])
    assert MSG_MPI_HOME in rule_messages(_node(root, "spec.mpiHome"))
    assert crd["spec"]["names"]["shortNames"] == ["mpij"]
    assert crd["spec"]["names"]["categories"] == ["t9k"]
