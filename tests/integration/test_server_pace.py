"""The operator's pace against the real kube-apiserver: its answers carry API
Priority and Fairness headers, so the operator's reconcile client runs with no
client-side limit; and on a kube-apiserver with a few seats only, the requests
it refuses (429) are sent again until every job runs."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3

from t9k_operator.kube import ClientOptions, KubeClient
from t9k_operator.kube.pace import APF_HEADERS
from t9k_operator.resources import CONFIGMAPS
from tests.integration.cluster import (
    ROOT,
    Cluster,
    admin,
    create_namespace,
    env_flag,
    request_token,
    session_cluster_name,
    wait_for,
)
from tests.integration.conftest import OPERATOR_NAMESPACE, OPERATOR_SA
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.operator_process import OperatorProcess

FEW_SEATS = ("--max-requests-inflight=5", "--max-mutating-requests-inflight=2")
"""kube-apiserver's concurrency, shared by all its priority levels: 7 seats."""

ONE_SEAT = f"""
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: t9k-test-one-seat
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Reject
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: t9k-test-operator
spec:
  priorityLevelConfiguration:
    name: t9k-test-one-seat
  matchingPrecedence: 500
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount:
        namespace: {OPERATOR_NAMESPACE}
        name: {OPERATOR_SA}
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      namespaces: ["*"]
      clusterScope: true
    nonResourceRules:
    - verbs: ["*"]
      nonResourceURLs: ["*"]
"""
"""The operator's requests in a priority level of one seat of those 7 that
rejects at once (no queue) what finds it taken: 429 with Retry-After."""


def test_the_api_server_answers_with_priority_and_fairness_headers(
    admin: KubeClient, namespace: str
) -> None:
    conn = admin.connection
    pool = urllib3.PoolManager(
        cert_reqs=ssl.CERT_REQUIRED,
        ca_certs=conn.ca_file,
        cert_file=conn.cert_file,
        key_file=conn.key_file,
    )
    auth = conn.authorization()
    response = pool.request(
        "GET",
        f"{conn.host}/api/v1/namespaces/{namespace}/configmaps",
        headers={"Authorization": auth} if auth else {},
    )
    assert response.status == 200
    assert all(response.headers.get(h) for h in APF_HEADERS), dict(response.headers)


def test_a_client_that_may_lift_its_limit_does_so(admin: KubeClient, namespace: str) -> None:
    client = KubeClient(
        admin.connection,
        ClientOptions(qps=1, burst=1, lift_limit_under_apf=True, user_agent="t9k-test/lift"),
    )
    assert client.pace.limiter is not None
    client.list(CONFIGMAPS, namespace)
    assert client.pace.limiter is None
    client.close()


def test_the_operator_runs_unlimited_but_its_lease_and_events_do_not(
    operator: OperatorProcess,
) -> None:
    def limit(client: str) -> float | None:
        return operator.metric("t9k_client_rate_limit_qps", {"client": client})

    wait_for(lambda: limit("t9k-operator") == 0, 10, "the reconcile client's limit lifted")
    assert limit("t9k-operator/leader-election") == 5
    assert limit("t9k-operator/events") == 20


@pytest.fixture(scope="module")
def few_seats() -> Iterator[Cluster]:
    """A cluster of its own whose kube-apiserver has :data:`FEW_SEATS`."""
    try:
        handle = Cluster.start(f"{session_cluster_name()}-seats", FEW_SEATS)
    except RuntimeError as exc:
        pytest.fail(f"the few-seats cluster could not be started: {exc}", pytrace=False)
    yield handle
    if not env_flag("T9K_KEEP_CLUSTER"):
        handle.stop()


def test_on_an_api_server_with_few_seats_every_job_starts(
    few_seats: Cluster, tmp_path: Path
) -> None:
    cluster = few_seats
    cluster.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "rbac"))
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "manifests" / "crds")
    )
    cluster.wait_established("crd", "-l", "app.kubernetes.io/part-of=t9k-operator")
    cluster.kubectl("apply", "--server-side", "-f", "-", input_=ONE_SEAT)
    client = admin(cluster)
    token = request_token(client, OPERATOR_NAMESPACE, OPERATOR_SA)
    kubeconfig = cluster.token_kubeconfig(tmp_path / "kubeconfig", token)
    jobs = Jobs(client, create_namespace(client, "t-seats"))
    operator = OperatorProcess(kubeconfig, tmp_path / "operator.log")
    try:
        operator.wait_ready(60)
        names = [f"s{i}" for i in range(20)]
        for name in names:
            body = pytorch_job(
                name,
                [("master", 1, "Never"), ("worker", 3, "Never")],
                manual=False,
                annotations={"kwok.t9k.dev/run-duration": "600s"},
            )
            jobs.create(body)
        for name in names:
            jobs.wait_phase(name, "Running", 180)
        metrics = operator.get("/metrics", operator.metrics_port)[1].splitlines()
        refused = sum(
            float(line.rpartition(" ")[2])
            for line in metrics
            if line.startswith("rest_client_requests_total{") and 'code="429"' in line
        )
        retried = operator.metric(
            "t9k_client_retries_total", {"client": "t9k-operator", "reason": "TooManyRequests"}
        )
        assert operator.metric("t9k_client_rate_limit_qps", {"client": "t9k-operator"}) == 0
        log = operator.log_path.read_text(errors="replace")
        errors = [line for line in log.splitlines() if '"level": "error"' in line]
        assert not errors, "\n".join(errors[:20])
        assert "Traceback" not in log
        print(f"429 answers: {refused:g}, retried: {retried}")  # shown with -rP
        assert refused > 0 and retried, (refused, retried)
    finally:
        operator.stop()
