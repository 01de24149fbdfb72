"""The three ways to install (Helm chart, kustomize overlays, deploy/install.yaml),
rendered by the real Helm and kustomize and applied server-side to the local
cluster: the same objects from each, RBAC the API server grants the operator,
a single-namespace install that runs a job under its Role, and uninstalls
that keep the CRDs (so every job and its pods).

The tests that install for real (``helm install``/``upgrade``/``uninstall``,
install.yaml, ``make deploy``) own the cluster-wide names (t9k-system, the
ClusterRole, the CRDs): they run in a second, fresh cluster of their own,
started for this module, so that the session's cluster is never uninstalled
from under the other tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator.kube import KubeClient
from t9k_operator.resources import NAMESPACES, PODS
from tests.integration.cluster import (
    ROOT,
    Cluster,
    MissingBinaries,
    admin,
    create_namespace,
    delete_quietly,
    env_flag,
    request_token,
    session_cluster_name,
    wait_for,
)
from tests.integration.install import (
    CHART,
    DEPLOY,
    Key,
    Tools,
    may,
    objects,
    rule_grants,
    without_helm,
)
from tests.integration.jobs import PYTORCH, Jobs, pytorch_job
from tests.integration.operator_process import OperatorProcess

# Run on one pytest-xdist worker: the second cluster (``fresh``) and the
# tools are started and obtained once.
pytestmark = pytest.mark.xdist_group("install")

RULES = ROOT / "manifests" / "monitoring" / "rules.yaml"
DASHBOARD = ROOT / "manifests" / "monitoring" / "dashboard.json"
MONITORING = DEPLOY / "monitoring"
FIELD_MANAGER = "t9k-install-test"
SA_USER = "system:serviceaccount:{}:t9k-operator"
CRDS = ROOT / "manifests" / "crds"


@pytest.fixture(scope="session")
def tools() -> Tools:
    try:
        return Tools.obtain()
    except MissingBinaries as exc:
        pytest.fail(
            f"Helm and kustomize binaries not built (run `make binaries`): {exc}", pytrace=False
        )


def apply(cluster: Cluster, text: str, *extra: str) -> None:
    cluster.kubectl(
        "apply", "--server-side", f"--field-manager={FIELD_MANAGER}", *extra, "-f", "-", input_=text
    )


def monitoring_crds(cluster: Cluster, tools: Tools) -> None:
    """ServiceMonitor and PrometheusRule served (prometheus-operator's CRDs)."""
    cluster.kubectl("apply", "--server-side", "-f", str(tools.monitoring_crds))
    cluster.wait_established("-f", str(tools.monitoring_crds))


def get(cluster: Cluster, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    ns = ["-n", namespace] if namespace else []
    result: dict[str, Any] = json.loads(
        cluster.kubectl("get", kind, name, *ns, "-o", "json").stdout
    )
    return result


def exists(cluster: Cluster, kind: str, name: str, namespace: str | None = None) -> bool:
    ns = ["-n", namespace] if namespace else []
    proc = cluster.kubectl("get", kind, name, *ns, "-o", "name", check=False)
    if proc.returncode == 0:
        return True
    assert "NotFound" in proc.stderr, proc.stderr
    return False


def rules_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text())["groups"]
    return groups


# ------------------------------------------------------------------ one source


def test_helm_defaults_kustomize_and_install_yaml_give_the_same_objects(tools: Tools) -> None:
    kustomized = objects(tools.kustomize_build(DEPLOY / "cluster-wide"))
    helm = {k: without_helm(o) for k, o in objects(tools.helm_template()).items()}
    bundle = objects((DEPLOY / "install.yaml").read_text())
    assert bundle == kustomized
    # Helm does not create its release's namespace (`--create-namespace` does).
    namespace: Key = ("Namespace", "", "t9k-system")
    assert namespace in kustomized and namespace not in helm
    del kustomized[namespace]
    assert sorted(helm) == sorted(kustomized)
    for key, obj in kustomized.items():
        assert helm[key] == obj, f"{key} differs between the chart and kustomize"
    kinds = {k[0] for k in helm}
    assert {"CustomResourceDefinition", "ClusterRole", "Deployment", "PriorityClass"} <= kinds
    # The chart's toggles off by default: nothing for Prometheus Operator.
    assert not kinds & {"ServiceMonitor", "PrometheusRule", "ConfigMap"}


def test_the_charts_monitoring_is_the_kustomize_component(tools: Tools) -> None:
    kustomized = objects(tools.kustomize_build(DEPLOY / "cluster-wide", components=(MONITORING,)))
    helm = objects(
        tools.helm_template("--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true")
    )
    for kind in ("ServiceMonitor", "PrometheusRule"):
        key = (kind, "t9k-system", "t9k-operator")
        assert without_helm(helm[key]) == kustomized[key]
    rule = helm[("PrometheusRule", "t9k-system", "t9k-operator")]
    assert rule["spec"]["groups"] == rules_groups()
    # The ServiceMonitor finds the metrics Service and its port.
    monitor = helm[("ServiceMonitor", "t9k-system", "t9k-operator")]["spec"]
    service = helm[("Service", "t9k-system", "t9k-operator-metrics")]
    selector = monitor["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}


def test_the_charts_values_reach_the_deployment(tools: Tools) -> None:
    rendered = objects(
        tools.helm_template(
            "--set",
            "image.repository=registry.example:5000/t9k,image.tag=dev,replicas=1,"
            "leaderElection.enabled=false,kubeAPI.qps=80,kubeAPI.burst=160,logLevel=debug,"
            "resources.limits.memory=1Gi,watchNamespace=team-a,extraArgs[0]=--kueue",
            namespace="ops",
        )
    )
    dep = rendered[("Deployment", "ops", "t9k-operator")]["spec"]
    container = dep["template"]["spec"]["containers"][0]
    assert dep["replicas"] == 1
    assert container["image"] == "registry.example:5000/t9k:dev"
    assert container["resources"]["limits"]["memory"] == "1Gi"
    args = container["args"]
    assert "--leader-elect" not in args
    for arg in ("--kube-api-qps=80", "--kube-api-burst=160", "--log-level=debug"):
        assert arg in args
    assert args[-2:] == ["--namespace=team-a", "--kueue"]
    # One namespace watched: a Role there, no ClusterRole, no leader election Role.
    assert ("Role", "team-a", "t9k-operator") in rendered
    assert ("RoleBinding", "team-a", "t9k-operator") in rendered
    assert not {k for k in rendered if k[0] in ("ClusterRole", "ClusterRoleBinding")}
    assert ("Role", "ops", "t9k-operator-leader-election") not in rendered
    # Settings that cannot work are refused, with why.
    for values, why in (
        ("leaderElection.enabled=false", "needs leaderElection.enabled"),  # both would reconcile
        ("serviceMonitor.enabled=true,metrics.service.enabled=false", "needs metrics.service"),
    ):
        proc = subprocess.run(
            [str(tools.helm), "template", "t9k", str(CHART), "--set", values],
            capture_output=True,
            text=True,
        )
        assert proc.returncode != 0 and why in proc.stderr, (values, proc.stderr)


def test_the_grafana_dashboard_toggle(tools: Tools) -> None:
    args = ("t9k", str(CHART), "--set", "grafanaDashboard.enabled=true")
    proc = subprocess.run([str(tools.helm), "template", *args], capture_output=True, text=True)
    if DASHBOARD.exists():
        assert proc.returncode == 0, proc.stderr
        cm = objects(proc.stdout)[("ConfigMap", "default", "t9k-operator-dashboard")]
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert json.loads(cm["data"]["t9k-operator.json"]) == json.loads(DASHBOARD.read_text())
    else:
        # Generated without the dashboard: asking for it fails and says why.
        assert proc.returncode != 0
        assert "manifests/monitoring/dashboard.json" in proc.stderr


# ------------------------------------------------ applied to the session's cluster


def test_a_second_installer_applies_the_priority_classes_without_conflict(
    cluster: Cluster,
) -> None:
    """The PriorityClasses applied server-side by one field manager, then by
    another (Helm or kustomize after an earlier kubectl apply, or an install
    beside the session's own): the same values must not conflict. A manifest
    with `globalDefault: false` did, because the server does not store a
    false globalDefault and so sees the second applier change it."""
    source = str(ROOT / "manifests" / "scheduling")
    for manager in ("t9k-first-installer", "t9k-second-installer"):
        cluster.kubectl("apply", "--server-side", f"--field-manager={manager}", "-f", source)
    shown = cluster.kubectl(
        "get", "priorityclass", "t9k-priority-50", "-o", "json", "--show-managed-fields"
    ).stdout
    managers = {m["manager"] for m in json.loads(shown)["metadata"]["managedFields"]}
    assert {"t9k-first-installer", "t9k-second-installer"} <= managers


def test_cluster_wide_kustomize_install_applies_and_grants_the_operator_its_rules(
    cluster: Cluster, admin: KubeClient, tools: Tools, namespace: str
) -> None:
    """Applied server-side beside the session's own RBAC and CRDs (the same
    objects from the same files: no conflict), then the API server asked."""
    monitoring_crds(cluster, tools)
    text = tools.kustomize_build(DEPLOY / "cluster-wide", components=(MONITORING,))
    rendered = objects(text)
    try:
        # Inside the try: an apply that fails part-way has still applied some
        # objects, and a Deployment left behind under this field manager makes
        # later applies of manifests/manager conflict.
        apply(cluster, text)
        user = SA_USER.format("t9k-system")
        role = get(cluster, "clusterrole", "t9k-operator")
        assert role["rules"] == rendered[("ClusterRole", "", "t9k-operator")]["rules"]
        for verb, group, resource in rule_grants(role["rules"]):
            assert may(admin, user, verb, group, resource, namespace), (verb, group, resource)
            assert may(admin, user, verb, group, resource), f"{verb} {resource} cluster-wide"
        assert may(admin, user, "create", "coordination.k8s.io", "leases", "t9k-system")
        for verb, group, resource in (
            ("delete", "", "secrets"),
            ("patch", "", "nodes"),
            ("patch", "batch.tensorstack.dev", "pytorchtrainingjobs"),
            ("create", "coordination.k8s.io", "leases"),  # outside its namespace
        ):
            assert not may(admin, user, verb, group, resource, namespace), (verb, resource)
        rule = get(cluster, "prometheusrule", "t9k-operator", "t9k-system")
        assert rule["spec"]["groups"] == rules_groups()
        assert get(cluster, "servicemonitor", "t9k-operator", "t9k-system")["spec"]["endpoints"]
        dep = get(cluster, "deployment", "t9k-operator", "t9k-system")
        assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "t9k-operator"
    finally:
        for kind, name in (
            ("deployment", "t9k-operator"),
            ("service", "t9k-operator-metrics"),
            ("servicemonitor", "t9k-operator"),
            ("prometheusrule", "t9k-operator"),
        ):
            cluster.kubectl("delete", kind, name, "-n", "t9k-system", "--ignore-not-found")


def test_chart_watching_one_namespace_grants_that_namespace_only(
    cluster: Cluster, admin: KubeClient, tools: Tools, namespace: str
) -> None:
    """The chart in one namespace (the release's), watching another: its
    ServiceAccount may run jobs there and nowhere else."""
    watched = create_namespace(admin, "t-watched")
    try:
        text = tools.helm_template(
            "--set",
            f"watchNamespace={watched},crds.install=false,priorityClasses.install=false",
            namespace=namespace,
        )
        apply(cluster, text)
        user = SA_USER.format(namespace)
        role = get(cluster, "role", "t9k-operator", watched)
        for verb, group, resource in rule_grants(role["rules"]):
            assert may(admin, user, verb, group, resource, watched), (verb, group, resource)
        assert may(admin, user, "update", "coordination.k8s.io", "leases", namespace)
        for ns in (namespace, "default", None):
            assert not may(admin, user, "list", "", "pods", ns), f"pods in {ns or 'all'}"
            assert not may(admin, user, "list", "batch.tensorstack.dev", "pytorchtrainingjobs", ns)
        dep = get(cluster, "deployment", "t9k-operator", namespace)
        assert f"--namespace={watched}" in dep["spec"]["template"]["spec"]["containers"][0]["args"]
    finally:
        delete_quietly(admin, NAMESPACES, watched, None)


@pytest.mark.usefixtures("crds_installed")
def test_namespaced_overlay_runs_a_pytorch_job_under_its_role_alone(
    cluster: Cluster, admin: KubeClient, tools: Tools, namespace: str, tmp_path: Path
) -> None:
    """deploy/namespaced in a namespace of its own, and the operator run as its
    ServiceAccount with the Deployment's flags: the Role there is all it needs
    (no cluster-scoped grant at all), from leader election to Succeeded."""
    text = tools.kustomize_build(DEPLOY / "namespaced", namespace=namespace)
    rendered = objects(text)
    assert not {k for k in rendered if k[0] in ("ClusterRole", "ClusterRoleBinding")}
    assert ("Namespace", "", namespace) not in rendered
    apply(cluster, text)
    user = SA_USER.format(namespace)
    assert not may(admin, user, "list", "", "pods")  # nothing cluster-wide
    assert not may(admin, user, "get", "scheduling.k8s.io", "priorityclasses")
    container = rendered[("Deployment", namespace, "t9k-operator")]["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "--namespace=$(POD_NAMESPACE)" in container["args"]
    token = request_token(admin, namespace, "t9k-operator")
    kubeconfig = cluster.token_kubeconfig(tmp_path / "kubeconfig", token)
    # The Deployment's flags, $(POD_NAMESPACE) expanded as the kubelet would.
    proc = OperatorProcess(
        kubeconfig,
        tmp_path / "operator.log",
        f"--namespace={namespace}",
        "--leader-elect",
        f"--leader-election-namespace={namespace}",
    )
    try:
        proc.wait_ready()
        jobs = Jobs(admin, namespace)
        jobs.create(
            pytorch_job("ns-only", [("master", 1, "Never"), ("worker", 2, "Never")], manual=False)
        )
        jobs.wait_phase("ns-only", "Succeeded", 60)
        log = proc.logs()
        # No request refused on the way (the API server says "... is forbidden: User ...").
        assert "is forbidden" not in log and "Forbidden" not in log, log
        assert "nodes not watched (no grant to list them)" in proc.log_path.read_text()
        # The same check sees a refusal: watching every namespace under this
        # Role is refused, and the log says so.
        wide = OperatorProcess(kubeconfig, tmp_path / "wide.log")
        try:
            wait_for(lambda: "is forbidden" in wide.logs(), 30, "a refusal in the log")
        finally:
            wide.stop()
    finally:
        proc.stop()
        cluster.kubectl("delete", "deployment", "t9k-operator", "-n", namespace, "--wait=false")


# ------------------------------------------------- installs and uninstalls for real


@pytest.fixture(scope="module")
def fresh(tools: Tools) -> Iterator[Cluster]:
    """A second cluster, for installing and uninstalling for real."""
    name = session_cluster_name() + "-fresh"
    try:
        handle = Cluster.start(name)
    except RuntimeError as exc:
        pytest.fail(f"the second local cluster could not be started: {exc}", pytrace=False)
    try:
        monitoring_crds(handle, tools)
        yield handle
    finally:
        if not env_flag("T9K_KEEP_CLUSTER"):
            handle.stop()


def no_operator_namespace(cluster: Cluster) -> None:
    """Wait until t9k-system is gone."""
    wait_for(lambda: not exists(cluster, "namespace", "t9k-system"), 90, "t9k-system deleted")


def clear(cluster: Cluster) -> None:
    """No t9k-system left by an earlier install (each test installs afresh;
    the CRDs and PriorityClasses stay, as after any uninstall)."""
    cluster.kubectl("delete", "namespace", "t9k-system", "--ignore-not-found", "--wait=false")
    no_operator_namespace(cluster)


def crds_established(cluster: Cluster) -> None:
    """The job kinds served (an install that just created the CRDs returns
    before the API server serves them)."""
    cluster.wait_established("crd", "-l", "app.kubernetes.io/part-of=t9k-operator")


def job_with_a_pod(client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    """A job (no operator needed) and a pod it owns, as the operator would
    make it: the pod goes by garbage collection if the job does."""
    job = client.create(PYTORCH, pytorch_job(name, [("master", 1, "Never")]), namespace)
    owner = {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "name": name,
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    pod = {
        "metadata": {"name": f"{name}-master-0", "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    return client.create(PODS, pod, namespace)


def still_there(client: KubeClient, namespace: str, pod: dict[str, Any]) -> None:
    """The job and its pod outlive the uninstall (given the garbage collector
    time to act on a deleted owner)."""
    name = pod["metadata"]["name"]
    job = name.removesuffix("-master-0")
    for _ in range(3):
        time.sleep(1)
        client.get(PYTORCH, job, namespace)
        found = client.get(PODS, name, namespace)
        assert found["metadata"]["uid"] == pod["metadata"]["uid"]
        assert not found["metadata"].get("deletionTimestamp")


def test_helm_install_upgrades_crds_and_uninstall_keeps_them_with_the_jobs(
    fresh: Cluster, tools: Tools, tmp_path: Path
) -> None:
    kubeconfig = str(fresh.kubeconfig)
    helm = [str(tools.helm), "--kubeconfig", kubeconfig, "--namespace", "t9k-system"]
    clear(fresh)
    tools.run(
        *helm,
        "install",
        "t9k",
        str(CHART),
        "--create-namespace",
        "--set",
        "serviceMonitor.enabled=true,prometheusRule.enabled=true",
    )
    crds_established(fresh)
    client = admin(fresh)
    users = create_namespace(client, "t-users")
    pod = job_with_a_pod(client, users, "kept")
    crd = get(fresh, "crd", "pytorchtrainingjobs.batch.tensorstack.dev")
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert exists(fresh, "prometheusrule", "t9k-operator", "t9k-system")
    # A chart whose CRD changed: `helm upgrade` changes it in the cluster.
    chart = tmp_path / "t9k-operator"
    shutil.copytree(CHART, chart)
    crd_file = chart / "files" / "crds" / "batch.tensorstack.dev_pytorchtrainingjobs.yaml"
    doc = yaml.safe_load(crd_file.read_text())
    doc["spec"]["names"]["shortNames"].append("pytjx")
    crd_file.write_text(yaml.safe_dump(doc))
    tools.run(*helm, "upgrade", "t9k", str(chart), "--reuse-values")
    crd = get(fresh, "crd", "pytorchtrainingjobs.batch.tensorstack.dev")
    assert "pytjx" in crd["spec"]["names"]["shortNames"]
    tools.run(*helm, "uninstall", "t9k", "--wait")
    assert not exists(fresh, "deployment", "t9k-operator", "t9k-system")
    assert not exists(fresh, "clusterrole", "t9k-operator")
    for path in CRDS.glob("*.yaml"):  # <group>_<plural>.yaml
        group, plural = path.stem.split("_", 1)
        assert exists(fresh, "crd", f"{plural}.{group}")
    still_there(client, users, pod)


def test_install_yaml_and_its_documented_uninstall_keep_the_jobs(fresh: Cluster) -> None:
    bundle = str(DEPLOY / "install.yaml")
    clear(fresh)
    fresh.kubectl("apply", "--server-side", "--force-conflicts", "-f", bundle)
    dep = get(fresh, "deployment", "t9k-operator", "t9k-system")
    assert dep["spec"]["replicas"] == 2
    crds_established(fresh)
    client = admin(fresh)
    users = create_namespace(client, "t-users")
    pod = job_with_a_pod(client, users, "bundle")
    # docs/install.md: the operator's own objects, by label; never the CRDs.
    out = fresh.kubectl(
        "delete", "-f", bundle, "-l", "app.kubernetes.io/name=t9k-operator", "--wait=false"
    ).stdout
    assert "customresourcedefinition" not in out and "deployment.apps" in out, out
    assert not exists(fresh, "clusterrolebinding", "t9k-operator")
    assert exists(fresh, "crd", "pytorchtrainingjobs.batch.tensorstack.dev")
    assert exists(fresh, "priorityclass", "t9k-priority-0")
    still_there(client, users, pod)


def test_make_deploy_sets_the_image_and_undeploy_keeps_the_crds(fresh: Cluster) -> None:
    clear(fresh)
    env = {
        **os.environ,
        "KUBECONFIG": str(fresh.kubeconfig),
        "T9K_NO_BUILD": "1",
        "MAKEFLAGS": "",
    }
    make = ["make", "-s", "-C", str(ROOT), f"KUBECTL={fresh.bin_dir / 'kubectl'}"]
    image = "registry.example:5000/t9k/operator:test"
    proc = subprocess.run(
        [*make, "deploy", f"IMG={image}"], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    dep = get(fresh, "deployment", "t9k-operator", "t9k-system")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == image
    fields = fresh.kubectl(
        "get",
        "deployment",
        "t9k-operator",
        "-n",
        "t9k-system",
        "--show-managed-fields",
        "-o",
        "json",
    ).stdout
    managers = {f["manager"] for f in json.loads(fields)["metadata"]["managedFields"]}
    assert "t9k-operator-deploy" in managers  # applied server-side, by its own manager
    crds_established(fresh)
    client = admin(fresh)
    users = create_namespace(client, "t-users")
    pod = job_with_a_pod(client, users, "deployed")
    proc = subprocess.run([*make, "undeploy"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not exists(fresh, "clusterrole", "t9k-operator")
    no_operator_namespace(fresh)  # the namespace went, with all in it
    assert exists(fresh, "crd", "pytorchtrainingjobs.batch.tensorstack.dev")
    still_there(client, users, pod)


def test_make_install_and_uninstall_handle_the_crds_alone(fresh: Cluster) -> None:
    """kubebuilder's targets: the CRDs, for an operator run outside the cluster
    (`make run`); uninstall takes every job with them, and nothing else."""
    clear(fresh)
    # The CRDs a Helm release of another test left (it keeps them, with fields its
    # own upgrade changed) would make this install a conflicting second owner.
    fresh.kubectl(
        "delete", "crd", "-l", "app.kubernetes.io/part-of=t9k-operator", "--ignore-not-found"
    )
    env = {**os.environ, "KUBECONFIG": str(fresh.kubeconfig), "MAKEFLAGS": ""}
    make = ["make", "-s", "-C", str(ROOT), f"KUBECTL={fresh.bin_dir / 'kubectl'}"]
    crds = sorted(yaml.safe_load(f.read_text())["metadata"]["name"] for f in CRDS.glob("*.yaml"))
    assert len(crds) == 9, crds  # the eight job kinds and the TensorBoard
    proc = subprocess.run([*make, "install"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    crds_established(fresh)
    assert all(exists(fresh, "crd", name) for name in crds), crds
    assert not exists(fresh, "namespace", "t9k-system")  # the CRDs alone
    try:
        proc = subprocess.run([*make, "uninstall"], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert not any(exists(fresh, "crd", name) for name in crds)
    finally:
        proc = subprocess.run([*make, "install"], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        crds_established(fresh)
