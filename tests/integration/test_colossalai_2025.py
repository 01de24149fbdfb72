"""ColossalAIJob in T9k's 2025 layout (spec.torchConfig, spec.replicaSpecs) on the
local cluster, the operator as its ServiceAccount: the 2025 manual's examples
applied as written (read from the manual beside the clone), admission refusing a
job that mixes the layouts or has neither, what kubectl and t9k show of it, and
a job whose pods, exactly as the API server stored them, train for real: its
launcher starts torchrun on every worker over ssh (the pod host of
tests/integration/test_ssh_launch.py runs them as kubelet would)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.api.colossalai import CRD as COLOSSALAI_CRD
from t9k_operator.api.colossalai import MSG_ONE_LAYOUT, MSG_SCRIPT_REQUIRED, MSG_SOME_LAYOUT
from t9k_operator.kube import KubeClient
from tests.integration.cluster import Cluster, wait_for
from tests.integration.crd_helpers import (
    DOC_FRAGMENTS,
    applied,
    nameless_container_refused,
    refused,
    stored_object,
)
from tests.integration.jobs import Jobs, provide_claims
from tests.integration.kubelet import MANUAL
from tests.integration.podhost import Node
from tests.integration.podhost.host import STOCK
from tests.integration.test_cli import Run
from tests.integration.test_colossalai_job import COLOSSALAI
from tests.integration.test_ssh_launch import (
    COLOSSALAI_IMAGE,
    _objects_from_the_cluster,
    assert_colossalai_ran,
)
from tests.manual_examples import ROOT, example_texts
from tests.unit.api.helpers import is_subset

pytestmark = pytest.mark.usefixtures("operator")

MANUAL_PAGES = [
    ROOT.parent / "shared" / "specs" / "t9k-2025" / page
    for page in (
        "colossalaijob.md",
        "colossalaijob-api.md",
    )
]
"""T9k's 2025 manual of ColossalAIJob beside the clone: its guide and its API reference."""

EXAMPLES = {"colossalaijob.md": ["manual-1", "resources", "env"], "colossalaijob-api.md": []}
"""The whole ColossalAIJobs each page holds (tests.manual_examples names them): the
guide's first job, and its resources and environment examples."""


def manual_examples() -> dict[str, str]:
    """Every whole ColossalAIJob of the manual's pages, as written, by page and name."""
    return {
        f"{page.name}:{name}": text
        for page in MANUAL_PAGES
        for name, text in example_texts("ColossalAIJob", page).items()
    }


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace, COLOSSALAI)


@pytest.mark.skipif(
    not all(page.exists() for page in MANUAL_PAGES),
    reason="shared/specs/t9k-2025 is not beside the clone",
)
def test_every_example_of_the_2025_manual(cluster: Cluster, namespace: str, jobs: Jobs) -> None:
    found = manual_examples()
    assert sorted(found) == sorted(f"{p}:{n}" for p, names in EXAMPLES.items() for n in names)
    for key, text in found.items():
        if key.split(":")[1] in DOC_FRAGMENTS:
            # They show one field of a container and leave out the rest, its name
            # included, which the Pod API (and the CRD) requires; named, the job
            # still lacks the script its workers run, which admission names.
            named = nameless_container_refused(cluster, namespace, text)
            assert MSG_SCRIPT_REQUIRED in refused(cluster, namespace, named), key
            continue
        sent = yaml.safe_load(text)
        name = sent["metadata"]["name"]
        for spec in sent["spec"]["replicaSpecs"]:
            provide_claims(jobs, spec["template"])
        applied(cluster, namespace, text)
        stored = stored_object(cluster, COLOSSALAI_CRD, namespace, name)
        assert is_subset(sent, stored), f"{key}: pruned\n{yaml.safe_dump(stored['spec'])}"
        pods = jobs.wait_pods(name, [f"{name}-launcher", f"{name}-worker-0", f"{name}-worker-1"])
        assert_pods_as_the_guide_says(pods, name)
        jobs.wait_phase(name, "Running", 60)


