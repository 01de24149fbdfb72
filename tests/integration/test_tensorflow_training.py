"""A TensorFlowTrainingJob trains for real: its pods, as the operator's builders
render them, run on the pod host (``tests/integration/podhost``: the pods'
own network namespaces and addresses, the headless Service's DNS names) with
Debian's python3 and a pinned ``tensorflow-cpu`` (hack/ensure-frameworks.py),
and its two workers take one MultiWorkerMirroredStrategy step together over
TensorFlow's gRPC, each from its TF_CONFIG alone."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders import tensorflow as tb
from tests.integration.podhost import Node

ROOT = Path(__file__).resolve().parents[2]
STEP = ROOT / "tests" / "integration" / "launchers" / "tf_step.py"


@pytest.fixture(scope="session")
def tensorflow_path() -> str:
    """The folder of the pinned tensorflow-cpu for Debian's python3 (cached;
    installed by `make test` before the tests start, about a minute cold)."""
    proc = subprocess.run(
        ["/usr/bin/python3", str(ROOT / "hack" / "ensure-frameworks.py"), "tensorflow"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(f"hack/ensure-frameworks.py failed:\n{proc.stderr[-4000:]}", pytrace=False)
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.close()


def tf_job(pythonpath: str) -> tb.Job:
    container: dict[str, Any] = {
        "name": "tensorflow",
        "image": "tensorflow/tensorflow:2.18.0",
        "command": ["python3", str(STEP)],
        "env": [
            {"name": "PYTHONPATH", "value": pythonpath},
            {"name": "TF_CPP_MIN_LOG_LEVEL", "value": "2"},
        ],
    }
    return tb.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "TensorFlowTrainingJob",
            "metadata": {"name": "tf", "namespace": "ns", "uid": "uid-tf"},
            "spec": {
                "replicaSpecs": [
                    {
                        "type": "worker",
                        "replicas": 2,
                        "template": {"spec": {"containers": [container]}},
                    }
                ]
            },
        }
    )


def test_two_workers_take_one_multi_worker_mirrored_step(node: Node, tensorflow_path: str) -> None:
    job = tf_job(tensorflow_path)
    node.add(tb.build_service(job))
    workers = [node.run_pod(tb.build_pod(job, "worker", i)) for i in range(2)]
    node.refresh_dns()  # each pod's hosts file names the other (cluster DNS does at once)
    for w in workers:
        assert w.wait("tensorflow", 240) == 0, w.logs("tensorflow")[-4000:]
    for i, w in enumerate(workers):
        log = w.logs("tensorflow")
        # Both replicas in sync; the summed loss is both workers' (4 + 16), and the
        # weight moved by the mean of their updates (0.4 and 1.6): the all-reduce ran.
        assert re.search(rf"^t9k-tf worker-{i}: replicas=2 loss=20\.0000 w=1\.0000$", log, re.M), (
            log[-4000:]
        )
