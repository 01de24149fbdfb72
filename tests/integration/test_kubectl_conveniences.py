"""What kubectl shows and does with the jobs: HPA on elastic jobs, the
Replicas column counting pods that exist, ``kubectl get t9k`` listing every
job kind the operator serves (MSJob too)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from t9k_operator.kube import KubeClient
from tests.integration.cluster import Cluster, wait_for
from tests.integration.crd_helpers import applied
from tests.integration.jobs import Jobs, pytorch_job
from tests.unit.api.test_msjob_models import job_with as msjob_with

pytestmark = pytest.mark.usefixtures("operator")


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def elastic_job(name: str) -> dict[str, Any]:
    return pytorch_job(
        name,
        [("node", 2, "ExitCode")],
        torchrunConfig={"enabled": True, "procPerNode": "1", "rdzvBackend": "c10d"},
        elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2},
    )


def test_hpa_on_an_elastic_job_finds_its_selector(
    jobs: Jobs, cluster: Cluster, namespace: str
) -> None:
    jobs.create(elastic_job("hpa"))
    jobs.wait_pods("hpa", ["hpa-node-0", "hpa-node-1"])
    path = (
        f"/apis/batch.tensorstack.dev/v1beta1/namespaces/{namespace}/pytorchtrainingjobs/hpa/scale"
    )

    def scaled() -> dict[str, Any] | None:
        # The status counts the pods a moment after they exist: read /scale once it does.
        found: dict[str, Any] = json.loads(cluster.kubectl("get", "--raw", path).stdout)
        return found if found["status"].get("replicas") == 2 else None

    scale = wait_for(scaled, 20, "/scale counting the 2 pods")
    assert "t9k.dev/job-name=hpa" in scale["status"]["selector"]
    cluster.kubectl(
        "autoscale",
        "pytorchtrainingjob/hpa",
        "--min=1",
        "--max=4",
        "--cpu-percent=50",
        "-n",
        namespace,
    )

    def conditions() -> dict[str, Any] | None:
        out = cluster.kubectl("get", "hpa", "hpa", "-n", namespace, "-o", "json").stdout
        conds = {c["type"]: c for c in json.loads(out).get("status", {}).get("conditions") or []}
        return conds if "ScalingActive" in conds else None

    conds = wait_for(conditions, 60, "the HPA's ScalingActive condition")
    assert conds["ScalingActive"]["reason"] != "InvalidSelector", conds
    assert conds["AbleToScale"]["status"] == "True", conds


def test_replicas_column_counts_pods_that_exist(
    jobs: Jobs, cluster: Cluster, namespace: str
) -> None:
    jobs.create(pytorch_job("col", [("worker", 2, "Never")]))
    jobs.wait_pods("col", ["col-worker-0", "col-worker-1"])
    wait_for(lambda: jobs.status("col").get("replicas") == 2, 20, "2 replicas")
    jobs.patch_spec("col", {"runMode": {"pause": {"enabled": True}}})
    jobs.wait_phase("col", "Paused")
    wait_for(lambda: jobs.status("col").get("replicas") == 0, 20, "0 replicas while paused")
    out = cluster.kubectl("get", "pytj", "col", "-n", namespace).stdout.splitlines()
    header, row = out[0].split(), out[1].split()
    assert row[header.index("REPLICAS")] == "0"


def test_get_t9k_lists_an_msjob_beside_the_t9k_kinds(
    jobs: Jobs, cluster: Cluster, namespace: str
) -> None:
    jobs.create(pytorch_job("listed", [("worker", 1, "Never")]))
    applied(cluster, namespace, yaml.safe_dump(msjob_with({}, "ms-listed")))
    listed = cluster.kubectl("get", "t9k", "-n", namespace, "-o", "name").stdout.split()
    assert "pytorchtrainingjob.batch.tensorstack.dev/listed" in listed, listed
    assert "msjob.mindspore.gitee.com/ms-listed" in listed, listed
    # ms-operator's own category still lists it.
    listed = cluster.kubectl("get", "mindspore", "-n", namespace, "-o", "name").stdout.split()
    assert listed == ["msjob.mindspore.gitee.com/ms-listed"], listed