def assert_pods_as_the_guide_says(pods: dict[str, Any], name: str) -> None:
    """The guide's first job: one launcher from its template (its image, workingDir and
    resources) running colossalai run with one process per worker and `train.py arg1`;
    two workers from theirs (a GPU each, the code volume) running sshd at its path."""
    (launcher,) = pods[f"{name}-launcher"]["spec"]["containers"]
    assert launcher["name"] == "launcher" and launcher["image"] == "hpcaitech/colossalai:0.3.0"
    assert launcher["workingDir"] == "/workspace"
    assert launcher["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert launcher["command"][2].rstrip().splitlines()[-1] == (
        f"exec colossalai run --nproc_per_node=1 --hostfile=/t9k/hostfile "
        f"--master_addr={name}-worker-0.{name} --master_port=29500 train.py arg1"
    )
    for i in (0, 1):
        pod = pods[f"{name}-worker-{i}"]
        (worker,) = pod["spec"]["containers"]
        assert worker["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert worker["command"][-1].rstrip().endswith("exec /usr/sbin/sshd -D -e")
        assert {"mountPath": "/workspace", "name": "code"} in worker["volumeMounts"]
        assert pod["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"launcher": {"image": "i"}}, MSG_ONE_LAYOUT),
        ({"worker": {"command": ["t.py"], "template": {"spec": {"containers": [{"name": "w"}]}}}},
         MSG_ONE_LAYOUT),
        ({"replicaSpecs": None}, MSG_SOME_LAYOUT),
    ],
)  # fmt: skip
def test_a_mixed_or_missing_layout_is_refused_at_admission(
    cluster: Cluster, namespace: str, change: dict[str, Any], message: str
) -> None:
    job = layout_2025("mixed", 1)
    job["spec"].update(change)
    job["spec"] = {k: v for k, v in job["spec"].items() if v is not None}
    assert message in refused(cluster, namespace, yaml.safe_dump(job))


def layout_2025(name: str, workers: int, gpus: int = 0) -> dict[str, Any]:
    """A 2025-layout job: 8 processes per worker running `train.py --config c.py`
    with a torchrun option, from the launcher's /workspace; the key at a home's."""
    resources = {"limits": {"nvidia.com/gpu": gpus}} if gpus else {}
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "ColossalAIJob",
        "metadata": {"name": name},
        "spec": {
            "ssh": {"authMountPath": "/home/trainer/.ssh", "sshdPath": "/usr/sbin/sshd"},
            "torchConfig": {
                "procPerWorker": 8,
                "script": ["train.py", "--config", "c.py"],
                "extraArgs": ["--max_restarts=3"],
            },
            "replicaSpecs": [
                {
                    "type": "launcher",
                    "template": {
                        "metadata": {"annotations": dict(MANUAL)},
                        "spec": {
                            "containers": [
                                {
                                    "name": "launcher",
                                    "image": "colossalai",
                                    "workingDir": "/workspace",
                                }
                            ]
                        },
                    },
                },
                {
                    "type": "worker",
                    "replicas": workers,
                    "template": {
                        "metadata": {"annotations": dict(MANUAL)},
                        "spec": {
                            "containers": [
                                {"name": "worker", "image": "colossalai", "resources": resources}
                            ]
                        },
                    },
                },
            ],
        },
    }


def test_kubectl_and_t9k_read_the_2025_layout(cluster: Cluster, namespace: str, jobs: Jobs) -> None:
    job = layout_2025("shown", 3, gpus=1)
    for spec in job["spec"]["replicaSpecs"]:
        spec["template"]["metadata"] = {"annotations": {"kwok.t9k.dev/run-duration": "60s"}}
    jobs.create(job)
    jobs.wait_phase("shown", "Running", 60)
    t9k = Run(cluster, namespace)

    def listed() -> list[str] | None:
        rows = [r.split() for r in t9k.ok("list").splitlines()[1:]]
        return rows[0] if rows and rows[0][5] == "3" else None

    row = wait_for(listed, 30, "the job's 3 GPUs allocated")
    assert row[:6] == ["shown", "ColossalAIJob", "Running", "-", "3", "3"]
    described = t9k.ok("describe", "shown")
    assert "GPUs:        3 requested, 3 allocated" in described
    replicas = described.split("Replicas:\n")[1].split("\n\n")[0].splitlines()
    assert [r.split()[:2] for r in replicas[1:]] == [
        ["launcher", "Running"],
        *([[f"worker-{i}", "Running"] for i in range(3)]),
    ]
    out = cluster.kubectl("get", "caij", "shown", "-n", namespace, "--no-headers").stdout
    assert out.split()[:5] == ["shown", "Running", "-", "4", "4"]


def test_the_2025_layout_trains_through_the_operator(
    admin: KubeClient, namespace: str, jobs: Jobs, tmp_path: Path
) -> None:
    """Its pods, Secret and hostfile as the API server stored them run here: the
    launcher logs into both workers and starts torchrun there, in its workingDir."""
    jobs.create(layout_2025("cj", 2))
    pods = jobs.wait_pods("cj", ["cj-launcher", "cj-worker-0", "cj-worker-1"])
    node = Node(tmp_path, namespace, _objects_from_the_cluster(admin, namespace, "cj"))
    try:
        worker_image = STOCK.derive("workspace", dirs={"/workspace": 0o755})
        workers = [node.run_pod(pods[f"cj-worker-{i}"], worker_image) for i in (0, 1)]
        launcher = node.run_pod(pods["cj-launcher"], COLOSSALAI_IMAGE)
        assert_colossalai_ran(launcher, workers)
    finally:
        node.close()
