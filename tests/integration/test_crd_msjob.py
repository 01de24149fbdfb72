"""The generated MSJob CRD on a real API server.

It must take the MindSpore operator doc's example exactly as written and store
it unpruned (hostPath volumes, GPU limits, env), refuse bad specs at admission
with a message naming the field, accept a Kubeflow-style status (plus the
operator's bookkeeping fields) through the status subresource, and serve
``kubectl get msjob``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from t9k_operator.api.msjob import CRD
from tests.integration.cluster import Cluster
from tests.integration.crd_helpers import applied, install_crd
from tests.unit.api.test_msjob_models import (
    JOB,
    job_with,
    role,
)


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> None:
    install_crd(cluster, CRD)


def stored(cluster: Cluster, namespace: str, name: str = JOB) -> dict[str, Any]:
    out = cluster.kubectl("get", "msjob", name, "-n", namespace, "-o", "json")
    obj: dict[str, Any] = json.loads(out.stdout)
    return obj


def test_crd_is_labelled_and_in_both_categories(cluster: Cluster, crd: None) -> None:
    out = cluster.kubectl("get", "crd", CRD.name, "-o", "json").stdout
    obj = json.loads(out)
    assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "t9k-operator"
    names = obj["spec"]["names"]
    assert names.get("categories") == ["mindspore", "t9k"]
    assert obj["spec"]["group"] == "mindspore.gitee.com"


def test_defaults_are_filled_in(cluster: Cluster, crd: None, namespace: str) -> None:
    obj = job_with({"successPolicy": None, "runPolicy": {}})
    obj["spec"]["msReplicaSpecs"]["Worker"].pop("replicas")
    obj["spec"]["msReplicaSpecs"]["Worker"].pop("restartPolicy")
    applied(cluster, namespace, yaml.safe_dump(obj))
    spec = stored(cluster, namespace)["spec"]
    assert spec["successPolicy"] == ""
    assert spec["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 3}
    assert spec["msReplicaSpecs"]["Worker"]["replicas"] == 1
    assert "restartPolicy" not in spec["msReplicaSpecs"]["Worker"]  # unset means Never


def test_kubeflow_run_policy_fields_are_stored(cluster: Cluster, crd: None, namespace: str) -> None:
    policy = {
        "cleanPodPolicy": "All",
        "backoffLimit": 2,
        "activeDeadlineSeconds": 600,
        "ttlSecondsAfterFinished": 60,
        "schedulingPolicy": {"minAvailable": 5, "queue": "default", "priorityClass": "high"},
    }
    applied(cluster, namespace, yaml.safe_dump(job_with({"runPolicy": policy})))
    assert stored(cluster, namespace)["spec"]["runPolicy"] == policy


@pytest.mark.parametrize(
    "roles",
    [
        {"Worker": role(1)},
        {"Scheduler": role(1), "PS": role(2), "Worker": role(4, restartPolicy="ExitCode")},
        {"Scheduler": role(0), "Worker": role(0, restartPolicy="OnFailure")},
        {"Scheduler": role(restartPolicy="Always"), "Worker": role(2)},
    ],
)
def test_valid_role_sets_are_accepted(
    cluster: Cluster, crd: None, namespace: str, roles: dict[str, Any]
) -> None:
    applied(cluster, namespace, yaml.safe_dump(job_with({"msReplicaSpecs": roles})))


def test_longest_names_that_fit_are_accepted(cluster: Cluster, crd: None, namespace: str) -> None:
    name = "m" + "x" * 50  # 51 + len("-scheduler-0") == 63
    applied(cluster, namespace, yaml.safe_dump(job_with({}, name)))
    assert stored(cluster, namespace, name)["metadata"]["name"] == name
    name = "m" + "x" * 53  # 54 + len("-worker-3") == 63
    applied(
        cluster, namespace, yaml.safe_dump(job_with({"msReplicaSpecs": {"Worker": role(4)}}, name))
    )


SERVER_FRAGMENTS = {
    # The Pod API's schema refuses it before the kind's own rule is checked.
    "scheduler-without-containers": [
        "spec.msReplicaSpecs.Scheduler.template.spec.containers",
        "Required value",
    ],
}
