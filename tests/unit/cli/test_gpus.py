"""``t9k list``'s GPUS is what the operator's pods ask for: the kind's ``gpus``,
from the replicas the operator creates (an elastic PyTorchTrainingJob's
clamped count, not the count its spec writes) and the pods its builders build."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.builders.common import NORMAL
from t9k_operator.kinds.gpus import pod_gpus
from t9k_operator.kinds.registry import job_kind_of
from t9k_operator.sdk import views

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SAMPLES = Path(__file__).parents[3] / "manifests" / "samples"

ELASTIC = """
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata: {name: elastic, namespace: team-a, uid: u-1}
spec:
  torchrunConfig: {enabled: true, procPerNode: "4"}
  elastic: {enabled: true, minReplicas: 1, maxReplicas: 4, expectedReplicas: 3}
  replicaSpecs:
  - type: master
    replicas: 1
    template:
      spec:
        containers:
        - name: pytorch
          image: train:1
          resources: {limits: {nvidia.com/gpu: 2}}
  - type: worker
    replicas: 8
    template:
      spec:
        containers:
        - name: pytorch
          image: train:1
          resources: {limits: {nvidia.com/gpu: 4}}
"""


def test_an_elastic_job_shows_the_gpus_of_the_replicas_the_operator_creates() -> None:
    # The operator never scales the master: 1 pod x 2 GPUs = 2. Of the workers it
    # creates elastic.expectedReplicas, 3 (within [1, 4]), not the 8 the replica
    # spec writes: 3 pods x 4 GPUs = 12. 2 + 12 = 14; the spec's own count would
    # say 2 + 8 x 4 = 34.
    job = yaml.safe_load(ELASTIC)
    assert views.summarize(job, [], NOW).gpus_requested == 14


def built_pods_gpus(job: dict[str, Any]) -> int:
    """The GPUs of every pod the kind's builders build for the job, one by one."""
    kind = job_kind_of(job)
    parsed = kind.model.from_dict(job)
    # The Services a pod may need a value of (MSJob's scheduler ClusterIP).
    services = {
        svc["metadata"]["name"]: {**svc, "spec": {**svc.get("spec", {}), "clusterIP": "10.0.0.1"}}
        for svc in kind.extras(parsed)
        if svc.get("kind") == "Service"
    }
    return sum(
        pod_gpus(kind.build_pod(parsed, role.type, index, NORMAL, services))
        for role in kind.view(parsed).roles
        for index in range(role.replicas)
    )


def sample(path: Path) -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(path.read_text())
    job["metadata"] = {**job["metadata"], "namespace": "team-a", "uid": "u-1"}
    return job


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_sample_shows_the_gpus_of_the_pods_its_builders_build(path: Path) -> None:
    job = sample(path)
    assert views.summarize(job, [], NOW).gpus_requested == built_pods_gpus(job)


@pytest.mark.parametrize(
    ("name", "gpus"),
    [
        # The launcher asks for no GPU; 2 workers x 1 GPU each = 2.
        ("colossalai-basic", 2),
        # 4 workers whose containers ask for CPU and memory only = 0.
        ("deepspeed-basic", 0),
    ],
)
def test_the_samples_gpus_by_hand(name: str, gpus: int) -> None:
    job = sample(SAMPLES / f"{name}.yaml")
    assert built_pods_gpus(job) == gpus
    assert views.summarize(job, [], NOW).gpus_requested == gpus
