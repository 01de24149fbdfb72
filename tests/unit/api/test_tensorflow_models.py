"""TensorFlowTrainingJob's model: the manual's examples parse as written, the
defaults are the model's, and the four task types are the only ones."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t9k_operator.api import tensorflow as tf
from tests.unit.api.helpers import ROOT

MANUAL = Path(ROOT).parent / "shared" / "specs" / "tensorflowtrainingjob.md"
EXAMPLES = (
    "basic",
    "resources",
    "shared-memory",
    "env",
    "scheduler",
    "tensorboard",
    "debug-1",
    "debug-2",
    "pause-1",
    "pause-2",
)
"""The manual's examples in its order, named by what each shows (``resources``
and ``env`` show one field of a nameless container, as DOC_FRAGMENTS says)."""


def manual_examples() -> dict[str, dict[str, Any]]:
    """Every TensorFlowTrainingJob of the manual, named as :data:`EXAMPLES`.

    A block that is a whole job is taken as written. The manual's other blocks
    are excerpts: ``...`` stands for the rest of the job (a line of its own) or
    for the rest of a container (an item ``- ...``). An excerpt's ``spec`` goes
    over the first whole example's (``basic``), and ``- ...`` is that
    example's container; each document of a block is an example of its own.
    """
    blocks = re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.S)
    jobs: list[dict[str, Any]] = []
    base: dict[str, Any] | None = None
    for block in blocks:
        if "kind: TensorFlowTrainingJob" in block and not re.search(
            r"^\s*(- )?\.\.\.$", block, re.M
        ):
            docs = list(yaml.safe_load_all(block))
        elif base is not None and re.search(r"^\s*(- )?\.\.\.$", block, re.M) and "spec:" in block:
            docs = _excerpts(block, base)
        else:
            continue
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == tf.KIND:
                base = base or doc
                jobs.append(doc)
    assert len(jobs) == len(EXAMPLES), f"the manual has {len(jobs)} examples: {jobs}"
    return dict(zip(EXAMPLES, jobs, strict=True))


def _excerpts(block: str, base: dict[str, Any]) -> list[dict[str, Any]]:
    container = base["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    if "kind: TensorFlowTrainingJob" in block:  # a whole job but for ``- ...``
        text = re.sub(r"^(\s*)- \.\.\.$", r"\1- __base_container__: true", block, flags=re.M)
        docs = list(yaml.safe_load_all(text))
        for doc in docs:
            for rs in doc["spec"]["replicaSpecs"]:
                items = rs["template"]["spec"]["containers"]
                rs["template"]["spec"]["containers"] = [
                    {**container, **{k: v for k, v in c.items() if k != "__base_container__"}}
                    if "__base_container__" in c
                    else c
                    for c in items
                ]
        return docs
    text = "\n".join(line for line in block.splitlines() if line.strip() != "...")
    out = []
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and "spec" in doc:
            out.append({**base, "spec": {**base["spec"], **doc["spec"]}})
    return out


def manual_statuses() -> dict[str, str]:
    """The manual's status examples (``...`` then ``status:``), each as the
    status's YAML, named by its first field."""
    out = {}
    for block in re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.S):
        if not re.search(r"^status:", block, re.M):
            continue
        text = "\n".join(line for line in block.splitlines() if line.strip() != "...")
        doc = yaml.safe_load(text)
        if isinstance(doc, dict) and set(doc) == {"status"}:
            out[next(iter(doc["status"]))] = yaml.safe_dump(doc["status"])
    return out


JOB = "tensorflow-example"
SPEC_EXAMPLES = {name: yaml.safe_dump(doc) for name, doc in manual_examples().items()}
"""The manual's examples as YAML documents, for the suites every kind shares."""
STATUS_EXAMPLES = manual_statuses()


def test_the_manual_has_the_status_examples_this_test_reads() -> None:
    assert sorted(STATUS_EXAMPLES) == ["aggregate", "conditions", "tasks", "tensorboard"]
    for text in STATUS_EXAMPLES.values():
        tf.TensorFlowTrainingJobStatus.model_validate(yaml.safe_load(text))


def parse(raw: dict[str, Any]) -> tf.TensorFlowTrainingJobObject:
    obj = {**raw, "metadata": {**raw["metadata"], "namespace": "ns", "uid": "u"}}
    return tf.TensorFlowTrainingJobObject.model_validate(obj)


def test_the_manual_has_the_examples_this_test_reads() -> None:
    assert MANUAL.is_file(), f"the manual is not at {MANUAL}"
    assert list(manual_examples()) == list(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_of_the_manual_parses(name: str) -> None:
    job = parse(manual_examples()[name])
    assert job.spec.replica_specs[0].type == "worker"


def test_the_basic_example_gets_the_models_defaults() -> None:
    job = parse(manual_examples()["basic"])
    rs = job.spec.replica_specs[0]
    assert (rs.replicas, rs.restart_policy) == (4, "OnFailure")
    assert job.spec.run_mode is None and job.spec.scheduler is None
    assert job.spec.run_policy.clean_up_policy == tf.RunPolicy().clean_up_policy


def test_the_excerpts_reach_their_fields() -> None:
    jobs = manual_examples()
    shm = jobs["shared-memory"]
    pod = shm["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert pod["containers"][0]["name"] == "tensorflow"
    assert pod["volumes"][0]["emptyDir"]["medium"] == "Memory"
    parsed = [parse(j) for j in jobs.values()]
    t9k = [j.spec.scheduler.t9k_scheduler for j in parsed if j.spec.scheduler]
    assert [(s.queue, s.priority) for s in t9k if s] == [("default", 50)]
    assert sum(1 for j in parsed if j.spec.tensorboard_spec) == 1
    modes = [j.spec.run_mode for j in parsed if j.spec.run_mode]
    assert len(modes) == 4


def replica(type_: str, **more: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}
    return {"type": type_, "template": template, **more}


def raw(*specs: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": tf.KIND,
        "metadata": {"name": "tf"},
        "spec": {"replicaSpecs": list(specs)},
    }


def test_the_four_task_types_are_accepted_and_no_other() -> None:
    job = parse(raw(replica("chief"), replica("worker"), replica("ps"), replica("evaluator")))
    assert [rs.type for rs in job.spec.replica_specs] == ["chief", "worker", "ps", "evaluator"]
    with pytest.raises(ValidationError, match=r"replicaSpecs\.0\.type"):
        parse(raw(replica("master")))


def test_a_job_without_chief_or_worker_is_refused() -> None:
    with pytest.raises(ValidationError, match=re.escape(tf.MSG_NEEDS_LEADER)):
        parse(raw(replica("ps"), replica("evaluator")))
