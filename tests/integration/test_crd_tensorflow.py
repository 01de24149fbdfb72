"""The generated TensorFlowTrainingJob CRD on a real API server.

Every example of the manual (shared/specs in the clone's parent folder) applies
as written with a server-side dry run, but for the two that show one field of
a container and leave out its name, which the Pod API's schema refuses; bad
specs are refused at admission naming the field.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from t9k_operator.api.tensorflow import (
    CRD,
    MSG_DISTINCT_TYPES,
    MSG_NEEDS_LEADER,
    MSG_ONE_CHIEF,
    MSG_POD_NAME_LENGTH,
)
from tests.integration.cluster import Cluster
from tests.integration.crd_helpers import (
    DOC_FRAGMENTS,
    applied,
    install_crd,
    nameless_container_refused,
    refused,
    stored_object,
)
from tests.unit.api.test_tensorflow_models import JOB, SPEC_EXAMPLES

TEMPLATE = {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow:2.18"}]}}


def _replica(type_: str, **more: Any) -> dict[str, Any]:
    return {"type": type_, "template": copy.deepcopy(TEMPLATE), **more}


def _job(spec: dict[str, Any], name: str = JOB) -> str:
    body = {"replicaSpecs": [_replica("worker", replicas=2)], **spec}
    return yaml.safe_dump(
        {
            "apiVersion": CRD.api_version,
            "kind": CRD.kind,
            "metadata": {"name": name},
            "spec": body,
        }
    )


INVALID: dict[str, tuple[str, list[str]]] = {
    "unknown-type": (
        _job({"replicaSpecs": [_replica("master")]}),
        ["spec.replicaSpecs[0].type", "Unsupported value"],
    ),
    "type-twice": (
        _job({"replicaSpecs": [_replica("worker"), _replica("worker")]}),
        ["spec.replicaSpecs", MSG_DISTINCT_TYPES],
    ),
    "two-chiefs": (
        _job({"replicaSpecs": [_replica("chief", replicas=2)]}),
        ["spec.replicaSpecs", MSG_ONE_CHIEF],
    ),
    "no-chief-nor-worker": (
        _job({"replicaSpecs": [_replica("ps"), _replica("evaluator")]}),
        ["spec.replicaSpecs", MSG_NEEDS_LEADER],
    ),
    "bad-restart-policy": (
        _job({"replicaSpecs": [_replica("worker", restartPolicy="Sometimes")]}),
        ["spec.replicaSpecs[0].restartPolicy", "Unsupported value"],
    ),
    "pod-name-too-long": (
        _job({"replicaSpecs": [_replica("worker", replicas=11)]}, "j" * 54),
        ["metadata.name", MSG_POD_NAME_LENGTH],
    ),
    "bad-cleanup-policy": (
        _job({"runPolicy": {"cleanUpPolicy": "Some"}}),
        ["spec.runPolicy.cleanUpPolicy", "Unsupported value"],
    ),
}


PAUSED = f"""\
apiVersion: {CRD.api_version}
kind: {CRD.kind}
metadata:
  name: {JOB}
spec:
  replicaSpecs:
  - type: worker
    template:
      spec:
        containers:
        - name: tensorflow
          image: tensorflow:2.18
  runMode:
    pause:
      enabled: true
      resumeSpecs:
        - type: worker
          skipInitContainer: true
          command: ["/usr/bin/sshd"]
"""
"""The manual's first pause example as a whole job, its resumeSpecs as written."""


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def dry_run(cluster: Cluster, namespace: str, text: str) -> str:
    """A server-side dry-run apply of ``text``: its error text, or "" when accepted."""
    proc = cluster.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=t9k-test",
        "-n",
        namespace,
        "-f",
        "-",
        input_=text,
        check=False,
    )
    return proc.stderr if proc.returncode else ""


@pytest.mark.parametrize("name", list(SPEC_EXAMPLES))
def test_every_example_of_the_manual_applies(
    cluster: Cluster, crd: None, namespace: str, name: str
) -> None:
    text = SPEC_EXAMPLES[name]
    if name in DOC_FRAGMENTS:
        text = nameless_container_refused(cluster, namespace, text)
    assert dry_run(cluster, namespace, text) == ""


def test_the_basic_example_is_stored_with_the_defaults(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    applied(cluster, namespace, SPEC_EXAMPLES["basic"])
    spec = stored_object(cluster, CRD, namespace, JOB)["spec"]
    assert spec["replicaSpecs"][0]["replicas"] == 4
    assert spec["replicaSpecs"][0]["restartPolicy"] == "OnFailure"
    assert spec["replicaSpecs"][0]["template"]["spec"]["containers"][0]["name"] == "tensorflow"


@pytest.mark.parametrize("case", list(INVALID))
def test_an_invalid_spec_is_refused_naming_the_field(
    cluster: Cluster, crd: None, namespace: str, case: str
) -> None:
    text, fragments = INVALID[case]
    stderr = refused(cluster, namespace, text)
    for fragment in fragments:
        assert fragment in stderr, stderr


def test_kubectl_explain_describes_the_task_types(cluster: Cluster, crd: None) -> None:
    out = cluster.kubectl("explain", "tfj.spec.replicaSpecs.type").stdout
    assert "chief, worker, ps or evaluator" in out, out
