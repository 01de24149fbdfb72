"""The XGBoostTrainingJob CRD on a real API server: the manual's examples, read
from the manual itself (tests/unit/api/xgboost_manual.py). Its data for the
suite every kind shares (tests/integration/test_crd_kinds.py) is here too."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from t9k_operator.api.xgboost import CRD, MSG_ONE_MASTER
from tests.integration.cluster import ROOT, Cluster
from tests.integration.crd_helpers import (
    applied,
    install_crd,
    nameless_container_refused,
    refused,
    stored_object,
)
from tests.unit.api import xgboost_manual

JOB = "training-iris-xgb"
SAMPLE = (ROOT / "manifests" / "samples" / "xgboost-basic.yaml").read_text()
MANUAL = xgboost_manual.jobs()
FRAGMENTS = ("4", "5-0", "5-1", "6-0", "6-1")
"""The manual's spec fragments (scheduler, debug, pause), each on the sample."""


def _on_sample(key: str) -> str:
    job = yaml.safe_load(SAMPLE)
    job["spec"].update(copy.deepcopy(MANUAL[key]["spec"]))
    del job["spec"]["replicaSpecs"]
    job["spec"]["replicaSpecs"] = yaml.safe_load(SAMPLE)["spec"]["replicaSpecs"]
    return yaml.safe_dump(job)


EXAMPLES: dict[str, str] = {"basic": SAMPLE, **{f"manual-{k}": _on_sample(k) for k in FRAGMENTS}}
PAUSED = SAMPLE + (
    "  runMode:\n    pause:\n      enabled: true\n      resumeSpecs:\n        - type: worker\n"
    '          skipInitContainer: true\n          command: ["/usr/bin/sshd"]\n'
)


def _job(spec: dict[str, Any]) -> str:
    job = yaml.safe_load(SAMPLE)
    job["spec"].update(spec)
    return yaml.safe_dump(job)


_TEMPLATE = {"spec": {"containers": [{"name": "xgboost", "image": "i"}]}}
INVALID: dict[str, tuple[str, list[str]]] = {
    "unknown-replica-type": (
        _job({"replicaSpecs": [{"type": "ps", "template": _TEMPLATE}]}),
        ["spec.replicaSpecs[0].type", "Unsupported value"],
    ),
    "two-masters": (
        _job({"replicaSpecs": [{"type": "master", "replicas": 2, "template": _TEMPLATE}]}),
        ["spec.replicaSpecs", MSG_ONE_MASTER],
    ),
    "bad-restart-policy": (
        _job(
            {
                "replicaSpecs": [
                    {"type": "master", "restartPolicy": "Sometimes", "template": _TEMPLATE}
                ]
            }
        ),
        ["spec.replicaSpecs[0].restartPolicy", "Unsupported value"],
    ),
}
STATUS: dict[str, Any] = {
    **xgboost_manual.statuses()["7"],
    **xgboost_manual.statuses()["9"],
    "restartCount": 2,
    "backoffCount": 2,
    "readyReplicas": 3,
    "replicas": 3,
}
ROW = [JOB, "Succeeded", "Succeeded", "3", "3", "2"]


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def test_the_manuals_first_example_is_refused_for_its_misplaced_containers(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    # Its worker template has `containers` beside `spec`: not a PodTemplateSpec field.
    stderr = refused(cluster, namespace, yaml.safe_dump(MANUAL["0"]))
    assert ".spec.replicaSpecs[1].template.containers: field not declared in schema" in stderr, (
        stderr
    )
    fixed = copy.deepcopy(MANUAL["0"])
    worker = fixed["spec"]["replicaSpecs"][1]
    worker["template"] = {"spec": worker["template"]}
    applied(cluster, namespace, yaml.safe_dump(fixed))
    assert stored_object(cluster, CRD, namespace, JOB)["spec"] == yaml.safe_load(SAMPLE)["spec"]


@pytest.mark.parametrize("key", ["1", "2", "3"])
def test_the_manuals_container_fragments_need_a_container_name(
    cluster: Cluster, crd: None, namespace: str, key: str
) -> None:
    # The resources, shared-memory and env examples show one field of a
    # container, without its name, which the Pod API requires.
    text = nameless_container_refused(cluster, namespace, yaml.safe_dump(MANUAL[key]))
    applied(cluster, namespace, text)
