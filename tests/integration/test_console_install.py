"""The in-cluster console's install forms rendered by the real Helm and
kustomize: the chart's console.enabled gives the component deploy/console's
objects, which are deploy/console/console.yaml's, and neither the chart's
defaults nor the base has them. Applied to the cluster, its ServiceAccount
may do nothing with jobs, pods, their logs or Secrets."""

from __future__ import annotations

import subprocess

import pytest

from tests.integration.cluster import ROOT, Cluster, MissingBinaries
from tests.integration.install import Tools, objects, without_helm

DEPLOY = ROOT / "deploy"
CONSOLE = DEPLOY / "console"
SA = "system:serviceaccount:t9k-system:t9k-console"


@pytest.fixture(scope="module")
def tools() -> Tools:
    try:
        return Tools.obtain()
    except MissingBinaries as exc:
        pytest.fail(f"Helm and kustomize not built (run `make binaries`): {exc}", pytrace=False)


def test_the_charts_console_is_the_kustomize_component(tools: Tools) -> None:
    shipped = objects((CONSOLE / "console.yaml").read_text())
    assert {k[0] for k in shipped} == {"ServiceAccount", "Deployment", "Service"}
    base = objects(tools.kustomize_build(DEPLOY / "cluster-wide"))
    with_console = objects(tools.kustomize_build(DEPLOY / "cluster-wide", components=(CONSOLE,)))
    assert not shipped.keys() & base.keys()
    assert {k: with_console[k] for k in shipped} == shipped
    assert not shipped.keys() & objects(tools.helm_template()).keys()
    helm = objects(tools.helm_template("--set", "console.enabled=true"))
    for key, obj in shipped.items():
        assert without_helm(helm[key]) == obj, f"{key} differs between the chart and kustomize"


@pytest.mark.parametrize(
    ("verb", "resource"),
    [
        ("list", "pytorchtrainingjobs.batch.tensorstack.dev"),
        ("get", "pytorchtrainingjobs.batch.tensorstack.dev"),
        ("list", "pods"),
        ("get", "pods/log"),
        ("get", "secrets"),
        ("list", "secrets"),
        ("create", "tokenreviews.authentication.k8s.io"),
        ("create", "serviceaccounts/token"),
    ],
)
def test_the_consoles_service_account_may_do_nothing(
    cluster: Cluster, verb: str, resource: str
) -> None:
    cluster.kubectl("create", "namespace", "t9k-system", check=False)
    cluster.kubectl("apply", "--server-side", "-f", str(CONSOLE / "console.yaml"))
    proc = subprocess.run(
        [
            str(cluster.bin_dir / "kubectl"),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "auth",
            "can-i",
            verb,
            resource,
            "--all-namespaces",
            f"--as={SA}",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.stdout.strip() == "no", (verb, resource, proc.stdout, proc.stderr)
