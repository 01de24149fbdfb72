"""An XGBoostTrainingJob trains for real: its pods, as the operator's builders
render them, run on the pod host (tests/integration/podhost) with this
machine's Debian python3 and the pinned CPU-only XGBoost
(tests/integration/xgboost_framework.py). The master starts XGBoost's tracker
from the environment the operator gave it; the workers join the collective
through the job's Service names; the master decides the outcome."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.builders import xgboost as xb
from tests.integration import xgboost_framework
from tests.integration.cluster import ROOT
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK

SCRIPT = "/opt/train/xgboost_train.py"
IMAGE = STOCK.derive(
    "xgboost",
    files={
        SCRIPT: ((Path(__file__).parent / "frameworks" / "xgboost_train.py").read_text(), 0o644)
    },
)


@pytest.fixture(scope="module")
def framework() -> Path:
    return xgboost_framework.ensure()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.close()


def xgb_job(workers: int, framework: Path) -> xb.Job:
    container: dict[str, Any] = {
        "name": "xgboost",
        "image": "xgboost",
        "command": [xgboost_framework.POD_PYTHON, SCRIPT],
        "env": [{"name": "PYTHONPATH", "value": str(framework)}],
    }
    return xb.Job.from_dict(
        {
            "apiVersion": "batch.tensorstack.dev/v1beta1",
            "kind": "XGBoostTrainingJob",
            "metadata": {"name": "xgb", "namespace": "ns", "uid": "uid-xgb"},
            "spec": {
                "replicaSpecs": [
                    {"type": "master", "template": {"spec": {"containers": [container]}}},
                    {
                        "type": "worker",
                        "replicas": workers,
                        "template": {"spec": {"containers": [container]}},
                    },
                ]
            },
        }
    )


def test_a_master_and_two_workers_train_over_the_tracker(node: Node, framework: Path) -> None:
    job = xgb_job(2, framework)
    node.add(xb.build_service(job))
    master = node.run_pod(xb.build_pod(job, "master", 0), IMAGE)
    workers = [node.run_pod(xb.build_pod(job, "worker", i), IMAGE) for i in (0, 1)]
    for pod in (*workers, master):
        assert pod.wait("xgboost", 180) == 0, pod.logs("xgboost")
    lines = {}
    for rank, pod in enumerate((master, *workers)):
        log = pod.logs("xgboost")
        found = re.search(r"rank (\d+) of (\d+): 2 rounds, model ([0-9a-f]+)", log)
        assert found, log
        assert (int(found[1]), int(found[2])) == (rank, 3), log
        lines[rank] = found[3]
    # The collective made one model of the three shards: the same everywhere.
    assert len(set(lines.values())) == 1, lines
    assert "xgb-worker-1.xgb" in xb.tracker_env(job, "master", 0)["WORKER_ADDRS"]


def test_t9k_run_local_trains_the_sample_with_real_xgboost(framework: Path) -> None:
    """``t9k run --local``: each replica a local process with its pod's
    environment, the tracker's address and port rewritten to this machine."""
    sample = ROOT / "manifests" / "samples" / "xgboost-basic.yaml"
    script = Path(__file__).parent / "frameworks" / "xgboost_train.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(framework)])}
    program = [xgboost_framework.POD_PYTHON, str(script)]
    proc = subprocess.run(
        [sys.executable, "-m", "t9k_operator.local", str(sample), "--", *program],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    digests = set()
    for label, rank in (("master-0", 0), ("worker-0", 1), ("worker-1", 2)):
        found = re.search(
            rf"^\[{label}\] rank {rank} of 3: 2 rounds, model (\w+)$", proc.stdout, re.M
        )
        assert found, proc.stdout
        digests.add(found[1])
    assert len(digests) == 1, proc.stdout
    assert "the job succeeded" in proc.stderr + proc.stdout
