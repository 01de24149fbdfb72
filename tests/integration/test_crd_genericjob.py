"""The generated GenericJob CRD on a real API server: the data the shared suite
(test_crd_kinds.py) reads for GenericJob (its invalid specs, each with what
the refusal names), and what is GenericJob's own: the defaults it fills in,
and a template variable naming what the job lacks, which admission lets
through (the operator fails such a job, naming the field and the variable)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from t9k_operator.api.genericjob import CRD, MSG_DISTINCT_PORTS, MSG_RULE_REPLICAS
from tests.integration.cluster import Cluster
from tests.integration.crd_helpers import applied, install_crd, stored_object
from tests.unit.api.test_genericjob_models import JOB

_TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "debian:12"}]}}


def _job(spec: dict[str, Any]) -> str:
    base: dict[str, Any] = {
        "replicaSpecs": [{"type": "worker", "replicas": 2, "template": _TEMPLATE}],
    }
    return yaml.safe_dump(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "GenericJob",
            "metadata": {"name": JOB},
            "spec": {**base, **copy.deepcopy(spec)},
        }
    )


INVALID: dict[str, tuple[str, list[str]]] = {
    "success-rule-rank-missing": (
        _job({"successRules": [{"worker": [2]}]}),
        ["spec.successRules", MSG_RULE_REPLICAS],
    ),
    "failure-rule-type-missing": (
        _job({"failureRules": [{"ps": [0]}]}),
        ["spec.failureRules", MSG_RULE_REPLICAS],
    ),
    "negative-rank": (
        _job({"successRules": [{"worker": [-1]}]}),
        ["spec.successRules[0].worker[0]", "greater than or equal to 0"],
    ),
    "same-port-name": (
        _job({"service": {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}}),
        ["spec.service.ports", MSG_DISTINCT_PORTS],
    ),
    "bad-restart-policy": (
        _job(
            {
                "replicaSpecs": [
                    {
                        "type": "worker",
                        "restartPolicy": {"policy": "Sometimes"},
                        "template": _TEMPLATE,
                    }
                ]
            }
        ),
        ["spec.replicaSpecs[0].restartPolicy.policy", "Unsupported value"],
    ),
    "same-type-twice": (
        _job(
            {
                "replicaSpecs": [
                    {"type": "worker", "template": _TEMPLATE},
                    {"type": "worker", "template": _TEMPLATE},
                ]
            }
        ),
        ["spec.replicaSpecs", "each type may appear only once"],
    ),
    "bad-clean-up-policy": (
        _job({"cleanUpPolicy": "Some"}),
        ["spec.cleanUpPolicy", "Unsupported value"],
    ),
}


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def test_defaults_are_filled_in(cluster: Cluster, crd: None, namespace: str) -> None:
    applied(cluster, namespace, _job({"replicaSpecs": [{"type": "worker", "template": _TEMPLATE}]}))
    spec = stored_object(cluster, CRD, namespace, JOB)["spec"]
    assert spec["cleanUpPolicy"] == "None"
    assert spec["replicaSpecs"][0]["replicas"] == 1


def test_a_variable_naming_a_missing_port_is_left_to_the_operator(
    cluster: Cluster, crd: None, namespace: str
) -> None:
    """CEL does not parse the templates' strings: the operator fails such a job
    with a condition naming the field and the variable (tests/unit/builders)."""
    template = copy.deepcopy(_TEMPLATE)
    template["spec"]["containers"][0]["args"] = ["$(service.port[http])"]
    applied(cluster, namespace, _job({"replicaSpecs": [{"type": "worker", "template": template}]}))
