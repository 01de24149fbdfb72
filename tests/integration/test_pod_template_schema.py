"""Pod templates are checked at admission against the pinned Kubernetes schema.

A typo inside a pod template (``comand:``) is refused by the API server at
``kubectl apply``, ``kubectl explain`` reaches every container field (the Pod
API's descriptions are ``kubectl explain pod``'s, which the template names), and what
the Pod API accepts (``cpu: 0.5``, an env name given twice) the job accepts too.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.kube import KubeClient
from t9k_operator.resources import PODS
from tests.integration.cluster import ROOT, Cluster
from tests.integration.jobs import Jobs, pytorch_job
from tests.kinds import KIND_NAMES, by_kind, kind_entry, kind_table, per_kind

SAMPLES = {  # kind -> its sample, a file of manifests/samples/
    yaml.safe_load(p.read_text())["kind"]: yaml.safe_load(p.read_text())
    for p in sorted((ROOT / "manifests" / "samples").glob("*.yaml"))
}
TEMPLATES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = kind_table("schema_template")
"""kind -> how to reach one pod template of its sample (its ``schema_template`` in
tests/kinds/<kind>.py)."""
EXPLAIN: dict[str, str | None] = kind_table("SCHEMA_EXPLAIN")
"""kind -> the path kubectl explain takes to a container's command (None: none; its
``SCHEMA_EXPLAIN``)."""


@pytest.mark.parametrize("table", ["SAMPLES", "TEMPLATES", "EXPLAIN"])
def test_every_kind_has_its_entry_in_the_table(table: str) -> None:
    per_kind(globals()[table], f"{__name__}.{table}")


def kubectl_apply(cluster: Cluster, namespace: str, obj: dict[str, Any], *flags: str) -> str:
    """``kubectl apply`` as a user runs it (client-side, kubectl's default strict
    field validation); the error text, or "" when applied."""
    proc = cluster.kubectl(
        "apply", "-n", namespace, *flags, "-f", "-", input_=yaml.safe_dump(obj), check=False
    )
    return proc.stderr if proc.returncode else ""


@pytest.mark.usefixtures("crds_installed")
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_a_typo_in_a_pod_template_is_refused_at_apply(
    cluster: Cluster, namespace: str, kind: str
) -> None:
    job = copy.deepcopy(kind_entry(SAMPLES, f"{__name__}.SAMPLES", kind))
    assert kubectl_apply(cluster, namespace, job, "--dry-run=server") == ""
    template = kind_entry(TEMPLATES, f"{__name__}.TEMPLATES", kind)(job["spec"])
    container = template["spec"]["containers"][0]
    container["comand"] = ["python", "train.py"]
    error = kubectl_apply(cluster, namespace, job)
    assert 'unknown field "spec.' in error and ".containers[0].comand" in error, error
    # A value of the wrong type inside the template is refused as well.
    del container["comand"]
    container["ports"] = [{"containerPort": "http"}]
    error = kubectl_apply(cluster, namespace, job)
    assert "containerPort" in error and "integer" in error, error
    kind_lower = kind.lower()
    assert cluster.kubectl("get", kind_lower, "-n", namespace, "-o", "name").stdout == ""


@pytest.mark.usefixtures("crds_installed")
def test_a_typo_in_the_colossalai_launcher_is_refused(cluster: Cluster, namespace: str) -> None:
    job = copy.deepcopy(SAMPLES["ColossalAIJob"])
    job["spec"]["launcher"]["env"] = [{"name": "A", "valeu": "1"}]
    error = kubectl_apply(cluster, namespace, job)
    assert 'unknown field "spec.launcher.env[0].valeu"' in error, error
    job["spec"]["launcher"]["env"] = []
    job["spec"]["launcher"]["resources"] = {"limit": {"cpu": 1}}
    error = kubectl_apply(cluster, namespace, job)
    assert 'unknown field "spec.launcher.resources.limit"' in error, error


@pytest.mark.usefixtures("crds_installed")
@pytest.mark.parametrize("kind", [kind for kind in KIND_NAMES if EXPLAIN.get(kind)])
def test_kubectl_explain_reaches_container_fields(cluster: Cluster, kind: str) -> None:
    resource, path = by_kind(kind).crd.singular, EXPLAIN[kind]
    assert path is not None
    out = cluster.kubectl("explain", f"{resource}.{path}").stdout
    assert "FIELD: command <[]string>" in out, out
    # The Pod API's descriptions are kubectl explain pod's; the template says so.
    template = cluster.kubectl("explain", f"{resource}.{path.split('.spec.containers')[0]}")
    assert "kubectl explain pod describes its fields" in " ".join(template.stdout.split()), (
        template.stdout
    )
    env = cluster.kubectl("explain", f"{resource}.{path.replace('command', 'env')}")
    assert "valueFrom" in env.stdout, env.stdout


@pytest.mark.usefixtures("operator")
def test_what_the_pod_api_accepts_the_template_accepts(
    cluster: Cluster, admin: KubeClient, namespace: str
) -> None:
    """Quantities written as numbers (cpu: 0.5), an env name given twice, nulls and
    empty lists where the Go types allow them: accepted, and on the created pod."""
    job = pytorch_job("lenient", [("worker", 1, "Never")])
    container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": 0.5, "memory": "1Gi"}, "requests": {"cpu": 0.25}}
    container["env"] = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
    container["args"] = None
    container["volumeMounts"] = []
    container["livenessProbe"] = {"tcpSocket": {"port": 8080}, "periodSeconds": 30}
    assert kubectl_apply(cluster, namespace, job) == ""
    jobs = Jobs(admin, namespace)
    pods = jobs.wait_pods("lenient", ["lenient-worker-0"])
    pod = pods["lenient-worker-0"]["spec"]["containers"][0]
    assert pod["resources"] == {
        "limits": {"cpu": "500m", "memory": "1Gi"},
        "requests": {"cpu": "250m", "memory": "1Gi"},  # the Pod API's default from limits
    }
    assert [e["value"] for e in pod["env"] if e["name"] == "A"] == ["1", "2"]
    assert pod["livenessProbe"]["tcpSocket"] == {"port": 8080}


def test_the_kept_pod_schema_is_what_the_pinned_api_server_serves(cluster: Cluster) -> None:
    """hack/third_party/openapi/core-v1.json, which the CRDs are generated from, is
    not stale."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hack.generate.openapi",
            "check",
            "--kubeconfig",
            str(cluster.kubeconfig),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    kept = json.loads(Path(ROOT / "hack" / "third_party" / "openapi" / "core-v1.json").read_text())
    version = cluster.kubectl("version", "-o", "json").stdout
    assert json.loads(version)["serverVersion"]["gitVersion"] == kept["kubernetesVersion"]


