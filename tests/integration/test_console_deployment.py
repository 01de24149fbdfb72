"""The in-cluster console exactly as shipped: deploy/console/console.yaml
applied to the cluster, and its Deployment's pod run from the image's root
filesystem (hack/release/rootfs) as kubelet and runc would start it
(tests/integration/incluster.py): the container's own command, args, env,
securityContext (uid 65532, read-only root, no capabilities), probes and
volumes (the namespace's ``kube-root-ca.crt`` ConfigMap), no ServiceAccount
token (``automountServiceAccountToken: false``), and the ``kubernetes``
Service's address reaching the API server.

People reach it through its Service as ``kubectl port-forward svc/t9k-console``
does (docs/console.md): the Service's port resolved to the pod's container
port by its ``targetPort``, a port of this machine's 127.0.0.1 forwarded to
the pod's address inside its network namespace. (The API server's service
proxy is no person's way in: it needs rights on ``services/proxy`` and puts
the console under a path prefix its absolute links and redirects ignore.)
The pod serves plain http; TLS is an Ingress's (docs/console.md), and the
console marks its cookies Secure for that, which a browser honours at
localhost too.

Two real ServiceAccounts sign in: alice (a Role in namespace a) lists a's
job only, and both reading and pausing b's job are refused with the API
server's own reason. The pod's output holds neither token. That the
console's ServiceAccount has no rights on jobs, pods, logs or Secrets is
test_console_install.py's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx2
import pytest
import yaml

from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS, SERVICES
from tests.integration.cluster import ROOT, Cluster, wait_for
from tests.integration.console_people import (
    JOB,
    SESSION,
    as_,
    cookie,
    pause,
    refused_their_job,
    sign_in,
    two_teams,
)
from tests.integration.incluster import DeploymentPod
from tests.integration.incluster_network import PortForward
from tests.integration.incluster_volumes import SA_DIR

pytestmark = pytest.mark.usefixtures("crds_installed")

SHIPPED = ROOT / "deploy" / "console" / "console.yaml"
OPERATOR = ROOT / "manifests" / "manager" / "deployment.yaml"
NAMESPACE, NAME = "t9k-system", "t9k-console"


def _shipped() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(SHIPPED.read_text()) if doc}


@pytest.fixture(scope="module")
def console_pod(
    cluster: Cluster,
    admin: KubeClient,
    operator_image: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DeploymentPod]:
    """The shipped objects applied, and the Deployment's one pod running
    from the operator's image (the Deployment's image is the operator's), ready."""
    deployment = _shipped()["Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    operator = yaml.safe_load(OPERATOR.read_text())
    assert container["image"] == operator["spec"]["template"]["spec"]["containers"][0]["image"]
    cluster.kubectl("create", "namespace", NAMESPACE, check=False)
    cluster.kubectl("apply", "--server-side", "-f", str(SHIPPED))
    wait_for(lambda: admin.get(CONFIGMAPS, "kube-root-ca.crt", NAMESPACE), 30, "kube-root-ca.crt")
    server = urlparse(cluster.server)
    assert server.hostname and server.port
    pod = DeploymentPod(
        deployment,
        operator_image,
        tmp_path_factory.mktemp("console"),
        token=None,
        ca=cluster.ca_file.read_bytes(),
        api_server=(server.hostname, server.port),
        client=admin,
    )
    try:
        pod.wait_ready(60)
        yield pod
    finally:
        pod.stop()


@pytest.fixture
def via_service(admin: KubeClient, console_pod: DeploymentPod) -> Iterator[str]:
    """The console's base URL through its Service, as after ``kubectl
    port-forward -n t9k-system svc/t9k-console :80``: the Service (as the
    API server has it) selects the pod and its port reaches the container's
    port its ``targetPort`` names."""
    service = admin.get(SERVICES, NAME, NAMESPACE)
    labels = _shipped()["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == 80
    forward = PortForward(
        console_pod.net.name, console_pod.net.ip, console_pod.port(port["targetPort"])
    )
    try:
        yield f"http://127.0.0.1:{forward.port}"
    finally:
        forward.close()


@pytest.fixture
def teams(cluster: Cluster, admin: KubeClient) -> Iterator[dict[str, tuple[str, str]]]:
    with two_teams(cluster, admin, "t-ccd") as made:
        yield made


def test_the_pod_runs_as_shipped(console_pod: DeploymentPod) -> None:
    """Both probes answer, and the container has no ServiceAccount token."""
    for probe in ("livenessProbe", "readinessProbe"):
        get = console_pod.container[probe]["httpGet"]
        assert console_pod.get(get["path"], get["port"]) == (200, "ok"), probe
    root = Path(f"/proc/{console_pod.container_pid()}/root")
    assert (root / "etc" / "t9k-console" / "kube-ca" / "ca.crt").is_file()
    assert not (root / SA_DIR.lstrip("/")).exists()


def _assets(client: httpx2.Client, session: str, page: str) -> list[str]:
    """The scripts and stylesheets ``page`` links, each fetched: those not found."""
    html = as_(client, session, page).text
    links = re.findall(r'<script src="(/[^"]+)"', html)
    links += re.findall(r'<link rel="stylesheet" href="(/[^"]+)"', html)
    assert links, html[:2000]
    return [link for link in links if as_(client, session, link).status_code != 200]


def _version(cluster: Cluster, namespace: str) -> str:
    """bob's job's resourceVersion, as the cluster's admin reads it."""
    args = ("get", "pytorchtrainingjobs", "bob-job", "-n", namespace)
    return cluster.kubectl(*args, "-o", "jsonpath={.metadata.resourceVersion}").stdout


@pytest.mark.timeout(240)
def test_people_sign_in_through_the_service_and_act_with_their_own_tokens(
    cluster: Cluster,
    console_pod: DeploymentPod,
    via_service: str,
    teams: dict[str, tuple[str, str]],
) -> None:
    (a, alice), (b, bob) = teams["alice"], teams["bob"]
    before = _version(cluster, b)
    with httpx2.Client(base_url=via_service, follow_redirects=False, timeout=30) as client:
        assert client.get("/").headers["location"] == "/signin"
        signed_in = sign_in(client, alice)
        assert signed_in.status_code == 303, signed_in.text
        session = cookie(signed_in, SESSION)  # HttpOnly, Secure, SameSite=Strict
        rows = wait_for(lambda: as_(client, session, "/api/jobs").json()["rows"], 30, "rows")
        assert [r["key"] for r in rows] == [f"{a}/{JOB}/alice-job"]
        assert not _assets(client, session, "/"), "the console's pages link missing files"

        reason = refused_their_job(
            client, session, f"system:serviceaccount:{a}:alice", b, "bob-job"
        )
        paused = pause(client, session, b, "bob-job")
        # The console asks the API server for a job its board lacks, with her
        # token, before acting on it: the refusal is the API server's.
        assert paused.status_code == 403, paused.text
        assert paused.json()["error"] == reason
        assert _version(cluster, b) == before, "bob's job changed"

        bobs = cookie(sign_in(client, bob), SESSION)
        rows = wait_for(lambda: as_(client, bobs, "/api/jobs").json()["rows"], 30, "bob's rows")
        assert [r["key"] for r in rows] == [f"{b}/{JOB}/bob-job"]
    log = console_pod.log_path.read_text(errors="replace")
    assert "console sign-in" in log and f"system:serviceaccount:{a}:alice" in log, log
    assert alice not in log and bob not in log, "a token in the console pod's log"
