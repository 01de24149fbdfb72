"""A kind and an integration of another distribution, on the local cluster:
the toy kind and the toy integration (tests/toykind/), installed only as an
entry point (tests/toy_plugin.py), run as the built-ins do.

The toy's CRD is the CRD generator's, its ClusterRole the ClusterRole
generator's with the plugin loaded (bound to the operator's ServiceAccount
beside the shipped one); the operator, ``t9k`` and ``t9k run --local`` run
with the plugin on their PYTHONPATH, the operator with the toy integration's
flag.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.kinds.command import resource_of
from t9k_operator.kube import KubeClient
from tests import toy_plugin
from tests.integration.cluster import Cluster
from tests.integration.conftest import OPERATOR_NAMESPACE, OPERATOR_SA
from tests.integration.jobs import Jobs
from tests.integration.operator_process import OperatorProcess
from tests.toykind.api import CRD

T9K = Path(sys.executable).with_name("t9k")
TOYJOBS = resource_of(CRD)
ROLE = "t9k-operator-toy"


def toy_manifest(name: str, replicas: int = 2) -> dict[str, Any]:
    annotations = {"kwok.t9k.dev/run-duration": "3s", "kwok.t9k.dev/exit-code": "0"}
    return {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": name},
        "spec": {
            "worker": {
                "replicas": replicas,
                "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {
                        "containers": [
                            {"name": "toy", "image": "toy:1", "command": ["python", "train.py"]}
                        ]
                    },
                },
            }
        },
    }


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return toy_plugin.write_dist(tmp_path_factory.mktemp("toy-plugin"))


@pytest.fixture(scope="module")
def toy_installed(cluster: Cluster, rbac_installed: None, plugin_dir: Path) -> None:
    """The toy's CRD and ClusterRole, as the generators make them with the plugin."""

    def generated(code: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", f"from tests import hack_scripts\n{code}"],
            capture_output=True,
            text=True,
            check=True,
            cwd=toy_plugin.ROOT,
            env=toy_plugin.env(plugin_dir),
        ).stdout

    crd = generated(
        "from tests.toykind.api import CRD\nprint(hack_scripts.load('generate.crds').render(CRD))"
    )
    cluster.kubectl("apply", "--server-side", "-f", "-", input_=crd)
    cluster.wait_established(f"crd/{CRD.name}")
    role = yaml.safe_load(generated("print(hack_scripts.load('generate.rbac').render())"))
    role["metadata"]["name"] = ROLE
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ROLE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
        "subjects": [
            {"kind": "ServiceAccount", "name": OPERATOR_SA, "namespace": OPERATOR_NAMESPACE}
        ],
    }
    docs = yaml.safe_dump_all([role, binding])
    cluster.kubectl("apply", "--server-side", "-f", "-", input_=docs)


@pytest.fixture
def toy_operator(
    toy_installed: None,
    plugin_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    start_operator: Callable[..., OperatorProcess],
) -> Iterator[OperatorProcess]:
    """The operator with the plugin and ``--toy-seen``; ``t9k``, run from this
    test, has the plugin too (the environment is inherited)."""
    monkeypatch.setenv("PYTHONPATH", toy_plugin.env(plugin_dir)["PYTHONPATH"])
    proc = start_operator("--toy-seen")
    proc.wait_ready()
    yield proc


class T9k:
    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.base = [str(T9K), "--kubeconfig", str(cluster.kubeconfig), "-n", namespace]

    def __call__(self, *args: str, input_: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.base, *args], input=input_, capture_output=True, text=True, timeout=90
        )

    def ok(self, *args: str, input_: str | None = None) -> str:
        proc = self(*args, input_=input_)
        assert proc.returncode == 0, f"t9k {' '.join(args)}: {proc.stderr}"
        return proc.stdout


@pytest.fixture
def t9k(cluster: Cluster, namespace: str) -> T9k:
    return T9k(cluster, namespace)


def test_the_operator_runs_a_toy_job_and_the_toy_integration_marks_it(
    toy_operator: OperatorProcess, cluster: Cluster, admin: KubeClient, namespace: str
) -> None:
    jobs = Jobs(admin, namespace, TOYJOBS)
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input_=yaml.safe_dump(toy_manifest("toy")))
    pods = jobs.wait_pods("toy", ["toy-worker-0", "toy-worker-1"])
    env = pods["toy-worker-1"]["spec"]["containers"][0]["env"]
    assert {"name": "TOY_WORKER_INDEX", "value": "1"} in env
    status = jobs.wait_phase("toy", "Succeeded", timeout=60)
    assert status["toy"] == {"seen": True}, status


def test_t9k_run_local_plans_a_toy_job(
    t9k: T9k, plugin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", toy_plugin.env(plugin_dir)["PYTHONPATH"])
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(toy_manifest("toy")))
    out = t9k.ok("run", "--local", "--dry-run", str(path))
    assert out.splitlines()[:4] == [
        "[worker-0]",
        "  command: python train.py",
        "  env HOSTNAME=toy-worker-0",
        "  env TOY_WORKER_INDEX=0",
    ]
    assert "[worker-1]" in out


def test_t9k_submits_lists_and_describes_a_toy_job(
    toy_operator: OperatorProcess, t9k: T9k, admin: KubeClient, namespace: str
) -> None:
    out = t9k.ok("submit", "-f", "-", input_=yaml.safe_dump(toy_manifest("toy")))
    assert out == f"{CRD.singular}.{CRD.group}/toy submitted\n"
    Jobs(admin, namespace, TOYJOBS).wait_phase("toy", "Succeeded", timeout=60)
    rows = t9k.ok("list").splitlines()[1:]
    assert [r.split()[:3] for r in rows] == [["toy", "ToyJob", "Succeeded"]]
    described = t9k.ok("describe", "toy")
    assert "Kind:        ToyJob" in described
    assert "Phase:       Succeeded" in described


def test_t9k_describe_shows_the_toy_integrations_status_part(
    toy_operator: OperatorProcess, t9k: T9k, admin: KubeClient, namespace: str
) -> None:
    t9k.ok("submit", "-f", "-", input_=yaml.safe_dump(toy_manifest("toy", replicas=1)))
    Jobs(admin, namespace, TOYJOBS).wait_phase("toy", "Succeeded", timeout=60)
    described = t9k.ok("describe", "toy")
    assert "Toy:\n  seen by the toy integration: yes\n" in described, described


def test_t9k_creates_a_toy_job_from_flags(
    toy_operator: OperatorProcess, t9k: T9k, admin: KubeClient, namespace: str
) -> None:
    out = t9k.ok(
        "create",
        "toy",
        "made",
        "--image",
        "busybox",
        "--workers",
        "2",
        "--annotation",
        "kwok.t9k.dev/run-duration=3s",
        "--",
        "python",
        "train.py",
    )
    assert out == f"{CRD.singular}.{CRD.group}/made created\n"
    Jobs(admin, namespace, TOYJOBS).wait_phase("made", "Succeeded", timeout=60)
    worker = admin.get(TOYJOBS, "made", namespace)["spec"]["worker"]
    assert worker["replicas"] == 2
    assert worker["template"]["spec"]["containers"][0]["command"] == ["python", "train.py"]