@pytest.mark.usefixtures("operator")
def test_template_metadata_name_namespace_finalizers_are_accepted_and_warned_of(
    cluster: Cluster, admin: KubeClient, namespace: str
) -> None:
    """As Kubeflow's and Kueue's CRDs take them (controller-gen's embedded
    ObjectMeta): accepted under kubectl's strict field validation, not acted on
    (the pods keep the operator's names, in the job's namespace, with no
    finalizer), and said so in one Warning Event naming each field."""
    job = pytorch_job("meta", [("worker", 1, "Never")])
    template = job["spec"]["replicaSpecs"][0]["template"]
    template["metadata"] = {
        "name": "my-pod",
        "namespace": "kube-system",
        "finalizers": ["example.com/keep"],
        "labels": {"team": "a"},
        "annotations": {"note": "kept"},
    }
    assert kubectl_apply(cluster, namespace, job) == ""
    jobs = Jobs(admin, namespace)
    pod = jobs.wait_pods("meta", ["meta-worker-0"])["meta-worker-0"]
    assert pod["metadata"]["namespace"] == namespace
    assert "finalizers" not in pod["metadata"]
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["metadata"]["annotations"]["note"] == "kept"
    event = jobs.wait_event("meta", "FieldNotActedOn")
    assert event[0] == "Warning"
    named = "spec.replicaSpecs[0].template.metadata"
    assert event[2].startswith(
        f"{named}.name, {named}.namespace, {named}.finalizers: stored as written"
    ), event
    assert [e for e in jobs.events("meta") if e[1] == "FieldNotActedOn"] == [event]
    pods, _ = admin.list_all(PODS, None)
    assert [p["metadata"]["name"] for p in pods if p["metadata"]["name"] == "my-pod"] == []
